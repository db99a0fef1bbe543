"""Bradley–Terry strengths: the known order of synthetic data, the likelihood equations, and
statsmodels' binomial GLM as the reference fit."""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest

from evalsite.core.stats.ranking import bradley_terry
from tests.helpers.references import sm

TRUE = {"alpha": 1.5, "beta": 0.5, "gamma": 0.0, "delta": -0.7, "eps": -1.3}


def synthetic(n: int, *, seed: int = 0, ties: float = 0.0) -> list[tuple[str, str, float]]:
    """Comparisons drawn from the Bradley–Terry model with strengths ``TRUE``."""
    rng = np.random.default_rng(seed)
    names = list(TRUE)
    comparisons = []
    for _ in range(n):
        a, b = (str(x) for x in rng.choice(names, 2, replace=False))
        b_wins = 1 / (1 + math.exp(TRUE[a] - TRUE[b]))
        if rng.random() < ties:
            comparisons.append((a, b, 0.5))
        else:
            comparisons.append((a, b, float(rng.random() < b_wins)))
    return comparisons


def test_recovers_the_true_order_and_strengths_of_synthetic_data():
    result = bradley_terry(synthetic(4000), seed=1, resamples=300)
    assert [s.contestant for s in result] == list(TRUE)
    mean = sum(TRUE.values()) / len(TRUE)
    for score in result:
        assert score.strength == pytest.approx(TRUE[score.contestant] - mean, abs=0.15)
        low, high = score.ci
        assert low < score.strength < high and high - low < 0.5
    assert sum(s.strength for s in result) == pytest.approx(0, abs=1e-9)


def test_one_seed_gives_one_result():
    comparisons = synthetic(500, ties=0.2)
    first = bradley_terry(comparisons, seed=7, resamples=200)
    assert bradley_terry(comparisons, seed=7, resamples=200) == first
    other = bradley_terry(comparisons, seed=8, resamples=200)
    assert [s.strength for s in other] == [s.strength for s in first]
    assert [s.ci for s in other] != [s.ci for s in first]


def glm_reference(comparisons, prior: float) -> dict[str, float]:
    """The same penalised likelihood as a binomial GLM: one row per distinct comparison with
    its score as the response, weighted by its count; the virtual ties as rows of 0.5."""
    names = sorted({name for a, b, _ in comparisons for name in (a, b)})
    rows, responses, weights = [], [], []

    def add(a: str, b: str, score: float, weight: float) -> None:
        x = np.zeros(len(names))
        x[names.index(b)], x[names.index(a)] = 1.0, -1.0
        rows.append(x[:-1])  # the last strength is fixed at 0
        responses.append(score)
        weights.append(weight)

    for (a, b, score), count in Counter(comparisons).items():
        add(a, b, score, count)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            add(a, b, 0.5, prior)
    fit = sm.GLM(
        np.array(responses), np.array(rows), family=sm.families.Binomial(), var_weights=weights
    ).fit(tol=1e-13)
    theta = np.append(fit.params, 0.0)
    return dict(zip(names, theta - theta.mean(), strict=True))


@pytest.mark.parametrize("prior", [0.1, 1.0])
def test_strengths_match_a_binomial_glm_fit_of_the_same_likelihood(prior):
    comparisons = synthetic(300, seed=3, ties=0.3) + [("eps", "alpha", 0.75)] * 4
    expected = glm_reference(comparisons, prior)
    for score in bradley_terry(comparisons, seed=1, resamples=0, prior=prior):
        assert score.strength == pytest.approx(expected[score.contestant], abs=1e-8)
        assert score.ci is None


def test_the_fit_solves_the_likelihood_equations_even_for_lopsided_data():
    comparisons = [("b", "a", 1.0)] * 5000 + [("c", "b", 1.0)] * 5000 + [("d", "c", 0.75)] * 50
    prior = 0.1
    strengths = {s.contestant: s.strength for s in bradley_terry(comparisons, seed=1, prior=prior)}
    for name in strengths:
        won = prior * (len(strengths) - 1) / 2
        expected = 0.0
        for other in strengths:
            if other != name:
                expected += prior / (1 + math.exp(strengths[other] - strengths[name]))
        for a, b, score in comparisons:
            if name in (a, b):
                other = b if name == a else a
                won += 1 - score if name == a else score
                expected += 1 / (1 + math.exp(strengths[other] - strengths[name]))
        assert won == pytest.approx(expected, rel=1e-9)


def test_a_contestant_that_never_loses_gets_a_finite_strength_and_ranks_first():
    comparisons = [("b", "a", 1.0)] * 20 + [("c", "a", 1.0)] * 20 + [("b", "c", 0.5)] * 20
    result = bradley_terry(comparisons, seed=2)
    assert result[0].contestant == "a"
    assert all(math.isfinite(s.strength) for s in result)
    # separation: a's bound would be the prior's, so it gets no interval, and says why
    assert result[0].ci is None and "won every comparison" in result[0].no_interval
    assert all(all(map(math.isfinite, s.ci)) for s in result[1:])
    data = [s.to_dict() for s in result]
    assert json.loads(json.dumps(data, allow_nan=False)) == data


def test_ties_count_as_half_a_win_each():
    result = bradley_terry([("a", "b", 0.5)] * 10, seed=1)
    assert [s.strength for s in result] == pytest.approx([0.0, 0.0])
    # A 0.75 score for b is three quarters of a win: strengths ±log(3)/2 (before the prior).
    split = {s.contestant: s.strength for s in bradley_terry([("a", "b", 0.75)] * 1000, seed=1)}
    assert split["b"] - split["a"] == pytest.approx(math.log(3), abs=1e-3)


def test_comparisons_count_each_contestant_took_part_in():
    result = bradley_terry([("a", "b", 1.0), ("b", "c", 0.0), ("a", "c", 0.5)], seed=1)
    assert {s.contestant: s.comparisons for s in result} == {"a": 2, "b": 2, "c": 2}


def test_no_comparisons_rank_nobody_and_bad_ones_are_errors():
    assert bradley_terry([], seed=1) == []
    with pytest.raises(ValueError):
        bradley_terry([("a", "a", 1.0)], seed=1)
    with pytest.raises(ValueError):
        bradley_terry([("a", "b", 1.5)], seed=1)
    with pytest.raises(ValueError, match="prior"):
        bradley_terry([("a", "b", 1.0)], seed=1, prior=0)
