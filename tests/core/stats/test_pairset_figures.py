"""The label-corrected win-rate and the judge's length bias on a real pair set
(tests/fixtures/pairsets: MT-Bench expert votes and GPT-4's verdicts in both orders, from
LLMBar), against ppi_py and statsmodels, as on generated data."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from evalsite.core.pairsets import parse_pairset
from evalsite.core.stats.agreement import strict_majority
from evalsite.core.stats.length import length_bias, length_scale
from evalsite.core.stats.pairs import pair_score
from evalsite.core.stats.ppi import Stratum, corrected_win_rate
from tests.core.stats.reference import ppi_py_stratified
from tests.helpers.references import sm

PAIRSET = Path(__file__).parents[2] / "fixtures" / "pairsets" / "llmbar-mtbench.jsonl"
SIDE = {"a": "baseline", "b": "candidate", "tie": "tie"}  # answer_a plays the baseline
HUMAN = {"a": 0.0, "b": 1.0, "tie": 0.5}


@pytest.fixture(scope="module")
def pairs() -> list[tuple[str, float, float, int]]:
    """(task, human score, GPT-4's pair score, length difference b − a in characters)."""
    parsed = parse_pairset(PAIRSET.read_bytes(), filename=PAIRSET.name)
    rows = []
    for entry in parsed.pairs:
        orders = {v.order: SIDE[v.prefer] for v in entry.verdicts if v.judge == "gpt-4"}
        human = strict_majority(vote.prefer for vote in entry.votes)
        if human is None or set(orders) != {1, 2}:
            continue
        judged = pair_score(orders[1], orders[2]).score
        rows.append((entry.task, HUMAN[human], judged, len(entry.answer_b) - len(entry.answer_a)))
    return rows


def _labelled(rows, per_task: int, seed: int):
    """Stratified by task as the queue labels: `per_task` pairs of each task at random."""
    rng = np.random.default_rng(seed)
    by_task = defaultdict(list)
    for index, row in enumerate(rows):
        by_task[row[0]].append(index)
    return {task: set(rng.permutation(ids)[:per_task].tolist()) for task, ids in by_task.items()}


def test_the_corrected_win_rate_on_mt_bench_equals_ppi_py_per_task(pairs):
    chosen = _labelled(pairs, 6, seed=19)
    strata, reference = {}, []
    for task, labelled in chosen.items():
        rows = [(i, row) for i, row in enumerate(pairs) if row[0] == task]
        y = [row[1] for i, row in rows if i in labelled]
        f = [row[2] for i, row in rows if i in labelled]
        rest = [row[2] for i, row in rows if i not in labelled]
        strata[task] = Stratum(y, f, rest, len(rows))
        reference.append((y, f, rest, len(rows)))
    estimate, se = ppi_py_stratified(reference)
    result = corrected_win_rate(strata)
    assert len(pairs) > 150 and result.n_labelled == 6 * len(chosen)
    assert result.win_rate == pytest.approx(estimate, abs=1e-6)
    assert result.se == pytest.approx(se, abs=1e-6)
    human = np.mean([row[1] for row in pairs])
    assert result.ci[0] <= human <= result.ci[1]


def test_gpt4_length_bias_against_mt_bench_experts_equals_statsmodels(pairs):
    human = np.array([row[1] for row in pairs])
    judge = np.array([row[2] for row in pairs])
    d = np.array([row[3] for row in pairs], dtype=float)
    scale = length_scale(d)
    result = length_bias(human, judge, d, scale)
    x = np.tanh(d / scale)
    n = len(pairs)
    rows = np.r_[np.zeros(n), np.ones(n)]
    design = np.column_stack([np.ones(2 * n), np.r_[x, x], rows, rows * np.r_[x, x]])
    ref = sm.GLM(np.r_[human, judge], design, family=sm.families.Binomial()).fit(
        cov_type="cluster", cov_kwds={"groups": np.r_[np.arange(n), np.arange(n)]}, use_t=True
    )  # statsmodels' small-sample factor and t(G - 1), as evalsite's fits (issue 27)
    assert result.bias == pytest.approx(ref.params[3], abs=1e-6)
    assert result.bias_ci[1] == pytest.approx(ref.conf_int(0.05)[3][1], abs=1e-9)
