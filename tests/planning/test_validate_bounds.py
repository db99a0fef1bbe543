"""Issue 25: a pasted Jinja suite that would take the web process's memory or CPU is a
problem at its line on the Add suite page, never a 500; and member validations that would
take every web thread are answered "busy" at once rather than queued (database tests)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from runs.models import Suite
from runs.planning import validation
from tests.helpers.factories import make_price_table, make_user

HTMX = {"HTTP_HX_REQUEST": "true"}
HEADER = "suite: heavy\nversion: 1\ntemplating: jinja2\nmodels: [fake/small]\n"


def suite_with(prompt: str) -> str:
    return HEADER + f"tasks:\n  - id: t\n    prompt: '{prompt}'\n    cases: [{{id: c}}]\n"


@pytest.fixture
def member(db):
    make_price_table(active=True)
    client = Client()
    client.force_login(make_user())
    return client


def check(member: Client, text: str, **headers: str):
    return member.post(reverse("suite_new"), {"yaml_text": text, "intent": "check"}, **headers)


@pytest.mark.parametrize(
    ("prompt", "problem"),
    [
        (
            '{% set a = namespace(s="x") %}{% for i in range(28) %}{% set a.s = a.s ~ a.s %}'
            "{% endfor %}{{ a.s|length }}",
            "fails to render tasks[0].prompt: template line 1: the template&#x27;s rendering "
            "exceeds 20,000,000 units of work",
        ),
        (
            '{% for i in range(300) %}{% set s = ("x" * 5000000)|upper %}{% endfor %}',
            "fails to render tasks[0].prompt: template line 1: the template&#x27;s rendering "
            "exceeds 20,000,000 units of work",
        ),
        (
            "{{ " + "(" * 500 + "1" + ")" * 500 + " }}",
            "does not compile: template line 1: the template nests too deeply: more than 20 "
            "brackets and blocks open at once",
        ),
    ],
)
def test_the_issue_s_templates_are_problems_at_their_line_on_the_page(
    member: Client, prompt: str, problem: str
) -> None:
    for headers in ({}, HTMX):
        response = check(member, suite_with(prompt), **headers)
        assert response.status_code == 200
        page = response.content.decode()
        assert problem in page
        assert "Traceback" not in page
    assert not Suite.objects.filter(name="heavy").exists()


def test_a_validation_while_every_slot_is_taken_is_answered_busy_at_once(
    member: Client,
) -> None:
    text = suite_with("Hello {{ name }}").replace("{id: c}", "{id: c, vars: {name: a}}")
    held = [validation.MEMBER_VALIDATIONS.acquire(blocking=False) for _ in range(8)]
    try:
        assert held.count(True) == validation.MAX_MEMBER_VALIDATIONS
        busy = check(member, text, **HTMX)
        assert busy.status_code == 200  # htmx swaps in only a 2xx: the message shows
        assert validation.BUSY in busy.content.decode()
        plain = member.post(reverse("suite_new"), {"yaml_text": text})
        assert plain.status_code == 503
        assert plain["Retry-After"]
        assert validation.BUSY in plain.content.decode()
        assert "Hello {{ name }}" in plain.content.decode()  # the paste is kept
    finally:
        for taken in held:
            if taken:
                validation.MEMBER_VALIDATIONS.release()
    assert not Suite.objects.filter(name="heavy").exists()
    after = check(member, text, **HTMX).content.decode()  # the slots are free again
    assert validation.BUSY not in after
    assert 'class="error' not in after
