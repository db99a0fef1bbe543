"""`evalsite list` (and its other name, `history`): the runs newest first, one line each with
suite, status, contestants, cost and the report's headline or its refusal; --suite,
--status, --limit, --json; judge-lab runs left out; a helpful line on an empty database."""

from __future__ import annotations

import datetime as dt
import io
import json
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.test import TestCase
from django.utils import timezone

from runs.models import Run, SuiteVersion
from runs.results.listing import START_HINT
from tests.helpers.cli import evalsite
from tests.helpers.factories import make_run, make_suite_version, small_suite_text
from tests.helpers.report import make_report


def _list(*args: str, command: str = "list") -> list[str]:
    out = io.StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue().splitlines()


def _at(run: Run, minutes: int) -> Run:
    """`run` created `minutes` after a fixed moment (auto_now_add set it to now)."""
    when = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC) + dt.timedelta(minutes=minutes)
    Run.objects.filter(pk=run.pk).update(created_at=when)
    run.refresh_from_db()
    return run


class ListTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.desk = make_suite_version(small_suite_text("desk"))
        cls.other = make_suite_version(small_suite_text("other"))
        cls.uncalibrated = _at(
            make_run(suite_version=cls.desk, status=Run.Status.DONE,
                     report=make_report("uncalibrated"), spent_answers_usd=Decimal("0.0123"),
                     options={"fake": True}),
            1,
        )  # fmt: skip
        cls.eligible = _at(
            make_run(suite_version=cls.desk, status=Run.Status.DONE,
                     report=make_report("eligible"), spent_judge_usd=Decimal("0.5")),
            2,
        )  # fmt: skip
        cls.failed = _at(
            make_run(suite_version=cls.other, status=Run.Status.FAILED,
                     detail="no key for openai", label="nightly"),
            3,
        )  # fmt: skip
        cls.active = _at(make_run(suite_version=cls.other, status=Run.Status.RUNNING), 4)
        lab = make_suite_version(small_suite_text("lab-set"), origin=SuiteVersion.Origin.LAB)
        cls.lab = _at(make_run(suite_version=lab, status=Run.Status.DONE), 5)

    def test_runs_come_newest_first_under_a_header(self):
        lines = _list()
        assert lines[0].split() == [
            "id",
            "suite",
            "status",
            "age",
            "contestants",
            "cost",
            "headline",
        ]
        ids = [line.split()[0] for line in lines[1:]]
        assert ids == [self.active.id, self.failed.id, self.eligible.id, self.uncalibrated.id]

    def test_judge_lab_runs_are_left_out(self):
        assert not any(self.lab.id in line for line in _list())
        assert self.lab.id not in {row["id"] for row in json.loads("\n".join(_list("--json")))}

    def test_each_line_has_suite_status_contestants_cost_and_headline(self):
        line = next(line for line in _list() if line.startswith(self.eligible.id))
        assert " desk " in line and " done " in line
        assert "openai/gpt-4o-mini, anthropic/claude-haiku-4-5" not in line  # the run's own
        assert "fake/small, fake/large" in line
        assert "$0.5000" in line
        assert "anthropic/claude-haiku-4-5 0.463 [0.325, 0.613]" in line
        assert "openai/gpt-4o-mini@concise 0.575 [0.400, 0.750]" in line

    def test_an_uncalibrated_run_shows_the_refusal_and_why_instead_of_a_rate(self):
        line = next(line for line in _list() if line.startswith(self.uncalibrated.id))
        reason = make_report("uncalibrated")["calibration"]["reason"]
        assert line.endswith(f"UNCALIBRATED: {reason}")
        assert "0.463" not in line
        assert "$0.0123 (simulated)" in line

    def test_a_run_without_a_report_says_what_state_it_is_in(self):
        lines = _list()
        failed = next(line for line in lines if line.startswith(self.failed.id))
        assert failed.startswith(f"{self.failed.id} (nightly)")
        assert failed.endswith("no report: no key for openai")
        active = next(line for line in lines if line.startswith(self.active.id))
        assert " running " in active and active.endswith("no report yet")

    def test_suite_status_and_limit_narrow_the_list(self):
        assert [line.split()[0] for line in _list("--suite", "desk")[1:]] == [
            self.eligible.id,
            self.uncalibrated.id,
        ]
        assert [line.split()[0] for line in _list("--status", "failed")[1:]] == [self.failed.id]
        assert len(_list("--limit", "2")) == 1 + 2

    def test_no_run_matching_the_filters_says_which_filters(self):
        assert _list("--suite", "desk", "--status", "cancelled") == [
            "no run matches --suite desk --status cancelled"
        ]

    def test_json_gives_plain_rows_with_the_same_headline(self):
        rows = json.loads("\n".join(_list("--json", "--suite", "desk")))
        assert [row["id"] for row in rows] == [self.eligible.id, self.uncalibrated.id]
        eligible = rows[0]
        assert eligible["headline_eligible"] is True and eligible["cost_usd"] == "0.500000"
        assert eligible["headline"].startswith("anthropic/claude-haiku-4-5 0.463 [0.325, 0.613]")
        assert rows[1]["headline_eligible"] is False and rows[1]["simulated"] is True
        assert set(eligible) >= {"label", "suite", "status", "detail", "contestants", "partial"}

    def test_history_is_the_same_command(self):
        assert _list("--suite", "desk", command="history") == _list("--suite", "desk")

    def test_an_unknown_suite_exits_2_naming_it(self):
        err = io.StringIO()
        with pytest.raises(SystemExit) as exited:
            call_command("list", "--suite", "nope", stderr=err)
        assert exited.value.code == 2
        assert err.getvalue().strip() == "error: no suite named 'nope'"

    def test_a_limit_below_one_exits_2(self):
        err = io.StringIO()
        with pytest.raises(SystemExit) as exited:
            call_command("list", "--limit", "0", stderr=err)
        assert exited.value.code == 2 and "--limit must be 1 or more" in err.getvalue()


class HostileListTests(TestCase):
    def test_text_from_a_run_cannot_reach_the_terminal_as_escape_codes(self):
        report = make_report("uncalibrated")
        report["calibration"]["reason"] = "bad\x1b[2J\rreason\u202e"
        make_run(status=Run.Status.DONE, report=report, label="x\x1b]0;pwned\x07",
                 contestants=["fake/small\x1b[31m", "fake/large"])  # fmt: skip
        text = "\n".join(_list())
        assert "\x1b" not in text and "\r" not in text and "\u202e" not in text
        assert "\\x1b[2J" in text and "\\u202e" in text


class EmptyListTests(TestCase):
    def test_an_empty_database_says_how_to_start_a_run(self):
        assert _list() == [START_HINT]
        assert "evalsite run examples/support-desk.yaml --fake" in START_HINT

    def test_only_lab_runs_is_still_an_empty_list(self):
        lab = make_suite_version(small_suite_text("lab-set"), origin=SuiteVersion.Origin.LAB)
        make_run(suite_version=lab, created_at=timezone.now())
        assert _list() == [START_HINT]


def test_the_console_script_lists_and_refuses_an_unknown_status(tmp_path):
    empty = evalsite(tmp_path, "list")
    assert empty.returncode == 0 and empty.stdout.strip() == START_HINT
    bad = evalsite(tmp_path, "history", "--status", "finished")
    assert bad.returncode == 2
    assert "invalid choice: 'finished'" in bad.stderr and "aborted_over_budget" in bad.stderr
