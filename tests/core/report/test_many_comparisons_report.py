"""Many comparisons in a run's own report (issue 27): per-task win-rates carry an interval
over cases with the overall win-rate's minimum-n rule, and the report's movers since the
previous run are Holm-corrected as compare's are, with the count of comparisons printed."""

from __future__ import annotations

import pytest

from evalsite.core.calibration import Calibration
from evalsite.core.report.build import AnswerRow, PairRow, ReportInput, build_report
from evalsite.core.report.markdown import render_markdown
from evalsite.core.stats.bootstrap import too_few_cases

BASE, CAND = "fake/base", "fake/cand"


def _data(run_id, wins: dict[str, list[float]], *, repeats=1, labels=None, **overrides):
    """One candidate against the baseline: per task, one pair score a case, copied into
    every repeat (a copied verdict is the same judgement again)."""
    answers, pairs = [], []
    for task, scores in wins.items():
        for case, score in enumerate(scores):
            for repeat in range(repeats):
                for contestant in (BASE, CAND):
                    answers.append(AnswerRow(task, f"c{case}", contestant, repeat, "done",
                                             passed=True))  # fmt: skip
                pairs.append(PairRow(len(pairs) + 1, task, f"c{case}", repeat, BASE, CAND,
                                     score=score, flip=False))  # fmt: skip
    return ReportInput(
        run_id=run_id, status="done", suite_name="many-tasks", suite_hash="0" * 64,
        contestants=(BASE, CAND), answers=answers, pairs=pairs,
        calibration=labels or Calibration(),
        judge_model="fake/judge", repeats=repeats, **overrides,
    )  # fmt: skip


def _task_rates(report: dict) -> dict[str, dict]:
    return {row["task"]: row["win_rates"][CAND] for row in report["per_task"]}


TEN = [1.0, 1.0, 0.75, 0.5, 1.0, 0.0, 1.0, 0.25, 1.0, 0.5]


def test_a_per_task_win_rate_has_an_interval_over_cases_that_copies_cannot_narrow():
    once = _task_rates(build_report(_data("r1", {"big": TEN, "small": [1.0, 0.0, 0.5]})))
    thrice = _task_rates(
        build_report(_data("r1", {"big": TEN, "small": [1.0, 0.0, 0.5]}, repeats=3))
    )

    big = thrice["big"]
    assert (big["cases"], big["n"], big["method"]) == (10, 30, "bca")
    assert big["ci"][0] < big["win_rate"] < big["ci"][1]
    assert big["ci"] == once["big"]["ci"]  # three copies of each verdict: the same interval
    # the overall win-rate's rule: 3 cases (9 pairs) is below the minimum, said so
    assert thrice["small"]["ci"] is None
    assert thrice["small"]["no_interval"] == too_few_cases(3, 8)


def test_the_per_task_table_prints_the_interval_few_cases_and_the_cases():
    text = render_markdown(
        build_report(_data("r1", {"big": TEN, "small": [1.0, 0.0, 0.5]}, repeats=3))
    )
    big = next(line for line in text.splitlines() if line.startswith("| `big`"))
    assert "few cases" in big and "n=10 cases (30 pairs)" in big
    small = next(line for line in text.splitlines() if line.startswith("| `small`"))
    assert "no interval (too few cases: 3; an interval needs 8)" in small


def _many_tasks(after: dict[str, list[float]] | None = None) -> dict[str, list[float]]:
    wins = {f"t{i:02}": [0.0] * 20 for i in range(12)}
    return wins | (after or {})


def test_the_reports_movers_are_holm_corrected_over_every_task_tested():
    previous = build_report(_data("a", _many_tasks()))
    after = {"t00": [1.0] * 14 + [0.0] * 6, "t01": [1.0] * 4 + [0.0] * 16}  # as in compare
    report = build_report(_data("b", _many_tasks(after), previous=previous))

    movers = report["movers"]
    assert movers["comparisons"] == 12
    by_task = {item["task"]: item for item in movers["items"]}
    assert set(by_task) == {"t00", "t01"}
    assert by_task["t01"]["p_value"] < 0.05 < by_task["t01"]["p_holm"]
    assert by_task["t01"]["significant"] is False and by_task["t00"]["significant"] is True

    text = render_markdown(report)
    assert "12 comparisons, Holm-corrected" in text
    t01 = next(line for line in text.splitlines() if f"| `{CAND}` | `t01` |" in line)
    assert "not significant after Holm" in t01
    t00 = next(line for line in text.splitlines() if f"| `{CAND}` | `t00` |" in line)
    assert "Holm p=" in t00 and "not significant" not in t00


def test_the_kappa_per_task_list_says_its_comparisons_and_decides_after_holm():
    from evalsite.core.calibration import Calibration, Item
    from tests.core.stats.test_kappa import _family

    items = [
        Item(pair=k, pairs=(k,), task=task, judge=judge, votes={"ann": human}, case=case)
        for k, (task, human, judge, case) in enumerate(_family(), start=1)
    ]
    report = build_report(_data("r1", {"t": TEN}, labels=Calibration(judged=items)))
    calibration = report["calibration"]
    assert calibration["per_task_comparisons"] == 10
    rows = {row["task"]: row for row in calibration["per_task"]}
    assert rows["borderline"]["p_value"] < 0.05 < rows["borderline"]["p_holm"]
    assert rows["bad"]["below_floor"] is True

    text = render_markdown(report)
    assert "Kappa per task (below the floor of 0.40? 10 comparisons, Holm-corrected)" in text
    bad = next(line for line in text.splitlines() if line.startswith("| `bad` |"))
    assert "below the floor 0.40, Holm p=" in bad and "| 30 cases |" in bad
    border = next(line for line in text.splitlines() if line.startswith("| `borderline` |"))
    assert "not significant after Holm" in border


def test_a_task_without_judged_pairs_prints_no_interval_text():
    from dataclasses import replace

    data = _data("r1", {"big": TEN})
    lonely = [AnswerRow("lonely", "c0", who, 0, "done", passed=True) for who in (BASE, CAND)]
    text = render_markdown(build_report(replace(data, answers=[*data.answers, *lonely])))
    row = next(line for line in text.splitlines() if line.startswith("| `lonely`"))
    assert row.endswith("| n/a (n=0 cases, flips 0) |")


def test_movers_of_too_few_cases_to_test_say_they_are_untested():
    previous = build_report(_data("a", {"t": [0.0] * 4}))
    report = build_report(_data("b", {"t": [1.0] * 4}, previous=previous))
    assert report["movers"]["comparisons"] == 0 and len(report["movers"]["items"]) == 1
    assert "the movers are untested" in render_markdown(report)


def test_the_reports_movers_are_compares_and_test_only_the_win_rate_changes(monkeypatch):
    """The report keeps the movers alone, which read the Δ win-rates: the Δ score and
    Δ pass-rate tests compare prints (2,000 resamples each) are not drawn for it."""
    from evalsite.core.report import compare, pairing
    from evalsite.core.stats.record import jsonable

    previous = build_report(_data("a", _many_tasks()))
    after = {"t00": [1.0] * 14 + [0.0] * 6, "t01": [1.0] * 4 + [0.0] * 16}
    data = _data("b", _many_tasks(after), previous=previous)
    full = compare.compare_reports(previous, build_report(data))
    tested: list[int] = []
    bootstrap = pairing.paired_bootstrap

    def counted(before, after, **options):
        tested.append(len(before))
        return bootstrap(before, after, **options)

    monkeypatch.setattr(pairing, "paired_bootstrap", counted)
    monkeypatch.setattr(pairing, "case_mcnemar", lambda *_: pytest.fail("a pass-rate test"))
    report = build_report(data)

    assert report["movers"]["items"] == jsonable([mover.to_dict() for mover in full.movers])
    assert report["movers"]["comparisons"] == full.comparisons == 12
    # the win-rate's: overall and each of 12 tasks; with the scores', twice as many (and
    # the score changes exist: compare tested them)
    assert len(tested) == 13
    assert set(full.significance) == {"level", "seed", "win", "score", "passed"}


def test_a_task_holding_every_pair_has_the_overall_win_rate_without_drawing_it_again(
    monkeypatch,
):
    """A one-task suite's task row is the overall win-rate over the same pairs, cases and
    seed: the same draws, taken from it rather than drawn again; a task holding part of
    the pairs is drawn over its own."""
    from evalsite.core.report import build

    drawn: list[int] = []
    win_rate = build.win_rate

    def counted(scores, **options):
        drawn.append(len(scores))
        return win_rate(scores, **options)

    monkeypatch.setattr(build, "win_rate", counted)
    report = build_report(_data("r1", {"only": TEN}, repeats=3))

    assert drawn == [30]  # the overall; the task's is the same
    overall = report["win_rates"][CAND]
    [row] = report["per_task"]
    for key in ("win_rate", "n", "ci", "cases", "method", "no_interval"):
        assert row["win_rates"][CAND][key] == overall[key]

    drawn.clear()
    build_report(_data("r1", {"big": TEN, "small": [1.0, 0.0, 0.5]}))
    assert sorted(drawn) == [3, 10, 13]
