"""The judge warnings evalblink gives (issue 16): a judge sharing a vendor with a contestant
(self-preference), a judge.max_tokens below the floor its reply needs, and judge replies cut
off at max_tokens — at validation, at a run's start and in the report."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.test import TestCase

from evalsite.core.calibration import Calibration
from evalsite.core.judge_warnings import (
    JUDGE_MAX_TOKENS_FLOOR,
    budget_warning,
    self_preference_warning,
    vendor,
)
from evalsite.core.report.build import AnswerRow, ReportInput, build_report
from evalsite.core.report.card import group_warnings
from runs.models import Judgement
from runs.planning.validation import validate
from runs.results.reporting import compute_report
from tests.helpers.factories import make_judged_run, make_suite_version, small_suite_text

HAIKU, SONNET = "anthropic/claude-haiku-4-5", "anthropic/claude-sonnet-4-6"
GEMINI, GPT = "google/gemini-2.5-flash", "openai/gpt-4.1"


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        (HAIKU, "anthropic"),
        ("openai/gpt-4o-mini@concise", "openai"),
        ("openrouter/anthropic/claude-3.5-sonnet", "anthropic"),
        ("openrouter/google/gemini-2.5-flash@terse", "google"),
        ("openrouter/auto", None),  # a router's own pick: no vendor to compare
        ("scripted/judge", None),
        ("fake/small", None),
        ("local/llama-3", "local"),  # an admin endpoint: its name
    ],
)
def test_the_vendor_is_the_provider_or_a_routers_next_segment(model, expected):
    assert vendor(model) == expected


def test_a_routed_contestant_of_the_judges_vendor_is_named():
    routed = "openrouter/anthropic/claude-3.5-sonnet"
    text = self_preference_warning(SONNET, [GEMINI, routed, f"{HAIKU}@concise"])
    assert text is not None
    assert text.startswith(f"the judge {SONNET} shares its vendor (anthropic) with contestants ")
    assert f"{routed}, {HAIKU}@concise:" in text and GEMINI not in text


def test_a_routed_judge_is_compared_by_its_vendor_too():
    text = self_preference_warning("openrouter/google/gemini-2.5-pro", [HAIKU, GEMINI])
    assert text is not None and "(google) with contestant google/gemini-2.5-flash:" in text


def test_no_shared_vendor_and_keyless_models_warn_nothing():
    assert self_preference_warning(GPT, [HAIKU, GEMINI]) is None
    assert self_preference_warning("scripted/judge", ["scripted/sloppy", "scripted/good"]) is None


def test_the_judge_as_a_contestant_is_not_also_a_shared_vendor():
    assert self_preference_warning(SONNET, [SONNET, GEMINI]) is None


def test_the_budget_floor_is_a_strict_minimum():
    assert budget_warning(None) is None
    assert budget_warning(JUDGE_MAX_TOKENS_FLOOR) is None
    text = budget_warning(JUDGE_MAX_TOKENS_FLOOR - 1)
    assert text is not None and text.startswith("judge.max_tokens is 255, below the 256 tokens")


# --- validation --------------------------------------------------------------------------

SUITE = """\
suite: vendors
version: 1
models: [{models}]
judge:
  model: {judge}
{extra}tasks:
  - id: greet
    prompt: "Say hello to {{{{who}}}}."
    cases:
      - {{id: one, vars: {{who: Ada}}}}
"""


def _suite(tmp_path, *, models=(HAIKU, GEMINI), judge=SONNET, max_tokens=None) -> str:
    extra = f"  max_tokens: {max_tokens}\n" if max_tokens is not None else ""
    path = tmp_path / "vendors.yaml"
    path.write_text(SUITE.format(models=", ".join(models), judge=judge, extra=extra))
    return str(path)


@pytest.mark.django_db
def test_validate_warns_of_a_judge_sharing_a_vendor_and_of_a_small_budget(tmp_path):
    outcome = validate(_suite(tmp_path, max_tokens=100))
    assert outcome["ok"], outcome["errors"]
    path = tmp_path / "vendors.yaml"
    assert outcome["warnings"] == [
        f"{path}:5: judge.model: warning: the judge {SONNET} shares its vendor (anthropic) with "
        f"contestant {HAIKU}: it may prefer its own vendor's answers (self-preference bias, "
        "10-25%); a judge from another vendor avoids it",
        f"{path}:6: judge.max_tokens: warning: judge.max_tokens is 100, below the 256 tokens the "
        "judge's reply needs (its reasoning comes before the verdict): replies cut off there "
        "have no verdict; raise it to 256 or more",
    ]


@pytest.mark.django_db
def test_validate_says_the_judge_is_a_contestant_once(tmp_path):
    outcome = validate(_suite(tmp_path, models=(SONNET, GEMINI)))
    assert [w.split("warning: ", 1)[1] for w in outcome["warnings"]] == [
        f"the judge {SONNET} is also a contestant ({SONNET}): it judges its own answers "
        "(self-preference bias)"
    ]


@pytest.mark.django_db
def test_a_judge_of_another_vendor_with_a_fair_budget_validates_without_warnings(tmp_path):
    assert validate(_suite(tmp_path, judge=GPT, max_tokens=400))["warnings"] == []


class CommandLineTests(TestCase):
    @pytest.fixture(autouse=True)
    def _tmp(self, tmp_path):
        self.tmp_path = tmp_path

    def _call(self, *args) -> tuple[int, str]:
        err = io.StringIO()
        with pytest.raises(SystemExit) as exit_:
            call_command(*args, stdout=io.StringIO(), stderr=err)
        return exit_.value.code, err.getvalue()

    def test_evalsite_validate_prints_the_warnings_and_exits_0(self):
        code, err = self._call("validate", _suite(self.tmp_path, max_tokens=64))
        assert code == 0
        assert "judge.model: warning: the judge anthropic/claude-sonnet-4-6 shares" in err
        assert "warning: judge.max_tokens is 64, below the 256 tokens" in err

    def test_a_runs_start_warns_of_the_judge_and_contestants_it_really_has(self):
        path = _suite(self.tmp_path, judge=GPT)  # the suite's own judge is fine
        code, err = self._call(
            "run", path, "--models", f"{HAIKU},openai/gpt-4o-mini", "--dry-run",
            "--judge", "openai/gpt-4.1-mini",
        )  # fmt: skip
        assert code == 0
        assert (
            "warning: the judge openai/gpt-4.1-mini shares its vendor (openai) with contestant "
            "openai/gpt-4o-mini:"
        ) in err


# --- the report ----------------------------------------------------------------------------


def _report(contestants, judge, **overrides) -> dict:
    answers = [
        AnswerRow(task="t", case="c", contestant=c, repeat=0, status="done", passed=True)
        for c in contestants
    ]
    data = ReportInput(
        run_id="r1", status="done", suite_name="s", suite_hash="0" * 64,
        contestants=contestants, answers=answers, pairs=(), calibration=Calibration(),
        judge_model=judge, **overrides,
    )  # fmt: skip
    return build_report(data)


def test_the_report_warns_of_a_shared_vendor_and_the_warning_is_a_line_of_its_own():
    report = _report((GEMINI, "openrouter/anthropic/claude-3.5-haiku"), SONNET)
    expected = (
        f"the judge {SONNET} shares its vendor (anthropic) with contestant "
        "openrouter/anthropic/claude-3.5-haiku: it may prefer its own vendor's answers"
    )
    assert any(w.startswith(expected) for w in report["warnings"])
    assert any(g.title.startswith(expected) for g in group_warnings(report))


def test_the_report_leaves_the_judge_as_contestant_to_judge_is_contestant():
    report = _report((SONNET, GEMINI), SONNET)
    assert report["judge"]["is_contestant"] is True
    assert not any("shares its vendor" in w or "also a contestant" in w for w in report["warnings"])


def test_the_report_warns_of_a_small_budget_and_of_replies_cut_off_by_it():
    report = _report((HAIKU, GEMINI), GPT, judge_max_tokens=128, judge_cut_off=3)
    assert "judge.max_tokens is 128, below the 256 tokens" in " ".join(report["warnings"])
    assert (
        "3 judge replies were cut off at max_tokens=128 with no usable verdict or score; "
        "raise judge.max_tokens"
    ) in report["warnings"]


def test_cut_off_replies_under_the_default_budget_name_the_default():
    report = _report((HAIKU, GEMINI), GPT, judge_cut_off=1)
    assert "1 judge reply was cut off at max_tokens=400" in " ".join(report["warnings"])
    assert not any("below the 256" in w for w in report["warnings"])


class CutOffCountTests(TestCase):
    def test_the_report_counts_judge_replies_stopped_at_max_tokens_without_a_verdict(self):
        text = small_suite_text().replace(
            "judge: {model: fake/large}", "judge: {model: fake/large, max_tokens: 300}"
        )
        run = make_judged_run(suite_version=make_suite_version(text))
        pair = run.pairs.first()
        common = {"run": run, "task_id": "greet", "case_id": "one", "pair": pair,
                  "kind": Judgement.Kind.PAIR, "judge_model": "fake/large", "request": {}}  # fmt: skip
        Judgement.objects.create(  # unreadable, stopped at the budget: counted
            **common, order=1, request_hash="cut-1", status=Judgement.Status.DONE,
            finish_reason="length", parse_status=Judgement.Parse.UNPARSEABLE, text='{"reason": "Ans',
        )  # fmt: skip
        Judgement.objects.create(  # an empty reply that stopped there: counted
            **common, order=2, request_hash="cut-2", status=Judgement.Status.ERROR,
            error_kind="empty", error_message="openai: the reply has no text (finish reason: length)",
        )  # fmt: skip
        other = {**common, "case_id": "two", "pair": run.pairs.last()}
        Judgement.objects.create(  # stopped there, yet its verdict was read: not counted
            **other, order=1, request_hash="cut-3", status=Judgement.Status.DONE,
            finish_reason="length", parse_status=Judgement.Parse.OK, side="candidate", winner="2",
        )  # fmt: skip

        warnings = compute_report(run)["warnings"]

        assert (
            "2 judge replies were cut off at max_tokens=300 with no usable verdict or score; "
            "raise judge.max_tokens"
        ) in warnings
