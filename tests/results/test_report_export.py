"""`evalsite report RUN --format csv [--pairs]`, `--failures` and `--case ID`: a stored run's
rows as CSV (no cell a spreadsheet would run as a formula) and read in the terminal (no
text from an answer reaching it as an escape code)."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.test import TestCase

from runs.models import Answer, Judgement, Run
from runs.results.exports import ANSWER_COLUMNS, PAIR_COLUMNS, cell
from tests.helpers.factories import make_pair, make_run

HOSTILE = '=HYPERLINK("http://evil.example/","x")\x1b[2J\rnext\u202e'


def _report(*args: str) -> str:
    out = io.StringIO()
    call_command("report", *args, stdout=out)
    return out.getvalue()


def _csv(*args: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(_report(*args, "--format", "csv"))))


def _fails(*args: str) -> tuple[int, str]:
    err = io.StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("report", *args, stderr=err)
    return exited.value.code, err.getvalue().strip()


class ExportTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.subject = make_run(status=Run.Status.DONE, contestants=["fake/small", "fake/large"])
        run = cls.subject
        cls.won = make_pair(run, "greet", "one", sides=("candidate", "candidate"), human="tie")
        cls.flipped = make_pair(run, "greet", "two", sides=("baseline", "candidate"))
        Answer.objects.filter(pk=cls.won.candidate_id).update(
            schema_verdict="pass", checks_passed=True, passed=True, input_tokens=12,
            output_tokens=34, cost_usd=Decimal("0.000123"), latency_ms=456, cached=True,
            checks={"passed": True, "results": []},
        )  # fmt: skip
        Answer.objects.filter(pk=cls.won.baseline_id).update(
            schema_verdict="schema_fail", schema_error="$.name is required", passed=False,
            checks_passed=False, text=HOSTILE,
            checks={"passed": False, "results": [{"kind": "contains", "passed": False,
                                                  "note": "does not contain 'Ada'"}]},
        )  # fmt: skip
        excluded = make_pair(run, "greet", "three", score=None, excluded_reason="error")
        Answer.objects.filter(pk=excluded.candidate_id).update(
            status=Answer.Status.ERROR, text="", error_kind="timeout",
            error_message="no reply in 60 s\x1b[31m", passed=False,
        )  # fmt: skip
        Answer.objects.filter(pk=excluded.baseline_id).update(passed=True)
        Judgement.objects.filter(pair=cls.flipped, order=2).update(
            parse_status=Judgement.Parse.UNPARSEABLE, side="", parse_error="no JSON"
        )

    # --- --format csv: answers ---------------------------------------------------------------

    def test_the_answers_csv_has_the_documented_columns_and_one_row_per_answer(self):
        rows = _csv(self.subject.id)
        assert tuple(rows[0]) == ANSWER_COLUMNS
        assert len(rows) == Answer.objects.filter(run=self.subject).count()

    def test_an_answer_row_carries_its_verdicts_tokens_and_cost(self):
        rows = _csv(self.subject.id)
        row = next(r for r in rows if r["case"] == "one" and r["contestant"] == "fake/large")
        assert row["schema"] == "pass" and row["schema_pass"] == "true"
        assert row["checks_pass"] == "true" and row["passed"] == "true"
        assert (row["input_tokens"], row["output_tokens"]) == ("12", "34")
        assert row["cost_usd"] == "0.000123" and row["latency_ms"] == "456"
        assert row["cached"] == "true" and row["exec"] == "" and row["exec_pass"] == ""
        failed = next(r for r in rows if r["case"] == "one" and r["contestant"] == "fake/small")
        assert failed["schema_pass"] == "false" and failed["checks_pass"] == "false"
        assert failed["checks_note"] == "does not contain 'Ada'"
        error = next(r for r in rows if r["case"] == "three" and r["contestant"] == "fake/large")
        assert error["status"] == "error" and error["error_kind"] == "timeout"

    def test_a_text_cell_a_spreadsheet_would_run_is_quoted(self):
        rows = _csv(self.subject.id)
        text = next(r["text"] for r in rows if r["text"].startswith("'"))
        assert text.startswith("'=HYPERLINK(")
        for value in ("=1+1", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1"):
            assert cell(value) == "'" + value
        assert (
            cell("plain") == "plain"
            and cell(-1) == -1
            and cell(None) == ""
            and cell(True) == "true"
        )

    # --- --pairs -------------------------------------------------------------------------------

    def test_the_pairs_csv_has_both_orders_the_verdict_the_flip_and_the_consensus(self):
        rows = _csv(self.subject.id, "--pairs")
        assert tuple(rows[0]) == PAIR_COLUMNS and len(rows) == 3
        won, excluded, flipped = rows  # in task, case, repeat order: one, three, two
        assert (won["order_1"], won["order_2"], won["verdict"]) == (
            "candidate",
            "candidate",
            "candidate",
        )
        assert won["flip"] == "false" and won["human"] == "tie" and won["score"] == "1.0"
        assert (flipped["order_1"], flipped["order_2"]) == ("baseline", "unparseable")
        assert flipped["flip"] == "true" and flipped["human"] == ""
        assert (
            excluded["excluded"] == "error"
            and excluded["order_1"] == ""
            and excluded["verdict"] == ""
        )
        assert (won["baseline"], won["candidate"]) == ("fake/small", "fake/large")

    def test_pairs_without_csv_is_an_input_error(self):
        assert _fails(self.subject.id, "--pairs") == (2, "error: --pairs goes with --format csv")

    # --- --failures ----------------------------------------------------------------------------

    def test_failures_lists_each_failed_or_errored_answer_with_its_reasons(self):
        lines = _report(self.subject.id, "--failures").splitlines()
        assert lines[0].endswith(
            f"2 of {Answer.objects.filter(run=self.subject).count()} answers failed"
        )
        text = "\n".join(lines)
        assert "  greet/one #0  fake/small" in lines
        assert "    schema schema_fail: $.name is required" in lines
        assert "    checks failed: does not contain 'Ada'" in lines
        assert "    error timeout: no reply in 60 s\\x1b[31m" in lines
        assert "judge calls without a verdict: 1" in lines
        assert "  greet/two #0  order 2  unparseable: no JSON" in lines
        assert "fake/large" in text and "\x1b" not in text

    # --- --case --------------------------------------------------------------------------------

    def test_a_case_shows_every_answer_its_verdicts_and_its_pairs(self):
        lines = _report(self.subject.id, "--case", "greet/one").splitlines()
        assert lines[0] == f"case greet/one of run {self.subject.id}"
        small = next(line for line in lines if line.startswith("  fake/small #0"))
        assert "schema schema_fail - checks fail" in small
        assert "    ! schema schema_fail: $.name is required" in lines
        assert any(
            line.startswith("  fake/large #0: done - schema pass - checks pass") for line in lines
        )
        assert lines[-1] == (
            "  pair #0 fake/large vs fake/small: order 1 candidate, order 2 candidate -> "
            "candidate (score 1.0) - humans: tie"
        )

    def test_an_answer_shown_in_the_terminal_is_neutralised(self):
        text = _report(self.subject.id, "--case", "one")
        assert "\x1b" not in text and "\r" not in text and "\u202e" not in text
        lines = text.splitlines()
        assert '    | =HYPERLINK("http://evil.example/","x")\\x1b[2J' in lines
        assert "    | next\\u202e" in lines  # a carriage return starts a line of its own

    def test_an_unknown_case_exits_2_listing_some_known_ones(self):
        code, message = _fails(self.subject.id, "--case", "greet/nine")
        assert code == 2
        assert message.startswith(f"error: run {self.subject.id} has no case 'greet/nine' (cases: ")
        assert "greet/one" in message

    def test_failures_and_case_take_no_format(self):
        code, message = _fails(self.subject.id, "--failures", "--format", "csv")
        assert code == 2 and "leave out --format" in message
