"""Runs with names: wherever a run is listed or picked (dashboard, suite page, compare
pickers, the labelling run picker, `evalsite list`) it shows its label or short id, suite,
contestants, headline, cost and age, read in one query per list; a member renames a run's
label on its run page by the CLI's `--label` rule, a bad label an inline message; the
dashboard's "N pairs waiting for your label" is a link to the labelling page."""

from __future__ import annotations

import datetime as dt
import io
import json
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from runs.models import Run
from tests.helpers.factories import make_judged_run, make_run, make_suite_version, make_user
from tests.helpers.report import make_report

HTMX = {"HTTP_HX_REQUEST": "true"}
pytestmark = pytest.mark.django_db
HEADLINE = "anthropic/claude-haiku-4-5 0.463 [0.325, 0.613]"


@pytest.fixture
def member() -> Client:
    client = Client()
    client.force_login(make_user())
    return client


def _named_run(**overrides) -> Run:
    fields = {
        "status": Run.Status.DONE,
        "report": make_report("eligible"),
        "label": "nightly refunds",
        "spent_answers_usd": Decimal("0.25"),
    }
    run = make_run(**(fields | overrides))
    Run.objects.filter(pk=run.pk).update(created_at=timezone.now() - dt.timedelta(hours=3))
    run.refresh_from_db()
    return run


def test_a_run_is_named_by_its_label_else_its_short_id():
    labelled, bare = _named_run(), _named_run(label="", id="20261201T101010Z_bare")

    assert labelled.display_name == "nightly refunds"
    assert bare.display_name == bare.short_id == bare.id[:16]  # up to the start time's Z
    assert Run.objects.resolve(bare.short_id) == bare  # a prefix the CLI takes
    assert labelled.age == "3 h ago" and labelled.cost_text == "$0.2500"
    line = labelled.display_line
    for part in ("nightly refunds", labelled.suite.name, "fake/small vs fake/large", HEADLINE,
                 "$0.2500", "3 h ago"):  # fmt: skip
        assert part in line


def test_a_run_without_a_report_says_what_state_it_is_in():
    assert make_run(status=Run.Status.RUNNING).headline == "no report yet"
    assert make_run(status=Run.Status.FAILED, detail="no key").headline == "no report: no key"


def test_the_dashboard_lists_runs_by_name_with_suite_headline_cost_and_age(member):
    run = _named_run()

    html = member.get(reverse("dashboard")).content.decode()

    assert f'title="{run.id}"><span class="tag">nightly refunds</span>' in html
    for part in (run.suite.name, HEADLINE, "$0.2500", "3 h ago", "<code>fake/small</code>"):
        assert part in html


def test_the_dashboards_runs_cost_the_same_queries_however_many(member):
    _named_run()
    with CaptureQueriesContext(connection) as one:
        member.get(reverse("dashboard"))
    for _ in range(6):
        _named_run()
    with CaptureQueriesContext(connection) as seven:
        member.get(reverse("dashboard"))
    assert len(one) == len(seven)


def test_the_suite_page_lists_its_runs_by_name(member):
    run = _named_run(label="")

    html = member.get(reverse("suite_detail", args=[run.suite.name])).content.decode()

    assert f"<code>{run.short_id}</code>" in html
    assert HEADLINE in html and "$0.2500" in html and "3 h ago" in html


def test_the_compare_pickers_show_each_runs_line(member):
    run = _named_run()

    html = member.get(reverse("compare")).content.decode()

    assert f'<option value="{run.id}">{run.display_line}</option>' in html


def test_the_labelling_run_picker_shows_each_runs_line(member):
    version = make_suite_version()
    first = make_judged_run(suite_version=version, label="first try")
    make_judged_run(suite_version=version)

    html = member.get(reverse("calibration_page", args=[version.suite.name])).content.decode()

    assert ">" + first.display_line in html and "first try · " in html


def test_the_waiting_pairs_are_a_link_to_the_labelling_page(member):
    run = make_judged_run()

    html = member.get(reverse("dashboard")).content.decode()

    assert run.pairs.exists()
    assert f'<a href="{reverse("label_home")}"><strong>2</strong> pairs waiting' in html


def test_a_member_renames_a_run_inline(member):
    run = _named_run(label="")

    response = member.post(reverse("run_rename", args=[run.id]), {"label": "demo first run"},
                           **HTMX)  # fmt: skip

    run.refresh_from_db()
    assert run.label == "demo first run"
    html = response.content.decode()
    assert html.lstrip().startswith('<form id="run-label"') and "Renamed to demo first run" in html
    assert Run.objects.resolve("demo first run") == run  # the CLI finds it by its new name


@pytest.mark.parametrize(
    ("label", "why"),
    [("latest", "already names a run"), ("20261203T1", "looks like a run id"),
     ("x" * 65, "at most 64 characters")],
)  # fmt: skip
def test_a_bad_label_is_a_message_beside_the_field_and_changes_nothing(member, label, why):
    run = _named_run()

    response = member.post(reverse("run_rename", args=[run.id]), {"label": label}, **HTMX)

    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="run-label-error"' in html and why in html and 'aria-invalid="true"' in html
    run.refresh_from_db()
    assert run.label == "nightly refunds"


def test_renaming_without_htmx_goes_back_to_the_run_page_with_the_message(member):
    run = _named_run()

    response = member.post(reverse("run_rename", args=[run.id]), {"label": "latest"}, follow=True)

    assert response.redirect_chain[-1][0] == reverse("run_detail", args=[run.id])
    assert "already names a run" in response.content.decode()


def test_the_run_page_has_the_rename_form():
    run = _named_run()
    client = Client()
    client.force_login(make_user())

    html = client.get(reverse("run_detail", args=[run.id])).content.decode()

    assert 'id="run-label-input"' in html and 'value="nightly refunds"' in html


def _list(*args: str) -> list[str]:
    out = io.StringIO()
    call_command("list", *args, stdout=out)
    return out.getvalue().splitlines()


def test_evalsite_list_shows_each_runs_age_in_text_and_json():
    run = _named_run()

    lines = _list()
    rows = json.loads("\n".join(_list("--json")))

    assert lines[0].split() == ["id", "suite", "status", "age", "contestants", "cost", "headline"]
    line = next(line for line in lines if line.startswith(run.id))
    assert "(nightly refunds)" in line and " 3 h ago " in line and HEADLINE in line
    assert rows[0]["age"] == "3 h ago" and rows[0]["headline"].startswith(HEADLINE)


def test_a_label_set_on_the_page_follows_the_rule_of_the_cli():
    run = _named_run()

    with pytest.raises(ValueError, match="looks like a run id"):
        run.rename("20261203T141439Z_x")
    run.rename("  ")
    assert Run.objects.get(pk=run.pk).label == ""


def test_the_labelling_home_names_each_suites_run(member):
    run = make_judged_run(label="first try")

    html = member.get(reverse("label_home")).content.decode()

    assert f'title="{run.id}"><span class="tag">first try</span>' in html


def test_the_decision_log_names_each_decisions_run(member):
    run = _named_run(label="")
    run.decisions.create(verdict="adopt", reasoning="better on refunds")

    html = member.get(reverse("decision_list")).content.decode()

    assert f'<span class="run-name" title="{run.id}"><code>{run.short_id}</code></span>' in html
