"""Login throttling (SPEC §16): a password cannot be guessed at the speed of a loop.

After ``EVALSITE_LOGIN_MAX_FAILURES`` (5) failed logins for one username, that username is
refused — right password or not — until ``EVALSITE_LOGIN_LOCKOUT_S`` (900 s) have passed
since the last failure. It is counted by username (case-folded), not by address: on a
shared machine every member comes from 127.0.0.1. The counts live in Django's cache (the
default, per web process; `evalsite serve` runs one). The backend covers every login, the
app's and the admin's; the form says why a locked login is refused.

An attempt is counted *before* its password is checked, in one step with the check of the
lock (:func:`claim_attempt`, under a lock of this process), and a success clears the count:
however many guesses arrive at once, no more than the limit are ever checked. (Checked
first and counted after, 30 concurrent guesses had 9 checked before the lock with a limit
of 5.)
"""

from __future__ import annotations

import hashlib
import math
import threading
import time

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.core.exceptions import PermissionDenied, ValidationError

_COUNTING = threading.Lock()


def _key(username: str) -> str:
    digest = hashlib.sha256(username.casefold().encode("utf-8", "replace")).hexdigest()
    return f"evalsite:login-failures:{digest}"


def seconds_locked(username: str) -> int:
    """How long `username` stays refused (0: it may log in)."""
    failures, last = cache.get(_key(username), (0, 0.0))
    if failures < settings.EVALSITE_LOGIN_MAX_FAILURES:
        return 0
    return max(0, math.ceil(last + settings.EVALSITE_LOGIN_LOCKOUT_S - time.time()))


def claim_attempt(username: str) -> int:
    """Count an attempt for `username` as a failure unless it is locked, in one step; the
    seconds it stays locked (0: the attempt was counted and its password may be checked).
    The counts are per process (the cache's default), so a lock of this process suffices."""
    with _COUNTING:
        wait = seconds_locked(username)
        if not wait:
            failures, _ = cache.get(_key(username), (0, 0.0))
            cache.set(
                _key(username), (failures + 1, time.time()), settings.EVALSITE_LOGIN_LOCKOUT_S
            )
    return wait


class ThrottledBackend(ModelBackend):
    """Django's model backend, refusing a locked username before its password is checked."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if username and claim_attempt(username):
            if request is not None:
                request.login_locked = True  # for the form's message
            raise PermissionDenied  # authenticate() stops here: no other backend is asked
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if username and user is not None:
            cache.delete(_key(username))
        return user


class ThrottledLoginForm(AuthenticationForm):
    def clean(self):
        username = self.cleaned_data.get("username")
        self._refuse_if_locked(username)
        try:
            return super().clean()
        except ValidationError:
            if getattr(self.request, "login_locked", False):  # locked by a concurrent attempt
                self._refuse_if_locked(username)
            raise

    def _refuse_if_locked(self, username: str | None) -> None:
        wait = seconds_locked(username) if username else 0
        if wait:
            raise ValidationError(
                "Too many failed logins for this username: try again in %(minutes)d minutes.",
                code="locked",
                params={"minutes": math.ceil(wait / 60)},
            )


class ThrottledLoginView(LoginView):
    form_class = ThrottledLoginForm
