"""Pairwise judging through the engine (SPEC §8): pairs, exclusions before any judge call,
both orders, the combined score, the one retry, and the figures the report prints."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.utils import timezone

from evalsite.core.suites import parse_suite
from runs.engine.runner import execute
from runs.models import Answer, Judgement, Label, Pair, PriceTable, Run, SuiteVersion
from runs.planning.planner import RunOptions, make_plan, store_plan
from tests.helpers.references import cohen_kappa_score

SUITE = """\
suite: judged
version: 1
models: [scripted/base, scripted/cand]
judge:
  model: scripted/judge
  rubric: Prefer the answer that names the customer.
  calibration: {{min_kappa: 0.40, min_labels: {min_labels}}}
tasks:
  - id: reply
    prompt: "Greet {{{{name}}}} in JSON"
    schema: {{type: object, required: [text], properties: {{text: {{type: string}}}}}}
    cases:
      - {{id: both-cand, vars: {{name: Ada}}}}
      - {{id: both-base, vars: {{name: Bo}}}}
      - {{id: flip, vars: {{name: Cy}}}}
      - {{id: soft, vars: {{name: Di}}}}
      - {{id: broken, vars: {{name: Ed}}}}
      - {{id: prose, vars: {{name: Fa}}}}
      - {{id: fixed, vars: {{name: Gu}}}}
{labels}
"""
ANSWER = '{{"text": "Hello {name}"}}'


def _replies() -> str:
    cases = ["both-cand", "both-base", "flip", "soft", "broken", "prose", "fixed"]
    names = dict(zip(cases, ["Ada", "Bo", "Cy", "Di", "Ed", "Fa", "Gu"], strict=True))
    verdict = '{{"reason": "r", "winner": "{}"}}'
    judge = {
        # order 1 shows the baseline first; order 2 swaps
        "both-cand": [verdict.format(2), verdict.format(1)],  # candidate twice → 1.0
        "both-base": [verdict.format(1), verdict.format(2)],  # baseline twice → 0.0
        "flip": [verdict.format(1), verdict.format(1)],  # "Answer 1" twice → flip, 0.5
        "soft": [verdict.format("tie"), verdict.format(1)],  # tie + candidate → 0.75
        "broken": [verdict.format(1), verdict.format(1)],  # never asked: excluded first
        "prose": ["I cannot decide.", "Still undecided."],  # unreadable, and again
        "fixed": ["Answer 2 is better", verdict.format(1)],  # unreadable, then read
    }
    lines = ["base:"]
    lines += [f"  reply/{c}: ['{ANSWER.format(name=names[c])}']" for c in cases]
    lines += ["cand:"]
    for case in cases:
        text = "not json at all" if case == "broken" else ANSWER.format(name=names[case] + "!")
        lines.append(f"  reply/{case}: ['{text}']")
    lines += ["judge:"]
    lines += [f"  judge/reply/{c}: {json.dumps(items)}" for c, items in judge.items()]
    # the retry of "fixed" order 1 (call number 0) is read from judge-retry
    lines.append(f"  judge-retry/reply/fixed: {json.dumps([verdict.format(2)])}")
    return "\n".join(lines) + "\n"


def _run(tmp_path, labels: str = "", min_labels: int = 10) -> Run:
    PriceTable.objects.ensure_default()
    replies = tmp_path / "replies.yaml"
    replies.write_text(_replies())
    text = SUITE.format(labels=labels, min_labels=min_labels)
    loaded = parse_suite(text.encode(), filename="judged.yaml", origin="upload")
    version, _ = SuiteVersion.objects.register(loaded, text, origin="upload")
    run = store_plan(make_plan(version, loaded, RunOptions(replies=str(replies))))
    return execute(run.id)


@pytest.mark.django_db(transaction=True)
def test_each_pair_is_judged_in_both_orders_and_combined_into_its_score(tmp_path):
    run = _run(tmp_path)

    assert run.status == Run.Status.DONE, run.detail
    pairs = {p.case_id: p for p in Pair.objects.filter(run=run)}
    combined = {c: (p.score, p.flip, p.category, p.excluded_reason) for c, p in pairs.items()}
    assert combined == {
        "both-cand": (1.0, False, "candidate", ""),
        "both-base": (0.0, False, "baseline", ""),
        "flip": (0.5, True, "tie", ""),
        "soft": (0.75, False, "candidate", ""),
        "broken": (None, None, "", "parse_fail"),
        "prose": (None, None, "", "judge_unparseable"),
        "fixed": (1.0, False, "candidate", ""),  # order 1 read on its retry: "2"
    }
    sides = {
        (j.case_id, j.order): j.side for j in Judgement.objects.filter(run=run, pair__isnull=False)
    }
    assert sides[("both-cand", 1)] == sides[("both-cand", 2)] == "candidate"
    assert sides[("flip", 1)] == "baseline" and sides[("flip", 2)] == "candidate"


@pytest.mark.django_db(transaction=True)
def test_an_excluded_pair_never_reaches_the_judge_and_is_counted_with_its_reason(tmp_path):
    run = _run(tmp_path)

    broken = Pair.objects.get(run=run, case_id="broken")
    assert broken.excluded_side == "candidate"
    assert not Judgement.objects.filter(pair=broken).exists()
    rates = run.report["win_rates"]["scripted/cand"]
    assert rates["excluded_by_reason"] == {"judge_unparseable": 1, "parse_fail": 1}
    assert rates["excluded"] == 2
    assert rates["schema_pass_rate"] == pytest.approx(6 / 7) and rates["schema_n"] == 7


@pytest.mark.django_db(transaction=True)
def test_an_unreadable_judge_reply_gets_one_retry_then_the_pair_is_excluded(tmp_path):
    run = _run(tmp_path)

    prose = Judgement.objects.get(run=run, case_id="prose", order=1)
    assert prose.retried and prose.parse_status == "unparseable" and prose.attempts == 2
    fixed = Judgement.objects.get(run=run, case_id="fixed", order=1)
    assert fixed.retried and fixed.parse_status == "ok" and fixed.winner == "2"
    assert fixed.request["messages"][-2] == {"role": "assistant", "content": "Answer 2 is better"}
    unretried = Judgement.objects.get(run=run, case_id="soft", order=1)
    assert not unretried.retried and unretried.attempts == 1


@pytest.mark.django_db(transaction=True)
def test_the_win_rate_is_the_mean_pair_score_with_its_counts(tmp_path):
    run = _run(tmp_path)

    rates = run.report["win_rates"]["scripted/cand"]
    assert rates["n"] == 5
    assert rates["win_rate"] == pytest.approx((1 + 0 + 0.5 + 0.75 + 1) / 5)
    assert (rates["wins"], rates["losses"], rates["soft_wins"], rates["flips"]) == (2, 1, 1, 1)
    assert rates["ties"] == 0 and rates["flip_rate"] == pytest.approx(0.2)
    assert rates["flip_warning"] is False
    assert rates["ci"] is None  # n < 8: no interval
    # 6 pairs sent to the judge x 2 orders, and 3 retries of unreadable replies
    assert run.report["totals"]["judge_calls"] == 6 * 2 + 3
    assert run.report["totals"]["pairs"] == 7


@pytest.mark.django_db(transaction=True)
def test_the_judge_sees_neither_model_names_nor_which_answer_is_the_baseline(tmp_path):
    run = _run(tmp_path)

    for call in Judgement.objects.filter(run=run):
        text = json.dumps(call.request["messages"])
        assert "scripted/" not in text and "base" not in text.replace("based", "")
        assert "Prefer the answer that names the customer." in text


def _labels(prefs: dict[str, str]) -> str:
    rows = [
        f"  - {{task: reply, case: {case}, baseline: scripted/base, candidate: scripted/cand, "
        f"prefer: {prefer}}}"
        for case, prefer in prefs.items()
    ]
    return "labels:\n" + "\n".join(rows)


@pytest.mark.django_db(transaction=True)
def test_report_kappa_equals_scikit_learn_on_the_runs_judge_and_consensus_pairs(
    tmp_path, django_user_model
):
    prefs = {"both-cand": "candidate", "both-base": "candidate", "flip": "tie", "soft": "baseline",
             "broken": "baseline", "fixed": "candidate"}  # fmt: skip
    run = _run(tmp_path, labels=_labels(prefs), min_labels=3)
    # a browser label on "both-base" bound to its exact answers: with the suite-file label it
    # has no majority (candidate vs baseline), so that pair is left out and counted
    pair = Pair.objects.get(run=run, case_id="both-base")
    user = django_user_model.objects.create_user("ann")
    Label.objects.create(
        suite=run.suite, labeller=user, labeller_name="ann", task_id="reply", case_id="both-base",
        baseline="scripted/base", candidate="scripted/cand", baseline_sha=pair.baseline_sha,
        candidate_sha=pair.candidate_sha, prefer="baseline",
    )  # fmt: skip
    from runs.results.reporting import write_report

    report = write_report(run)

    judged = {p.case_id: p.category for p in Pair.objects.filter(run=run).judged()}
    used = [case for case in prefs if case in judged and case != "both-base"]
    human = [prefs[c] for c in used]
    judge = [judged[c] for c in used]
    calibration = report["calibration"]
    assert calibration["n"] == len(used) == 4
    assert calibration["kappa"] == pytest.approx(
        cohen_kappa_score(human, judge, labels=["baseline", "candidate", "tie"])
    )
    assert calibration["no_majority"] == 1
    assert calibration["labels_used"] == {"browser": 1, "suite_file": 5, "total": 6}
    assert calibration["labels_on_excluded_pairs"] == 1  # "broken" was never judged


@pytest.mark.django_db(transaction=True)
def test_a_second_identical_run_is_judged_from_the_cache_at_no_cost(tmp_path):
    first = _run(tmp_path)
    second = _run(tmp_path)

    assert second.report["totals"]["cache_hits"] == second.report["totals"]["calls"]
    assert second.spent_usd == 0
    assert second.report["win_rates"] == first.report["win_rates"]


def _stall(run: Run, status: str) -> None:
    long_ago = timezone.now() - dt.timedelta(hours=1)
    Run.objects.filter(pk=run.pk).update(
        status=status, report=None, finished_at=None, phase_at=long_ago
    )
    Judgement.objects.filter(run=run).update(claimed_at=long_ago, finished_at=long_ago)


@pytest.mark.django_db(transaction=True)
def test_a_run_that_died_while_preparing_judging_is_found_stalled_and_resumed(tmp_path):
    done = _run(tmp_path)
    expected = {p.case_id: (p.score, p.excluded_reason) for p in Pair.objects.filter(run=done)}
    # the shard died after the answers: nothing scored, no pairs, no judge calls yet
    Judgement.objects.filter(run=done).delete()
    Pair.objects.filter(run=done).delete()
    Answer.objects.filter(run=done).update(scored_at=None, schema_verdict="")
    _stall(done, Run.Status.JUDGING)

    assert list(Run.objects.stalled(600).values_list("pk", flat=True)) == [done.pk]
    run = execute(done.id)

    assert run.status == Run.Status.DONE and run.report is not None
    assert {p.case_id: (p.score, p.excluded_reason) for p in Pair.objects.filter(run=run)} == (
        expected
    )


@pytest.mark.django_db(transaction=True)
def test_a_run_that_died_half_way_through_judging_redoes_only_the_unfinished_calls(tmp_path):
    done = _run(tmp_path)
    calls = Judgement.objects.filter(run=done, case_id="both-cand")
    calls.update(status="claimed", claimed_by="dead", winner="", side="", parse_status="")
    Pair.objects.filter(run=done).update(score=None, flip=None, category="")
    _stall(done, Run.Status.JUDGING)
    untouched = Judgement.objects.get(run=done, case_id="soft", order=1)

    run = execute(done.id)

    assert run.status == Run.Status.DONE
    assert Pair.objects.get(run=run, case_id="both-cand").score == 1.0
    assert Judgement.objects.get(pk=untouched.pk).attempts == untouched.attempts
    assert Judgement.objects.filter(run=run).count() == 12


@pytest.mark.django_db(transaction=True)
def test_a_run_that_died_while_reporting_is_resumed_and_gets_its_report(tmp_path):
    done = _run(tmp_path)
    _stall(done, Run.Status.REPORTING)
    assert done.pk in Run.objects.stalled(600).values_list("pk", flat=True)
    fresh = Run.objects.filter(pk=done.pk)
    fresh.update(phase_at=timezone.now())
    assert done.pk not in Run.objects.stalled(600).values_list("pk", flat=True)

    run = execute(done.id)

    assert run.status == Run.Status.DONE
    assert run.report["win_rates"] == done.report["win_rates"]
