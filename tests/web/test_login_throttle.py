"""Login throttling (issue 13 item 20): password guessing stops after a few tries."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import Client, override_settings

from tests.helpers.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_counts():
    cache.clear()
    yield
    cache.clear()


def _login(client: Client, username: str, password: str, url: str = "/login/"):
    return client.post(url, {"username": username, "password": password})


def test_five_wrong_passwords_lock_the_username_even_against_the_right_one():
    make_user(username="ann", password="the-right-password-1")
    client = Client()
    for _ in range(5):
        page = _login(client, "ann", "wrong").content.decode()
        assert "didn&#x27;t match" in page or "didn't match" in page
    locked = _login(client, "ANN", "the-right-password-1")  # case does not get around it
    assert locked.status_code == 200 and "Too many failed logins" in locked.content.decode()
    assert "_auth_user_id" not in client.session
    other = make_user(username="bob", password="bobs-password-1")
    assert _login(Client(), other.username, "bobs-password-1").status_code == 302


def test_the_admin_login_is_throttled_too():
    make_user(username="staff", password="staff-password-1", is_staff=True)
    client = Client()
    for _ in range(5):
        _login(client, "staff", "wrong", url="/admin/login/")
    _login(client, "staff", "staff-password-1", url="/admin/login/")
    assert "_auth_user_id" not in client.session


def test_the_lock_ends_after_the_lockout_and_a_success_resets_the_count():
    make_user(username="cy", password="cys-password-1")
    with override_settings(EVALSITE_LOGIN_LOCKOUT_S=0):
        for _ in range(6):
            _login(Client(), "cy", "wrong")
        assert _login(Client(), "cy", "cys-password-1").status_code == 302
    for _ in range(4):
        _login(Client(), "cy", "wrong")
    assert _login(Client(), "cy", "cys-password-1").status_code == 302  # resets the count
    for _ in range(4):
        _login(Client(), "cy", "wrong")
    assert _login(Client(), "cy", "cys-password-1").status_code == 302
