"""The request type of a view that reads ``request.htmx``."""

from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """A request past django-htmx's middleware, which sets ``htmx`` on every request; only
    the type checker reads this class (django-htmx's own advice for typed views)."""

    htmx: HtmxDetails
