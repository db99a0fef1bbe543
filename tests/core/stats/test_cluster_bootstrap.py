"""Issue 27: a case is the resampling unit. A case's repeats (and its two judge orders, which
one pair score already holds) are one cluster for the win-rate bootstrap, Bradley–Terry's
intervals and compare's paired bootstrap, all drawn by one resampler; copying a verdict into
more repeats buys no confidence."""

from __future__ import annotations

import numpy as np
import pytest

from evalsite.core.report import numbers as num
from evalsite.core.stats.bootstrap import bca_interval, cluster_draws, resampled_means
from evalsite.core.stats.paired import paired_bootstrap
from evalsite.core.stats.pairs import win_rate
from evalsite.core.stats.ranking import bradley_terry

TEN = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.75, 0.5, 0.0, 0.0]


def repeated(values, repeats):
    """Each value copied into ``repeats`` repeats of its case, with the case names."""
    return (
        [v for v in values for _ in range(repeats)],
        [i for i in range(len(values)) for _ in range(repeats)],
    )


@pytest.mark.parametrize("repeats", [3, 10])
def test_copied_repeats_give_the_one_repeat_win_rate_interval(repeats):
    once = win_rate(TEN, seed=4)
    scores, cases = repeated(TEN, repeats)
    copied = win_rate(scores, seed=4, clusters=cases)
    assert copied.win_rate == pytest.approx(once.win_rate, abs=1e-12)
    assert copied.ci == pytest.approx(once.ci, abs=1e-12)
    assert (copied.n, copied.cases) == (10 * repeats, 10)


def test_pairs_resampled_one_by_one_would_have_narrowed_it():
    scores, _ = repeated(TEN, 10)
    alone = win_rate(scores, seed=4)
    once = win_rate(TEN, seed=4)
    assert alone.ci[1] - alone.ci[0] < 0.6 * (once.ci[1] - once.ci[0])


def test_the_minimum_n_counts_cases_not_pairs():
    scores, cases = repeated([1.0, 0.0], 4)  # 2 cases x 4 repeats: 8 pairs
    result = win_rate(scores, seed=1, clusters=cases)
    assert result.ci is None
    assert result.no_interval == "too few cases: 2; an interval needs 8"


def test_one_case_in_eight_repeats_has_no_interval():
    result = win_rate([1.0] * 7 + [0.5], seed=1, clusters=["c"] * 8)
    assert result.ci is None and "too few cases: 1" in result.no_interval


def test_below_thirty_cases_the_interval_is_bca_and_says_few_cases():
    few = win_rate(TEN, seed=4)
    assert few.method == "bca"
    assert num.interval_or_reason(few.to_dict()).endswith(" few cases")
    many = win_rate(TEN * 3, seed=4)
    assert many.method == "percentile"
    assert num.interval_or_reason(many.to_dict()) == num.interval(many.ci)


def test_a_constant_score_prints_why_there_is_no_interval():
    result = win_rate([1.0] * 12, seed=1)
    assert result.ci is None
    assert num.interval_or_reason(result.to_dict()) == (
        "no interval (every pair scored 1: no spread to give an interval)"
    )


def test_bca_equals_scipy_on_the_same_resamples():
    stats = pytest.importorskip("scipy.stats")
    data = np.array([0.0, 0.25, 1.0, 1.0, 0.75, 0.5, 1.0, 0.0, 1.0, 1.0, 0.75, 1.0])
    ones = np.ones(data.size)
    estimates = resampled_means(data, ones, resamples=4000, seed=11)
    jackknife = (data.sum() - data) / (data.size - 1)
    ours = bca_interval(estimates, float(data.mean()), jackknife)
    # scipy's BCa formula, fed our resamples (its own draws differ)
    z0 = stats.norm.ppf((estimates < data.mean()).mean() + 0.5 * (estimates == data.mean()).mean())
    spread = jackknife.mean() - jackknife
    a = (spread**3).sum() / (6 * ((spread**2).sum()) ** 1.5)
    z = stats.norm.ppf([0.025, 0.975])
    expected = np.percentile(estimates, stats.norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z))) * 100)
    assert ours == pytest.approx(tuple(expected), abs=1e-12)


def test_the_paired_bootstrap_draws_from_the_one_resampler():
    rng = np.random.default_rng(3)
    a = rng.random(40)
    b = a + rng.normal(0.05, 0.2, 40)
    # pinned before the resampler moved into bootstrap.py: compare's figures are unchanged
    clustered = paired_bootstrap(a, b, seed=7, clusters=[i // 4 for i in range(40)])
    assert clustered.ci == pytest.approx((-0.01587815339332359, 0.058588890561722805), abs=1e-15)
    alone = paired_bootstrap(a, b, seed=7)
    assert alone.ci == pytest.approx((-0.044160390861145246, 0.08231455602055077), abs=1e-15)
    draws = np.concatenate(list(cluster_draws(10, resamples=5, seed=7)))
    assert (draws == np.random.default_rng(7).integers(0, 10, size=(5, 10))).all()


def test_bradley_terry_copied_repeats_give_the_one_repeat_intervals():
    rng = np.random.default_rng(8)
    once = [(a, b, float(rng.choice([0.0, 0.5, 1.0])))
            for _ in range(12) for a, b in (("x", "y"), ("x", "z"), ("y", "z"))]  # fmt: skip
    cases = [i // 3 for i in range(len(once))]
    first = bradley_terry(once, seed=3, clusters=cases)
    copied = bradley_terry(
        [c for c in once for _ in range(3)], seed=3, clusters=[k for k in cases for _ in range(3)]
    )
    for one, three in zip(first, copied, strict=True):
        # the same cases drawn: only the prior's pull, a third as strong, differs
        assert three.strength == pytest.approx(one.strength, abs=0.01)
        width = (three.ci[1] - three.ci[0]) / (one.ci[1] - one.ci[0])
        assert 0.8 <= width <= 1.25
        assert (three.comparisons, three.cases) == (3 * one.comparisons, one.cases)


@pytest.mark.parametrize(
    ("ci", "shown"),
    [([-0.51, 0.06], "[-0.510, 0.060]"), ([-0.85, -0.15], "[-0.850, -0.150]")],
)
def test_an_interval_prints_as_two_numbers(ci, shown):
    assert num.interval(ci) == shown


def test_the_n_is_cases_with_pairs_beside_it_when_they_differ():
    assert num.cases({"n": 30, "cases": 10}) == "10 cases (30 pairs)"
    assert num.cases({"n": 10, "cases": 10}) == "10 cases"
    assert num.cases({"n": 8, "cases": 1}) == "1 case (8 pairs)"
