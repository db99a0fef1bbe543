"""`run --tag T` and `run --limit N` beside `--only`: which cases they keep, the input errors
they refuse, and that a run they narrow is stored as partial and never becomes the suite's
calibration run (SPEC §19), exactly like an `--only` run."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command

from evalsite.core.plan import SelectionError, plan_cells, selected_cases
from evalsite.core.suites import load_suite, parse_suite
from runs.models import Run
from runs.models.run import StoredOptions
from tests.helpers.cli import evalsite
from tests.helpers.factories import make_judged_run, make_suite_version

ROOT = Path(__file__).resolve().parents[2]
DEMO = str(ROOT / "examples" / "support-desk.yaml")

SUITE = """\
suite: filters
version: 1
models: [fake/a, fake/b]
tasks:
  - id: one
    prompt: "p {{q}}"
    cases:
      - {id: a, vars: {q: 1}, tags: [billing]}
      - {id: b, vars: {q: 2}}
      - {id: c, vars: {q: 3}, tags: [billing, urgent]}
  - id: two
    prompt: "p {{q}}"
    tags: [urgent]
    cases:
      - {id: d, vars: {q: 4}}
      - {id: e, vars: {q: 5}}
"""


@pytest.fixture
def suite():
    return parse_suite(SUITE.encode(), filename="filters.yaml", origin="upload")


def _ids(suite, **filters) -> list[str]:
    return [f"{task.id}/{case.id}" for task, case in selected_cases(suite, **filters)]


# --- which cases: plain core tests -------------------------------------------------------------


def test_a_tag_keeps_the_cases_that_have_it_their_own_or_their_tasks(suite):
    assert _ids(suite, tags=["billing"]) == ["one/a", "one/c"]
    assert _ids(suite, tags=["urgent"]) == ["one/c", "two/d", "two/e"]


def test_several_tags_keep_a_case_with_any_of_them(suite):
    assert _ids(suite, tags=["billing", "urgent"]) == ["one/a", "one/c", "two/d", "two/e"]


def test_limit_keeps_the_first_cases_of_each_task_after_only_and_tags(suite):
    assert _ids(suite, limit=1) == ["one/a", "two/d"]
    assert _ids(suite, tags=["urgent"], limit=1) == ["one/c", "two/d"]
    assert _ids(suite, only=["one/b", "one/c"], limit=1) == ["one/b"]
    assert _ids(suite, limit=50) == ["one/a", "one/b", "one/c", "two/d", "two/e"]


def test_tags_and_only_narrow_together(suite):
    assert _ids(suite, only=["two"], tags=["billing", "urgent"]) == ["two/d", "two/e"]


def test_the_plan_has_the_cells_of_the_selected_cases_only(suite):
    cells = plan_cells(suite, ["fake/a", "fake/b"], repeats=2, tags=["billing"], limit=1)
    assert {(c.task_id, c.case_id) for c in cells} == {("one", "a")}
    assert len(cells) == 2 * 2


def test_a_tag_no_case_has_is_refused_naming_it_and_the_known_tags(suite):
    with pytest.raises(SelectionError) as caught:
        selected_cases(suite, tags=["billing", "biling"])
    assert caught.value.option == "tag"
    assert str(caught.value) == "no case has the tag 'biling' (tags: billing, urgent)"


def test_tags_that_the_only_selection_never_has_are_refused(suite):
    with pytest.raises(SelectionError, match="--only selects has any of the tags 'billing'"):
        selected_cases(suite, only=["two"], tags=["billing"])


def test_a_limit_below_one_is_refused(suite):
    with pytest.raises(SelectionError, match="must be 1 or more") as caught:
        selected_cases(suite, limit=0)
    assert caught.value.option == "limit"


def test_an_unknown_only_selector_is_still_named_as_such(suite):
    with pytest.raises(SelectionError, match="nope") as caught:
        selected_cases(suite, only=["nope"])
    assert caught.value.option == "only"


# --- the command: input errors ----------------------------------------------------------------


def test_run_with_an_unknown_tag_exits_2_naming_the_tag(tmp_path):
    result = evalsite(tmp_path, "run", DEMO, "--fake", "--dry-run", "--tag", "biling")
    assert result.returncode == 2
    assert "error: --tag: no case has the tag 'biling' (tags: " in result.stderr
    assert "billing" in result.stderr and "Traceback" not in result.stderr


def test_run_with_limit_zero_exits_2_before_planning(tmp_path):
    result = evalsite(tmp_path, "run", DEMO, "--fake", "--limit", "0")
    assert result.returncode == 2
    assert result.stderr.strip() == "error: --limit must be 1 or more (got 0)"


def test_a_dry_run_with_tag_and_limit_estimates_only_those_cases(tmp_path):
    whole = evalsite(tmp_path, "run", DEMO, "--fake", "--dry-run")
    narrow = evalsite(
        tmp_path, "run", DEMO, "--fake", "--dry-run", "--tag", "billing", "--limit", "1"
    )
    assert whole.returncode == 0 and narrow.returncode == 0, narrow.stderr
    demo = load_suite(DEMO)
    tasks = {task.id for task, _ in selected_cases(demo, tags=["billing"])}
    cases = sum(len(task.cases) for task in demo.tasks)
    assert 1 < len(tasks) < cases
    assert f"anthropic/claude-haiku-4-5: {len(tasks)} calls" in narrow.stdout
    assert f"anthropic/claude-haiku-4-5: {cases} calls" in whole.stdout


# --- stored as partial: never the calibration run ----------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_limit_1_run_is_stored_partial_and_does_not_become_the_calibration_run():
    from runs.models import PriceTable

    PriceTable.objects.ensure_default()
    whole = _cli_run(DEMO, "--fake")
    narrow = _cli_run(DEMO, "--fake", "--limit", "1")
    tagged = _cli_run(DEMO, "--fake", "--tag", "billing")

    assert narrow.stored_options.limit == 1 and narrow.stored_options.partial
    assert tagged.stored_options.tags == ("billing",) and tagged.stored_options.partial
    assert narrow.answers.count() < whole.answers.count()
    assert "--limit 1" in narrow.report["reproduce"]["command"]
    assert "--tag billing" in tagged.report["reproduce"]["command"]
    # both narrow runs are newer, finished and judged: only their options keep them out
    assert Run.objects.calibration_run(whole.suite) == whole


def _cli_run(*args: str) -> Run:
    with pytest.raises(SystemExit) as exited:
        call_command("run", *args, "--json")
    assert exited.value.code == 0
    return Run.objects.order_by("-created_at").first()


@pytest.mark.django_db
def test_whole_suite_leaves_out_runs_with_tags_or_a_limit_and_keeps_old_ones():
    version = make_suite_version()
    old = make_judged_run(suite_version=version, options={"fake": True})
    plain = make_judged_run(suite_version=version, options=StoredOptions().to_json())
    make_judged_run(suite_version=version, options=StoredOptions(limit=1).to_json())
    make_judged_run(suite_version=version, options=StoredOptions(tags=("x",)).to_json())
    make_judged_run(suite_version=version, options=StoredOptions(only=("greet",)).to_json())

    assert set(Run.objects.whole_suite()) == {old, plain}


def test_stored_options_keep_tags_and_limit_through_json():
    options = StoredOptions(tags=("billing", "a,b"), limit=3)
    again = StoredOptions.from_json(options.to_json())
    assert again == options and again.partial
    assert not StoredOptions.from_json({}).partial
