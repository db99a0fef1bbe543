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


# --- the corrected win-rate (PPI) -------------------------------------------------------------


def test_ppi_unlabelled_term_is_cluster_robust_by_case_and_copies_buy_nothing():
    from evalsite.core.stats.ppi import ppi_mean

    human, judge = [1.0, 0.0, 0.5, 1.0, 1.0, 0.0], [1.0, 0.5, 0.5, 0.75, 1.0, 0.25]
    rest = [1.0, 0.75, 0.5, 0.0, 0.25, 1.0, 0.75, 0.5]
    once = ppi_mean(human, judge, rest)
    copied, cases = repeated(rest, 5)
    clustered = ppi_mean(human, judge, copied, clusters=cases)
    assert clustered == pytest.approx(once, abs=1e-12)
    # one pair a case: ppi_py's figure (ddof 0), as before
    assert ppi_mean(human, judge, rest, clusters=range(len(rest))) == pytest.approx(once)


def test_ppi_with_few_labels_uses_a_t_quantile_and_is_clipped_to_zero_one():
    from evalsite.core.stats.ppi import Stratum, corrected_win_rate
    from evalsite.core.stats.student import t_quantile

    human = [1.0] * 11 + [0.5]
    judge = [1.0] * 12
    result = corrected_win_rate({"t": Stratum(human, judge, [1.0] * 40, 52)})
    assert result.method == "t"
    low = result.win_rate - t_quantile(0.95, 11) * result.se
    assert result.ci == pytest.approx((low, 1.0))  # the upper end clipped from above 1
    assert result.clipped is True
    text = num.interval_or_reason(result.to_dict())
    assert text.endswith(" few labels")


def test_ppi_when_everything_is_one_says_why_there_is_no_interval():
    from evalsite.core.stats.ppi import Stratum, corrected_win_rate

    result = corrected_win_rate({"t": Stratum([1.0] * 12, [1.0] * 12, [1.0] * 30, 42)})
    assert result.win_rate == 1.0 and result.ci is None
    assert result.no_interval == (
        "no spread: every labelled judgement and every judged pair scored 1"
    )


# --- judge self-consistency ---------------------------------------------------------------------


def test_self_consistency_interval_resamples_cases_and_copies_buy_nothing():
    from evalsite.core.stats.consistency import self_consistency

    rng = np.random.default_rng(6)
    agree = rng.random(40) < 0.8
    rows = [(key, "candidate", "candidate" if same else "tie") for key, same in enumerate(agree)]
    once = self_consistency(rows, 1, cases={key: key for key in range(40)}, seed=5)
    # the same pairs' repeats: 3 copies of each pair in its case, each asked again
    copied_rows = [(3 * key + r, first, again) for key, first, again in rows for r in range(3)]
    copied = self_consistency(copied_rows, 1, cases={3 * k + r: k for k in range(40)
                                                    for r in range(3)}, seed=5)  # fmt: skip
    assert copied.agreement == pytest.approx(once.agreement)
    assert copied.ci == pytest.approx(once.ci, abs=1e-12)
    assert (copied.cases, once.cases) == (40, 40)
    assert once.ci[0] < once.agreement < once.ci[1]


def test_self_consistency_that_always_agrees_says_why_there_is_no_interval():
    from evalsite.core.stats.consistency import self_consistency

    rows = [(key, "tie", "tie") for key in range(12)]
    result = self_consistency(rows, 1, seed=1)
    assert result.agreement == 1.0 and result.ci is None
    assert result.no_interval == "every extra verdict agreed: no spread to give an interval"


def test_ppi_unlabelled_variance_equals_statsmodels_cluster_robust_mean():
    sm = pytest.importorskip("statsmodels.api")
    from evalsite.core.stats.ppi import ppi_mean

    rng = np.random.default_rng(21)
    cases = np.repeat(np.arange(25), rng.integers(1, 5, 25))
    rest = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], cases.size)
    human, judge = [1.0, 0.0, 0.5, 1.0], [0.75, 0.25, 0.5, 1.0]
    fit = sm.OLS(rest, np.ones(rest.size)).fit(
        cov_type="cluster", cov_kwds={"groups": cases, "use_correction": False}
    )
    rectifier_variance = np.var(np.subtract(human, judge)) / len(human)
    _, se = ppi_mean(human, judge, rest, clusters=cases.tolist())
    assert se**2 == pytest.approx(fit.bse[0] ** 2 + rectifier_variance, rel=1e-9)
