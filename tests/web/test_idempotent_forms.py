"""Forms that must not act twice, an action only a run's owner may take, and the decision
log's Markdown: a double-posted launch form starts one run, a double-posted decision is
stored once, only the owner or staff pin a baseline, and DECISIONS.md renders no HTML."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from runs.models import Decision, Run
from tests.engine.test_judging import _run
from tests.helpers.factories import make_price_table, make_run, make_suite_version, make_user
from tests.helpers.report import XSS_CORPUS, outside_code

HTMX = {"HTTP_HX_REQUEST": "true"}
pytestmark = pytest.mark.django_db(transaction=True)


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _form_token(page: str, action: str) -> str:
    """The one-time token of the form posting to `action` on a page."""
    form = page[page.index(f'action="{action}"') :]
    form = form[: form.index("</form>")]
    match = re.search(r'<input type="hidden" name="form_token" value="([^"]+)"', form)
    assert match, "the form carries no form_token"
    return match.group(1)


# --- 16. double-posted forms --------------------------------------------------------------


@pytest.fixture
def queued(monkeypatch) -> list:
    shards: list = []
    monkeypatch.setattr("runs.engine.tasks.async_task", lambda *args, **kw: shards.append(args))
    return shards


@pytest.fixture
def launch_form():
    make_price_table(active=True)
    version = make_suite_version()
    url = reverse("run_new", args=[version.suite.name, version.sha256])
    return version, url


def _launch_data(token: str, **extra) -> dict:
    return {"pick_0": "on", "order_0": "1", "pick_1": "on", "order_1": "2", "fake": "on",
            "form_token": token} | extra  # fmt: skip


def _suite_page(client: Client, version) -> str:
    return client.get(reverse("suite_detail", args=[version.suite.name])).content.decode()


def test_a_double_posted_launch_form_starts_one_run_and_shows_it_both_times(launch_form, queued):
    version, url = launch_form
    member = _client(make_user())
    token = _form_token(_suite_page(member, version), url)

    first = member.post(url, _launch_data(token))
    second = member.post(url, _launch_data(token), follow=True)

    run = Run.objects.get()
    assert first.status_code == 302 and first["Location"] == f"/runs/{run.id}/"
    assert second.redirect_chain == [(f"/runs/{run.id}/", 302)]
    assert "This form had already launched this run" in second.content.decode()
    assert len(queued) == 2  # the run's two shards, queued once: nothing is paid twice


def test_each_rendering_of_the_launch_form_and_each_change_to_it_launches_anew(launch_form, queued):
    version, url = launch_form
    member = _client(make_user())
    token = _form_token(_suite_page(member, version), url)
    again = _form_token(_suite_page(member, version), url)

    member.post(url, _launch_data(token, label="first"))
    member.post(url, _launch_data(again, label="second"))  # the page loaded again
    member.post(url, _launch_data(token, label="changed"))  # back, changed, launched

    assert token != again
    assert sorted(Run.objects.values_list("label", flat=True)) == ["changed", "first", "second"]


def test_a_launch_token_is_the_members_own(launch_form, queued):
    version, url = launch_form
    member, other = _client(make_user()), _client(make_user())
    token = _form_token(_suite_page(member, version), url)

    member.post(url, _launch_data(token))
    other.post(url, _launch_data(token))

    assert Run.objects.count() == 2


def test_a_forged_launch_token_is_ignored_not_trusted(launch_form, queued):
    version, url = launch_form
    member = _client(make_user())
    token = _form_token(_suite_page(member, version), url)

    member.post(url, _launch_data(token))
    member.post(url, _launch_data(token[:-2] + "xx"))  # the signature no longer matches

    assert Run.objects.count() == 2


@pytest.fixture
def run(tmp_path) -> Run:
    return _run(tmp_path)


def _decisions_url(run: Run) -> str:
    return reverse("decision_new", args=[run.id])


def _run_page(client: Client, run: Run) -> str:
    return client.get(reverse("run_detail", args=[run.id])).content.decode()


def test_a_double_posted_decision_is_stored_once(run):
    member = _client(make_user())
    url = _decisions_url(run)
    data = {"verdict": "adopt", "reasoning": "wins on every task",
            "form_token": _form_token(_run_page(member, run), url)}  # fmt: skip

    first = member.post(url, data)
    second = member.post(url, data)
    third = member.post(url, data, **HTMX)

    decision = Decision.objects.get()
    assert first.status_code == second.status_code == 302
    assert first["Location"] == second["Location"] == f"/runs/{run.id}/#decisions"
    assert third.status_code == 200 and third.content.decode().count("wins on every task") == 1
    assert decision.decided_by.pk == second.wsgi_request.user.pk


def test_the_fresh_decision_form_after_one_decision_records_the_next(run):
    member = _client(make_user())
    url = _decisions_url(run)
    token = _form_token(_run_page(member, run), url)

    fragment = member.post(url, {"verdict": "keep", "reasoning": "n is small",
                                 "form_token": token}, **HTMX).content.decode()  # fmt: skip
    fresh = _form_token(fragment, url)
    member.post(url, {"verdict": "keep", "reasoning": "n is small", "form_token": fresh})
    member.post(url, {"verdict": "adopt", "reasoning": "now it is", "form_token": fresh})
    member.post(url, {"verdict": "adopt", "reasoning": "it really is", "form_token": token})

    assert fresh != token
    # the same words on a fresh form within minutes are the decision already stored (a
    # resent form); other words, on either form, are new decisions
    assert Decision.objects.count() == 3


# --- 18. pinning the regression baseline ---------------------------------------------------


def test_only_the_runs_owner_or_staff_can_pin_it_and_only_they_see_the_button(run):
    owner, other, staff = make_user(), make_user(), make_user(is_staff=True)
    Run.objects.filter(pk=run.pk).update(created_by=owner)
    url = reverse("run_pin", args=[run.id])

    assert f'action="{url}"' not in _run_page(_client(other), run)
    assert _client(other).post(url).status_code == 403
    run.suite.refresh_from_db()
    assert run.suite.baseline_run_id is None

    for user in (owner, staff):
        assert f'action="{url}"' in _run_page(_client(user), run)
    assert _client(owner).post(url).status_code == 302
    run.suite.refresh_from_db()
    assert run.suite.baseline_run_id == run.id
    assert _client(staff).post(url).status_code == 302


def test_a_run_from_the_command_line_is_pinned_from_the_page_by_staff_only(run):
    url = reverse("run_pin", args=[run.id])
    assert run.created_by is None
    assert _client(make_user()).post(url).status_code == 403
    assert _client(make_user(is_staff=True)).post(url).status_code == 302


# --- 19. DECISIONS.md ---------------------------------------------------------------------

# Text a browser can send (a lone surrogate never arrives in a form post, nor fits SQLite).
STORABLE = [text for text in XSS_CORPUS if "\ud800" not in text]


def _opened(markdown: str) -> str:
    """The Markdown with our block quotes opened: what sits inside them."""
    return "\n".join(re.sub(r"^> ?", "", line) for line in markdown.splitlines())


@pytest.mark.parametrize("payload", [*STORABLE, "".join(STORABLE)])
def test_decisions_md_renders_no_html_link_or_image_from_decision_text(run, payload):
    member = make_user(username="member")
    Decision.objects.create(run=run, decided_by=member, verdict="adopt", reasoning=payload)
    Run.objects.filter(pk=run.pk).update(contestants=[payload, "scripted/cand"])  # from a file

    markdown = _client(member).get(reverse("decisions_markdown")).content.decode()

    opened = _opened(markdown)
    assert "<" not in opened and ">" not in opened
    interpreted = outside_code(opened)
    for syntax in ("![", "](", "://", "javascript", "www.", "\x1b", "\u202e", "`"):
        assert syntax not in interpreted, syntax
    headings = [line for line in markdown.splitlines() if line.startswith("#")]
    assert len(headings) == 2 and headings[1].startswith("## ")  # no heading from the text


def test_decisions_md_still_shows_the_reasoning_line_by_line():
    run = make_run()
    Decision.objects.create(run=run, verdict="adopt", reasoning="adopt it\n\n- cheaper ```\n- b")
    markdown = _client(make_user()).get(reverse("decisions_markdown")).content.decode()
    quote = [line for line in markdown.splitlines() if line.startswith(">")]
    assert quote == ["> ````text", "> adopt it", ">", "> - cheaper ```", "> - b", "> ````"]
