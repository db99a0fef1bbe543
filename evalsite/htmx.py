"""The request types of views: one that reads ``request.htmx``, one behind the login."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class HtmxHttpRequest(HttpRequest):
    """A request past django-htmx's middleware, which sets ``htmx`` on every request; only
    the type checker reads this class (django-htmx's own advice for typed views)."""

    htmx: HtmxDetails


class AuthenticatedHttpRequest(HttpRequest):
    """A request to a view behind the login (LoginRequiredMiddleware: every view not marked
    ``login_not_required``), whose user is signed in; only the type checker reads this
    class (django-stubs' own advice for views behind ``login_required``)."""

    user: User


class AuthenticatedHtmxRequest(AuthenticatedHttpRequest, HtmxHttpRequest):
    """Both: a view behind the login that reads ``request.htmx``."""
