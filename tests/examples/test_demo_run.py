"""The demo's first run: the scripted good and sloppy contestants with the scripted judge,
offline, show answers worth reading, not the fake's word salad with every tag flagged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import TestCase

from evalsite.core.providers import ScriptedReplies
from evalsite.core.suites import load_suite
from runs.setup import DEMO_SUITE, ensure_demo_suite, prepare_database
from tests.helpers.cli import evalsite

ROOT = Path(__file__).resolve().parents[2]
DEMO = "examples/support-desk.yaml"
# The first run README.md and the dashboard suggest.
FIRST_RUN = ["run", DEMO, "--models", "scripted/sloppy,scripted/good", "--judge", "scripted/judge"]


def _cases(suite, *, judged_only: bool = False) -> list[tuple[str, str]]:
    return [
        (task.id, case.id)
        for task in suite.tasks
        if task.judge or not judged_only
        for case in task.cases
    ]


def test_every_demo_case_has_a_good_and_a_sloppy_reply_and_each_judged_one_two_verdicts():
    suite = load_suite(ROOT / DEMO)
    replies = ScriptedReplies.load(ROOT / "examples" / suite.replies_path.name)
    assert replies.missing("scripted/good", _cases(suite)) == []
    assert replies.missing("scripted/sloppy", _cases(suite)) == []
    assert replies.missing_judge("scripted/judge", _cases(suite, judged_only=True)) == []
    verdicts = replies.models["judge"]
    assert all(len(items) == 2 for items in verdicts.values())
    generic = "is correct and complete"  # the reasons name what decided each pair
    assert not any(generic in item for items in verdicts.values() for item in items)


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    data = tmp_path_factory.mktemp("demo-data")
    result = evalsite(data, *FIRST_RUN)
    report = evalsite(data, "report", "latest", "--format", "json")
    assert report.returncode == 0, report.stderr
    return result, json.loads(report.stdout)


def test_the_first_run_finishes_done_offline(first_run):
    result, report = first_run
    assert result.returncode == 0, result.stderr
    assert report["status"] == "done"
    assert report["contestants"] == ["scripted/sloppy", "scripted/good"]


def test_the_good_model_passes_its_schema_checks_and_execution_checks(first_run):
    good = first_run[1]["per_contestant"]["scripted/good"]
    assert good["schema"]["rate"] == good["checks"]["rate"] == good["exec"]["rate"] == 1.0
    assert good["pass_k"]["pass_all_rate"] == 1.0 and good["errors"] == 0


def test_the_sloppy_model_passes_some_cases_and_fails_others(first_run):
    sloppy = first_run[1]["per_contestant"]["scripted/sloppy"]
    assert 0.2 < sloppy["pass_k"]["pass_all_rate"] < 0.5
    assert 0 < sloppy["checks"]["pass"] < sloppy["checks"]["n"]


def test_the_headline_is_refused_and_says_why(first_run):
    result, report = first_run
    assert report["headline_eligible"] is False
    assert report["calibration"]["status"] == "no_labels"
    assert report["calibration"]["reason"] == "no labelled pairs to compare the judge with"
    assert "scripted/good vs scripted/sloppy: win-rate 0.941 (UNCALIBRATED)" in result.stdout


def test_the_sloppy_baseline_is_under_the_floor_on_some_tags_and_the_good_one_on_none(first_run):
    """The demo's tags have 1 to 7 cases each: under the 8 an interval needs, so a tag under
    the floor is said to be (`below`) but flagged on none (issue 27: small samples are said
    to be small; docs/checks.md "Tags")."""
    tags = first_run[1]["per_tag"]
    sloppy = [tag["tag"] for tag in tags if tag["contestants"]["scripted/sloppy"]["below"]]
    good = [tag["tag"] for tag in tags if tag["contestants"]["scripted/good"]["below"]]
    assert 0 < len(sloppy) < len(tags)
    assert {"monitoring", "search"}.isdisjoint(sloppy)
    assert good == []
    assert not any(cell["flagged"] for tag in tags for cell in tag["contestants"].values())
    assert first_run[1]["per_tag_comparisons"] == 0


class DemoRegistrationTests(TestCase):
    def test_the_demo_serve_registers_keeps_the_path_its_replies_file_is_found_by(self):
        prepare_database()
        version = ensure_demo_suite()
        assert Path(version.source_path) == DEMO_SUITE
        replies = Path(version.source_path).parent / version.parsed["replies"]
        suite = load_suite(DEMO_SUITE)
        assert ScriptedReplies.load(replies).missing("scripted/good", _cases(suite)) == []
