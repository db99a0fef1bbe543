"""Active label sampling (issue 33): the sampling probability, the inverse-probability
weighted corrected win-rate against the formulas written out and against ppi_py, the
how-many-more-labels projections, and the bench's simulation at a few runs.

What ppi_py (``ppi_mean_pointestimate`` / ``ppi_mean_ci`` with ``w``) is compared on: its
weights are normalised to mean 1, so its point estimate with w = 1/π is the mean of its
"unlabelled" predictions plus Σ w(y − f)/Σ w — the Hájek rectifier. Given every pair's
judge score as its unlabelled set, it is our estimate exactly, for any weights. Its
variance takes the two samples as independent and the rectifier's as Var(w·d)/n, the
Horvitz–Thompson form; ours linearises the ratio, Σ w²(d − r̂)²/(Σ w)², and adds the
covariance of the two terms (the labelled pairs are in both). With equal weights the two
rectifier variances are equal, so there ppi_py's variance plus that covariance is ours.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalsite.core.stats import active
from evalsite.core.stats.active import FLOOR, MIDDLE, MIN_QUEUE, sampling_probability
from evalsite.core.stats.more_labels import (
    labels_for_corrected,
    labels_for_variance,
    labels_to_decide,
)
from evalsite.core.stats.ppi import (
    ESTIMATOR,
    ESTIMATOR_WEIGHTED,
    Stratum,
    corrected_win_rate,
    ppi_mean,
    ppi_weighted_mean,
)
from evalsite.core.stats.student import t_quantile

SCORES = np.array([0.0, 0.25, 0.5, 0.75, 1.0])


def weighted_task(rng, cases: int, repeats: int = 1):
    """A task of ``cases`` × ``repeats`` judged pairs (a case's repeats copy its first
    pair), a label on each with a probability of 0.3-1 that rises with the judge's doubt:
    (human, judge, π, case) of the labelled pairs, (judge, case) of the rest."""
    judge = rng.choice(SCORES, cases)
    human = np.clip(judge + rng.choice([-1.0, -0.5, 0.0, 0.0, 0.5], cases), 0, 1)
    chance = np.where((judge > 0) & (judge < 1), 0.9, 0.3)
    ids = np.repeat(np.arange(cases), repeats)
    judge, human, chance = (np.repeat(values, repeats) for values in (judge, human, chance))
    asked = rng.random(judge.size) < chance
    asked[:2] = True
    return (human[asked], judge[asked], chance[asked], ids[asked]), (judge[~asked], ids[~asked])


def by_hand(human, judge, chance, label_ids, rest, rest_ids) -> tuple[float, float]:
    """The weighted estimator and its cluster-robust se, written out from the formulas."""
    every = np.concatenate([rest, judge])
    w = 1 / np.asarray(chance)
    d = np.asarray(human) - np.asarray(judge)
    rectifier = np.sum(w * d) / np.sum(w)
    influence = (every - every.mean()) / every.size
    influence[rest.size :] += w * (d - rectifier) / np.sum(w)
    ids = np.concatenate([rest_ids, label_ids])
    per_case = np.array([influence[ids == case].sum() for case in np.unique(ids)])
    return float(every.mean() + rectifier), float(np.sqrt(np.sum(per_case**2)))


# --- the weighted estimator ---------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(8))
def test_weighted_estimate_and_se_follow_the_formulas(seed):
    rng = np.random.default_rng(seed)
    (human, judge, chance, label_ids), (rest, rest_ids) = weighted_task(rng, 80, repeats=3)
    estimate, se = ppi_weighted_mean(
        human, judge, rest, chance.tolist(), clusters=rest_ids.tolist(),
        label_clusters=label_ids.tolist(),
    )  # fmt: skip
    assert (estimate, se) == pytest.approx(by_hand(human, judge, chance, label_ids, rest,
                                                   rest_ids), abs=1e-12)  # fmt: skip


def test_stratified_weighted_figure_combines_the_tasks_as_the_classical_one_does():
    rng = np.random.default_rng(40)
    strata, parts = {}, []
    for index, cases in enumerate((120, 60, 30)):
        (human, judge, chance, label_ids), (rest, rest_ids) = weighted_task(rng, cases)
        strata[f"t{index}"] = Stratum(human, judge, rest, cases, rest_ids.tolist(),
                                      label_ids.tolist(), chance.tolist())  # fmt: skip
        parts.append((cases, by_hand(human, judge, chance, label_ids, rest, rest_ids)))
    result = corrected_win_rate(strata)
    assert result.estimator == ESTIMATOR_WEIGHTED
    assert result.win_rate == pytest.approx(sum(cases / 210 * e for cases, (e, _) in parts))
    se = math.sqrt(sum((cases / 210 * se) ** 2 for cases, (_, se) in parts))
    assert result.se == pytest.approx(se, abs=1e-12)
    assert result.variance_judge + result.variance_labels == pytest.approx(se**2)
    assert result.ci[0] < result.win_rate < result.ci[1]


@pytest.mark.parametrize("seed", range(6))
def test_the_point_estimate_is_ppi_pys_weighted_one_given_every_pair_as_unlabelled(seed):
    from ppi_py import ppi_mean_pointestimate  # a test-only dependency

    rng = np.random.default_rng(10 + seed)
    (human, judge, chance, _), (rest, _) = weighted_task(rng, 200)
    estimate, _ = ppi_weighted_mean(human, judge, rest, chance.tolist())
    every = np.concatenate([rest, judge])
    reference = ppi_mean_pointestimate(human, judge, every, lam=1, w=1 / chance)
    assert estimate == pytest.approx(float(np.squeeze(reference)), abs=1e-12)


def test_with_equal_probabilities_the_variance_is_ppi_pys_plus_the_two_terms_covariance():
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

    from evalsite.core.stats.kappa import Z_95

    rng = np.random.default_rng(3)
    (human, judge, _, _), (rest, _) = weighted_task(rng, 300)
    estimate, se = ppi_weighted_mean(human, judge, rest, [0.4] * len(human))
    every = np.concatenate([rest, judge])
    low, high = ppi_mean_ci(human, judge, every, alpha=0.05, lam=1, w=np.full(len(human), 2.5))
    d = human - judge
    covariance = np.sum((judge - every.mean()) / every.size * (d - d.mean()) / d.size)
    reference = float(np.squeeze(high - low)) / (2 * Z_95)
    assert se**2 == pytest.approx(reference**2 + 2 * covariance, rel=1e-9)
    # and against ppi_py's classical estimate (its unlabelled set the unlabelled pairs):
    # they differ by the judge's mean over every pair against over the unlabelled ones
    classical = float(np.squeeze(ppi_mean_pointestimate(human, judge, rest, lam=1)))
    assert estimate - classical == pytest.approx(every.mean() - rest.mean(), abs=1e-12)


def test_every_pair_labelled_with_probability_one_gives_the_human_mean():
    human, judge = [1.0, 0.0, 0.5, 1.0, 1.0], [0.75, 0.5, 0.5, 1.0, 0.25]
    estimate, se = ppi_weighted_mean(human, judge, [], [1.0] * 5)
    assert estimate == pytest.approx(np.mean(human))
    assert se == pytest.approx(np.std(human) / math.sqrt(5))
    assert (estimate, se) == pytest.approx(ppi_mean(human, judge, []))


def test_a_label_without_a_probability_counts_as_one():
    human, judge, rest = [1.0, 0.0, 0.5, 1.0], [0.5, 0.5, 1.0, 0.75], [1.0, 0.0, 0.5, 0.75]
    assert ppi_weighted_mean(human, judge, rest, [None, 0.5, None, 0.8]) == pytest.approx(
        ppi_weighted_mean(human, judge, rest, [1.0, 0.5, 1.0, 0.8])
    )


def test_without_any_recorded_probability_the_classical_estimator_is_used():
    rng = np.random.default_rng(5)
    (human, judge, _, _), (rest, _) = weighted_task(rng, 100)
    plain = corrected_win_rate({"t": Stratum(human, judge, rest, 100)})
    unrecorded = corrected_win_rate({"t": Stratum(human, judge, rest, 100,
                                                  probabilities=[None] * len(human))})  # fmt: skip
    assert unrecorded == plain
    assert plain.estimator == ESTIMATOR
    assert plain.win_rate == pytest.approx(ppi_mean(human, judge, rest)[0])


def test_copying_every_verdict_into_more_repeats_does_not_narrow_the_interval():
    rng = np.random.default_rng(8)
    (human, judge, chance, label_ids), (rest, rest_ids) = weighted_task(rng, 60)
    once = ppi_weighted_mean(human, judge, rest, chance.tolist(), clusters=rest_ids.tolist(),
                             label_clusters=label_ids.tolist())  # fmt: skip
    thrice = ppi_weighted_mean(
        np.repeat(human, 3), np.repeat(judge, 3), np.repeat(rest, 3),
        np.repeat(chance, 3).tolist(), clusters=np.repeat(rest_ids, 3).tolist(),
        label_clusters=np.repeat(label_ids, 3).tolist(),
    )  # fmt: skip
    assert thrice == pytest.approx(once, abs=1e-12)


def test_a_probability_outside_zero_one_is_refused():
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        ppi_weighted_mean([1.0], [0.5], [0.5], [0.0])
    with pytest.raises(ValueError, match="2 probabilities for 1"):
        ppi_weighted_mean([1.0], [0.5], [0.5], [0.5, 0.5])


# --- the sampling probability -------------------------------------------------------------------


def test_a_flip_is_always_asked_for_and_an_agreed_verdict_at_the_floor():
    big = 10 * MIN_QUEUE
    assert sampling_probability(0.5, True, pairs=big) == 1.0
    assert sampling_probability(1.0, False, pairs=big) == FLOOR
    assert sampling_probability(0.0, None, pairs=big) == FLOOR
    for middle in (0.25, 0.5, 0.75):  # a split or a tie
        assert sampling_probability(middle, False, pairs=big) == FLOOR + (1 - FLOOR) * MIDDLE
    assert 0.3 <= FLOOR < 1 and 0 < MIDDLE < 1


def test_on_a_small_run_the_floor_rises_so_the_queue_keeps_min_queue_pairs():
    assert active.floor_for(MIN_QUEUE) == 1.0
    assert sampling_probability(1.0, False, pairs=MIN_QUEUE // 2) == 1.0
    assert active.floor_for(int(MIN_QUEUE / FLOOR) * 2) == FLOOR
    between = int(MIN_QUEUE / FLOOR) - 10
    assert active.floor_for(between) == pytest.approx(MIN_QUEUE / between)
    assert between * sampling_probability(0.0, False, pairs=between) == pytest.approx(MIN_QUEUE)


def test_the_sampling_probability_refuses_what_is_not_a_pair():
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        sampling_probability(1.5, False, pairs=100)
    with pytest.raises(ValueError, match="0 judged pairs"):
        sampling_probability(0.5, False, pairs=0)


# --- how many more labels -----------------------------------------------------------------------


def test_halving_the_half_width_takes_about_four_times_the_labels():
    se2 = 0.04**2
    now = labels_for_variance(400, fixed=0.0, shrinking=se2, half_width=0.04 * 1.97)
    half = labels_for_variance(400, fixed=0.0, shrinking=se2, half_width=0.04 * 1.97 / 2)
    assert now is not None and half is not None
    assert half / now == pytest.approx(4, rel=0.02)


def test_a_judge_term_wider_than_the_target_is_unreachable_and_says_why():
    assert labels_for_variance(50, fixed=0.03**2, shrinking=0.01, half_width=0.05) is None
    figure = corrected_win_rate(
        {"t": Stratum([1.0, 0.0] * 10, [0.5] * 20, [0.0, 1.0] * 40, 100)}
    )  # 100 pairs: the judge's mean alone is about ±0.1
    wanted = labels_for_corrected(figure)
    assert wanted.more is None
    assert "the judge's own term alone is ±0.1" in wanted.why
    assert "more labels cannot narrow it" in wanted.why


def test_more_labels_for_the_corrected_interval_projects_its_two_parts():
    rng = np.random.default_rng(12)
    (human, judge, chance, _), (rest, _) = weighted_task(rng, 3000)
    human, judge, chance = human[:40], judge[:40], chance[:40]  # 40 labels of 3000 pairs
    figure = corrected_win_rate({"t": Stratum(human, judge, rest, 3000,
                                              probabilities=chance.tolist())})  # fmt: skip
    wanted = labels_for_corrected(figure, 0.08)
    total = figure.n_labelled + wanted.more
    assert 40 < total < 300  # t, not z, at these degrees of freedom

    def half(labels: int) -> float:
        shrunk = figure.variance_labels * figure.n_labelled / labels
        return t_quantile(0.95, labels - 1) * math.sqrt(figure.variance_judge + shrunk)

    assert half(total) <= 0.08 < half(total - 1)


def test_enough_to_decide_is_zero_once_the_interval_leaves_one_half():
    strong = corrected_win_rate({"t": Stratum([1.0] * 30 + [0.0] * 5, [1.0] * 35,
                                              [1.0] * 100, 135)})  # fmt: skip
    assert strong.ci[0] > 0.5
    assert labels_to_decide(strong).more == 0
    close = corrected_win_rate({"t": Stratum([1.0, 0.0] * 8 + [1.0], [0.5] * 17,
                                             [0.5] * 2000, 2017)})  # fmt: skip
    assert close.ci[0] < 0.5 < close.ci[1]
    assert labels_to_decide(close).more > 0
    even = corrected_win_rate({"t": Stratum([1.0, 0.0] * 8, [0.5] * 16, [0.5] * 200, 216)})
    assert labels_to_decide(even).why.startswith("the corrected estimate is 0.5")


def test_a_suppressed_figure_says_why_there_is_no_count():
    figure = corrected_win_rate({"t": Stratum([1.0] * 4, [0.5] * 4, [0.5] * 50, 54)})
    assert labels_for_corrected(figure).why == (
        "no corrected win-rate yet: 4 labelled pairs; the corrected win-rate needs 10"
    )


# --- the bench's simulation ---------------------------------------------------------------------


@pytest.mark.parametrize("judge", ["pair sets", "sure judge"])
def test_the_simulation_covers_the_truth_with_either_sampling(judge):
    """A smoke test of bench/active_labels.py at 60 runs (the bench runs 500): a badly
    biased estimator (the labels unweighted, say) would miss here."""
    from bench.active_labels import simulate

    (row,) = simulate(judge, runs=60, seed=5, labels=(120,))
    assert min(row.coverage) >= 0.85
    assert abs(row.error[1]) < 0.01 and abs(row.error[0]) < 0.01
    assert row.width[2] < 0.25


def test_the_simulation_is_unbiased_where_reading_the_labels_unweighted_is_not(monkeypatch):
    """A judge whose flips hide a strong human preference for the baseline: active sampling
    over-represents flips among the labels, so labels read as if drawn uniformly are off by
    about 0.05; the weights put it right."""
    import bench.active_labels as bench

    right = bench._mirror([(1.0, 0.0, 0.0), (0.6, 0.2, 0.2), (0.4, 0.2, 0.4), (0.1, 0.1, 0.8)])
    monkeypatch.setitem(bench.JUDGES, "hidden", right)
    (weighted,) = bench.simulate("hidden", runs=40, seed=9, labels=(120,))
    assert abs(weighted.error[1]) < 0.01
    plain = bench.corrected
    monkeypatch.setattr(bench, "corrected", lambda run, labelled, _: plain(run, labelled, None))
    (unweighted,) = bench.simulate("hidden", runs=40, seed=9, labels=(120,))
    assert unweighted.error[1] < -0.03
