"""Length-aware judging: the fits against statsmodels' GLM."""

from __future__ import annotations

import numpy as np
import pytest

from evalsite.core.stats.length import (
    BIAS_MARGIN,
    length_bias,
    length_covariate,
    length_preference,
    length_scale,
    logistic_fit,
)
from tests.helpers.references import sm

SCORES = np.array([0.0, 0.25, 0.5, 0.75, 1.0])


def judged(rng, n: int, lean: float, quality: float = 0.0):
    """Length differences (tokens) and pair scores from a judge whose log-odds rise by
    `lean` per typical difference."""
    differences = rng.normal(0, 120, n).round()
    x = np.tanh(differences / differences.std(ddof=1))
    p = 1 / (1 + np.exp(-(quality + lean * x)))
    scores = rng.binomial(4, p) / 4
    return differences, scores


def statsmodels_fit(design, outcome, **fit):
    return sm.GLM(outcome, design, family=sm.families.Binomial()).fit(**fit)


@pytest.mark.parametrize("seed", range(8))
def test_length_fit_equals_statsmodels_glm_with_robust_errors(seed):
    """Without cases each pair is its own cluster: statsmodels' cluster-robust GLM with
    its small-sample factor and t intervals (tests/core/stats/test_length_clusters.py
    clusters by case)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(30, 800))
    differences, scores = judged(rng, n, float(rng.uniform(-1, 2)))
    result = length_preference(scores, differences)
    x = length_covariate(differences, length_scale(differences))
    ref = statsmodels_fit(
        sm.add_constant(x), scores, cov_type="cluster", cov_kwds={"groups": np.arange(n)},
        use_t=True,
    )  # fmt: skip
    (a, b), ci = ref.params, ref.conf_int(0.05)
    assert result.slope == pytest.approx(b, abs=1e-9)
    assert result.slope_ci == pytest.approx(tuple(ci[1]), abs=1e-9)
    assert result.controlled == pytest.approx(1 / (1 + np.exp(-a)), abs=1e-9)
    low = 1 / (1 + np.exp(-ci[0][0]))
    assert result.controlled_ci[0] == pytest.approx(low, abs=1e-9)


def test_a_judge_with_no_length_lean_has_a_slope_near_zero():
    differences, scores = judged(np.random.default_rng(3), 3000, 0.0, quality=0.4)
    result = length_preference(scores, differences)
    assert result.slope_ci[0] < 0 < result.slope_ci[1]
    assert result.controlled == pytest.approx(1 / (1 + np.exp(-0.4)), abs=0.03)


def test_the_controlled_win_rate_removes_a_planted_length_lean():
    """Candidates that write longer and a judge that likes length: the raw win-rate is
    high, the rate at equal length is the planted quality."""
    rng = np.random.default_rng(11)
    differences = rng.normal(150, 100, 4000).round()
    x = np.tanh(differences / differences.std(ddof=1))
    scores = rng.binomial(4, 1 / (1 + np.exp(-(0.0 + 1.5 * x)))) / 4
    result = length_preference(scores, differences)
    assert scores.mean() > 0.7
    assert result.controlled_ci[0] < 0.5 < result.controlled_ci[1]


@pytest.mark.parametrize("seed", range(6))
def test_length_bias_equals_statsmodels_glm_clustered_by_item(seed):
    rng = np.random.default_rng(50 + seed)
    n = int(rng.integers(15, 300))
    differences = rng.normal(0, 100, n).round()
    x = np.tanh(differences / 100)
    human = rng.choice([0.0, 0.5, 1.0], n, p=[0.35, 0.2, 0.45])
    judge = np.clip(human + 0.3 * x + rng.normal(0, 0.2, n), 0, 1)
    judge = SCORES[np.abs(judge[:, None] - SCORES).argmin(axis=1)]
    result = length_bias(human, judge, differences, 100.0)
    rows = np.r_[np.zeros(n), np.ones(n)]
    design = np.column_stack([np.ones(2 * n), np.r_[x, x], rows, rows * np.r_[x, x]])
    ref = statsmodels_fit(
        design,
        np.r_[human, judge],
        cov_type="cluster",
        cov_kwds={"groups": np.r_[np.arange(n), np.arange(n)]},
        use_t=True,
    )
    assert result.bias == pytest.approx(ref.params[3], abs=1e-6)
    assert result.human_slope == pytest.approx(ref.params[1], abs=1e-6)
    assert result.bias_ci == pytest.approx(tuple(ref.conf_int(0.05)[3]), abs=1e-9)
    assert result.warning == (ref.params[3] > BIAS_MARGIN and result.bias_ci[0] > 0)


def test_a_judge_that_loves_length_more_than_humans_is_warned_about():
    rng = np.random.default_rng(9)
    n = 400
    differences = rng.normal(0, 100, n).round()
    x = np.tanh(differences / 100)
    human = rng.binomial(1, 0.5, n).astype(float)
    judge = rng.binomial(4, 1 / (1 + np.exp(-2.0 * x))) / 4
    result = length_bias(human, judge, differences, 100.0)
    assert result.warning and result.bias > BIAS_MARGIN


def test_suppressed_with_reasons():
    assert length_preference([0.5] * 5, [1, 2, 3, 4, 5]).suppressed == (
        "5 cases (5 judged pairs); the length fit needs 20 cases"
    )
    assert "do not differ" in length_preference([0.5, 1.0] * 15, [10] * 30).suppressed
    assert "separate" in length_preference([1.0] * 30, list(range(30))).suppressed
    assert length_bias([1.0] * 4, [1.0] * 4, [1, 2, 3, 4], 1.0).suppressed == (
        "4 labelled cases (4 labelled pairs); the comparison with humans needs 10 cases"
    )


def test_logistic_fit_returns_none_when_separated():
    design = np.column_stack([np.ones(6), [-3, -2, -1, 1, 2, 3]])
    assert logistic_fit(design, np.array([0, 0, 0, 1, 1, 1.0])) is None
