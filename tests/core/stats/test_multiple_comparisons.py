"""Holm's adjustment for the per-task and per-tag lists, checked against statsmodels, and a
comparison of many tasks that says how many it made and marks a mover that lost significance."""

from __future__ import annotations

import numpy as np
import pytest

from evalsite.core.stats.multiple import comparisons_text, holm
from tests.helpers.references import multipletests


@pytest.mark.parametrize("seed", range(20))
def test_holm_equals_statsmodels_multipletests(seed):
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 40))
    pvalues = rng.uniform(0, 1, size) ** 3  # many small ones
    pvalues[: size // 4] = pvalues[0]  # ties
    reference = multipletests(pvalues, method="holm")[1]
    assert np.allclose(holm(list(pvalues)), reference, rtol=0, atol=1e-12)


def test_a_missing_p_is_kept_out_of_the_family():
    reference = multipletests([0.01, 0.04, 0.03], method="holm")[1]
    adjusted = holm([0.01, None, 0.04, 0.03])
    assert adjusted[1] is None
    assert np.allclose([adjusted[0], adjusted[2], adjusted[3]], reference, atol=1e-12)
    assert holm([]) == []


def test_the_count_reads_as_words():
    assert comparisons_text(12) == "12 comparisons, Holm-corrected"
    assert comparisons_text(1) == "1 comparison, Holm-corrected"


def _run(run_id: str, wins: dict[str, list[float]]) -> dict:
    """A minimal report.json of one candidate against the baseline: per task, one win score
    a case (one repeat)."""
    units = [[task, f"c{i}", 0] for task, scores in wins.items() for i in range(len(scores))]
    return {
        "run_id": run_id,
        "suite": {"name": "many-tasks", "hash": "h"},
        "contestants": ["base", "cand"],
        "baseline": "base",
        "judge": {"model": "fake/judge"},
        "headline_eligible": True,
        "per_task": [
            {"task": task, "win_rates": {"cand": {"win_rate": sum(s) / len(s)}}}
            for task, s in wins.items()
        ],
        "paired": {"units": units, "win": {"cand": [v for s in wins.values() for v in s]}},
    }


def test_a_comparison_of_many_tasks_counts_them_and_marks_a_mover_that_lost_significance():
    from evalsite.core.report.compare import compare_reports

    tasks = [f"t{i:02}" for i in range(12)]
    before = {task: [0.0] * 20 for task in tasks}
    after = {task: [0.0] * 20 for task in tasks}
    after["t00"] = [1.0] * 14 + [0.0] * 6  # 0.70: significant after Holm too
    after["t01"] = [1.0] * 4 + [0.0] * 16  # 0.20: p about 0.02 alone, not after 11 more
    comparison = compare_reports(_run("a", before), _run("b", after))

    assert comparison.comparisons == 12
    by_task = {m.task: m for m in comparison.movers}
    assert set(by_task) == {"t00", "t01"}
    assert by_task["t01"].p_value < 0.05 < by_task["t01"].p_holm
    assert by_task["t01"].significant is False and by_task["t00"].significant is True
    lines = "\n".join(comparison.lines())
    assert "12 comparisons, Holm-corrected" in lines
    t01 = next(line for line in comparison.lines() if "/ t01:" in line)
    assert "not significant after Holm" in t01
    t00 = next(line for line in comparison.lines() if "/ t00:" in line)
    assert "not significant" not in t00
    data = comparison.to_dict()
    assert data["comparisons"] == 12
    assert {m["task"]: m["significant"] for m in data["movers"]} == {"t00": True, "t01": False}
