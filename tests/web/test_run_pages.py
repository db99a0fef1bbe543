"""The run pages with Django's test client: each renders whole without htmx and as its
fragment with it, POSTs need the CSRF token, members and staff see what they may, and list
pages cost the same number of queries however big the run."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from runs.models import Decision, Pair, Run
from runs.results.progress import progress
from tests.engine.test_judging import _run
from tests.helpers.factories import make_price_table, make_suite_version, make_user

HTMX = {"HTTP_HX_REQUEST": "true"}
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def run(tmp_path) -> Run:
    return _run(tmp_path)


@pytest.fixture
def member():
    client = Client()
    client.force_login(make_user(username="member"))
    return client


def _pages(run: Run) -> list[str]:
    pair = Pair.objects.filter(run=run).first()
    return [
        reverse("run_detail", args=[run.id]),
        reverse("answer_list", args=[run.id]),
        reverse("pair_list", args=[run.id]),
        reverse("pair_detail", args=[run.id, pair.pk]),
        reverse("compare") + f"?a={run.id}&b={run.id}",
        reverse("decision_list"),
        reverse("decisions_markdown"),
        reverse("run_file", args=[run.id, "report.md"]),
    ]


def test_every_run_page_requires_login(run):
    anonymous = Client()
    for url in _pages(run):
        response = anonymous.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/login/"), url


def test_every_run_page_renders_for_a_member(run, member):
    for url in _pages(run):
        assert member.get(url).status_code == 200, url


def test_the_run_page_shows_the_report_calibration_first_and_the_downloads(run, member):
    page = member.get(reverse("run_detail", args=[run.id])).content.decode()

    assert page.index('id="calibration"') < page.index('id="win-rates"')
    assert "UNCALIBRATED" in page  # the scripted suite has no labels
    for name in ("report.json", "report.md", "report.html", "answers.jsonl", "pairs.jsonl"):
        assert reverse("run_file", args=[run.id, name]) in page


def test_report_files_download_as_attachments_and_others_are_404(run, member):
    response = member.get(reverse("run_file", args=[run.id, "report.html"]))
    assert response["Content-Disposition"].startswith("attachment")
    assert b"".join(response.streaming_content).startswith(b"<!DOCTYPE html>")
    assert member.get(reverse("run_file", args=[run.id, "evalsite.sqlite3"])).status_code == 404
    assert member.get(f"/runs/{run.id}/files/..%2F..%2Fsettings.py").status_code == 404


def test_list_pages_are_whole_pages_without_htmx_and_fragments_with_it(run, member):
    for name, fragment_id in (("answer_list", "answer-results"), ("pair_list", "pair-results")):
        url = reverse(name, args=[run.id])
        whole = member.get(url)
        fragment = member.get(url, **HTMX)
        assert whole.content.decode().lstrip().startswith("<!doctype html>")
        text = fragment.content.decode().strip()
        assert text.startswith(f'<section id="{fragment_id}"') and "<html" not in text
        assert "HX-Request" in whole["Vary"]


def test_the_pairs_browser_filters_flips_exclusions_and_candidates(run, member):
    url = reverse("pair_list", args=[run.id])

    flips = member.get(url, {"flips": "1"}, **HTMX).content.decode()
    excluded = member.get(url, {"excluded": "yes"}, **HTMX).content.decode()

    assert "reply/flip" in flips and "reply/both-cand" not in flips
    assert "reply/broken" in excluded and "reply/prose" in excluded
    assert "reply/both-cand" not in excluded


def test_the_answers_browser_filters_by_verdict_and_contestant(run, member):
    url = reverse("answer_list", args=[run.id])

    failed = member.get(url, {"verdict": "parse_fail"}, **HTMX).content.decode()

    assert "reply/broken" in failed and "scripted/cand" in failed
    assert "1 answers" in failed


def test_list_pages_cost_the_same_queries_for_a_small_and_a_big_run(
    tmp_path, member, django_assert_max_num_queries
):
    small, big = _run(tmp_path), _run(tmp_path)
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    # ten times the pairs: copies of the big run's pairs under other repeats, made before
    # its page is first shown (a done run's rows no longer change, and its page counts them
    # once a process)
    pairs = list(Pair.objects.filter(run=big))
    for repeat in range(1, 11):
        for pair in pairs:
            pair.pk, pair.repeat = None, repeat
        Pair.objects.bulk_create(pairs)
    with CaptureQueriesContext(connection) as few:
        member.get(reverse("pair_list", args=[small.id]))
    with django_assert_max_num_queries(len(few.captured_queries)):
        response = member.get(reverse("pair_list", args=[big.id]))
    assert "77 pairs" in response.content.decode()


def test_progress_polls_while_active_and_stops_with_a_refresh_when_done(run, member):
    url = reverse("run_detail", args=[run.id]) + "?part=progress"
    done = member.get(url, **HTMX)
    assert done["HX-Refresh"] == "true" and "hx-trigger" not in done.content.decode()

    Run.objects.filter(pk=run.pk).update(status=Run.Status.JUDGING)
    active = member.get(url, **HTMX)
    text = active.content.decode()
    assert "HX-Refresh" not in active and 'hx-trigger="every 1s"' in text
    assert text.strip().startswith('<section id="run-progress"')
    assert "judge calls" in text and progress(run).phase == "judge calls"


def test_a_member_cannot_cancel_another_members_run_but_its_owner_and_staff_can(run):
    owner, other, staff = make_user(), make_user(), make_user(is_staff=True)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING, created_by=owner)
    url = reverse("run_cancel", args=[run.id])
    clients = {}
    for name, user in (("owner", owner), ("other", other), ("staff", staff)):
        clients[name] = Client()
        clients[name].force_login(user)

    assert clients["other"].post(url).status_code == 403
    assert not Run.objects.get(pk=run.pk).cancel_requested
    assert clients["staff"].post(url).status_code == 302
    assert Run.objects.get(pk=run.pk).cancel_requested
    assert clients["owner"].post(url, **HTMX).status_code == 200


def test_posts_need_the_csrf_token_htmx_ones_included(run):
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user())
    url = reverse("decision_new", args=[run.id])
    data = {"verdict": "keep", "reasoning": "n is small"}

    assert client.post(url, data).status_code == 403
    assert client.post(url, data, **HTMX).status_code == 403
    client.get(reverse("run_detail", args=[run.id]))  # sets the csrftoken cookie
    token = client.cookies["csrftoken"].value
    assert client.post(url, data, HTTP_X_CSRFTOKEN=token, **HTMX).status_code == 200
    assert Decision.objects.filter(run=run).count() == 1


def test_a_decision_is_recorded_listed_and_exported(run, member):
    url = reverse("decision_new", args=[run.id])

    bad = member.post(url, {"verdict": "adopt", "reasoning": ""})
    good = member.post(url, {"verdict": "needs_more_evidence", "reasoning": "label 20 more"})
    listed = member.get(reverse("decision_list")).content.decode()
    exported = member.get(reverse("decisions_markdown"))

    assert bad.status_code == 400 and "Reasoning" in bad.content.decode()
    assert good.status_code == 302
    assert run.id in listed and "needs more evidence" in listed
    assert exported["Content-Disposition"] == 'attachment; filename="DECISIONS.md"'
    text = exported.content.decode()
    assert f"`{run.id}`" in text and "> label 20 more" in text and "Headline eligible: no" in text


def test_staff_only_the_admin(run, member):
    assert member.get("/admin/").status_code == 302
    staff = Client()
    staff.force_login(make_user(is_staff=True, is_superuser=True))
    assert staff.get("/admin/").status_code == 200


def _new_run_form(version, **extra) -> dict:
    # the suite's own models come first in the form: fake/small (0), fake/large (1)
    return {"pick_0": "on", "order_0": "1", "pick_1": "on", "order_1": "2", "fake": "on"} | extra


def test_the_live_estimate_is_a_fragment_with_htmx_and_the_page_without(member):
    make_price_table(active=True)
    version = make_suite_version()
    url = reverse("run_estimate", args=[version.suite.name, version.sha256])

    fragment = member.post(url, _new_run_form(version), **HTMX).content.decode()
    whole = member.post(url, _new_run_form(version)).content.decode()

    assert fragment.strip().startswith('<div id="run-estimate"') and "Estimate: $" in fragment
    assert whole.lstrip().startswith("<!doctype html>") and "Estimate: $" in whole


def test_launching_from_the_form_queues_the_run_and_lands_on_its_page(member, monkeypatch):
    queued = []
    # whichever broker is configured (the ORM, or Redis on the second CI leg)
    monkeypatch.setattr("runs.engine.tasks.async_task", lambda *args, **kw: queued.append(args))
    make_price_table(active=True)
    version = make_suite_version()
    url = reverse("run_new", args=[version.suite.name, version.sha256])

    response = member.post(url, _new_run_form(version, label="from-the-page"))

    run = Run.objects.get(label="from-the-page")
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.id}/"
    assert run.contestants == ["fake/small", "fake/large"] and run.options["fake"] is True
    assert run.status == Run.Status.QUEUED and run.created_by.username == "member"
    assert (
        queued == [("runs.engine.tasks.run_shard", run.id, 2)] * 2
    )  # two shards, after the commit


def test_the_baseline_is_the_lowest_position_and_bad_choices_say_why(member):
    make_price_table(active=True)
    version = make_suite_version()
    url = reverse("run_new", args=[version.suite.name, version.sha256])

    swapped = member.post(url, _new_run_form(version, order_0="5", label="swapped"))
    alone = member.post(url, {"pick_0": "on", "fake": "on", "label": "alone"})
    nobody = member.post(url, {"fake": "on"})
    refused = member.post(url, _new_run_form(version, max_cost="0.0001", label="tiny"))

    assert swapped.status_code == 302
    assert Run.objects.get(label="swapped").contestants == ["fake/large", "fake/small"]
    assert alone.status_code == 302  # one contestant: a run of its checks, no pairs
    assert len(Run.objects.get(label="alone").contestants) == 1
    assert nobody.status_code == 400 and "Pick a contestant" in nobody.content.decode()
    tiny = Run.objects.get(label="tiny")
    assert refused.status_code == 302 and tiny.status == Run.Status.REFUSED
    assert "over the cap" in tiny.detail


def test_the_dashboard_badges_a_suite_by_its_calibration_runs_calibration(run, member):
    page = member.get("/").content.decode()
    assert "UNCALIBRATED: no labels yet" in page and f"(run {run.id})" in page
    assert f"/suites/{run.suite.name}/calibration/" in page
