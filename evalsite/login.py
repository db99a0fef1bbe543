"""Login throttling (SPEC §16): a password cannot be guessed at the speed of a loop.

After ``EVALSITE_LOGIN_MAX_FAILURES`` (5) failed logins for one username, that username is
refused — right password or not — until ``EVALSITE_LOGIN_LOCKOUT_S`` (900 s) have passed
since the last failure. It is counted by username (case-folded), not by address: on a
shared machine every member comes from 127.0.0.1. The counts live in Django's cache (the
default, per web process; `evalsite serve` runs one). The backend covers every login, the
app's and the admin's; the form says why a locked login is refused.
"""

from __future__ import annotations

import hashlib
import math
import time

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.core.exceptions import PermissionDenied, ValidationError


def _key(username: str) -> str:
    digest = hashlib.sha256(username.casefold().encode("utf-8", "replace")).hexdigest()
    return f"evalsite:login-failures:{digest}"


def seconds_locked(username: str) -> int:
    """How long `username` stays refused (0: it may log in)."""
    failures, last = cache.get(_key(username), (0, 0.0))
    if failures < settings.EVALSITE_LOGIN_MAX_FAILURES:
        return 0
    return max(0, math.ceil(last + settings.EVALSITE_LOGIN_LOCKOUT_S - time.time()))


def record_failure(username: str) -> None:
    failures, _ = cache.get(_key(username), (0, 0.0))
    cache.set(_key(username), (failures + 1, time.time()), settings.EVALSITE_LOGIN_LOCKOUT_S)


class ThrottledBackend(ModelBackend):
    """Django's model backend, refusing a locked username before its password is checked."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if username and seconds_locked(username):
            raise PermissionDenied  # authenticate() stops here: no other backend is asked
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if username:
            if user is None:
                record_failure(username)
            else:
                cache.delete(_key(username))
        return user


class ThrottledLoginForm(AuthenticationForm):
    def clean(self):
        username = self.cleaned_data.get("username")
        wait = seconds_locked(username) if username else 0
        if wait:
            raise ValidationError(
                "Too many failed logins for this username: try again in %(minutes)d minutes.",
                code="locked",
                params={"minutes": math.ceil(wait / 60)},
            )
        return super().clean()


class ThrottledLoginView(LoginView):
    form_class = ThrottledLoginForm
