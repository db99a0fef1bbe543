"""Kappa weighted by 1/π (issue 33): against scikit-learn's ``sample_weight``, exactly
today's figures with equal weights, a weight of 2 as a duplicated label, the sandwich
standard errors, and the bias active sampling leaves in unweighted kappa on the bench's
simulation."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from evalsite.core.stats.gate import HALF_WIDTH, labels_for_half_width
from evalsite.core.stats.kappa import (
    Z_95,
    bootstrap_kappa_ci,
    case_interval,
    cohen_kappa,
    confusion_matrix,
    effective_size,
)
from evalsite.core.stats.pairs import CATEGORIES
from evalsite.core.stats.task_kappa import per_task_kappa
from tests.core.stats.reference import rated_pairs
from tests.helpers.references import cohen_kappa_score


def sklearn_kappa(a: list[str], b: list[str], weights: list[float]) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # UndefinedMetricWarning where kappa is undefined
        return float(cohen_kappa_score(a, b, labels=list(CATEGORIES), sample_weight=weights))


def agreeing(seed: int, n: int = 120) -> tuple[list[str], list[str]]:
    """n (human, judge) categories agreeing about 60% beyond chance."""
    rng = np.random.default_rng(seed)
    humans = rng.choice(CATEGORIES, n, p=[0.45, 0.4, 0.15])
    judges = np.where(rng.random(n) < 0.6, humans, rng.choice(CATEGORIES, n))
    return humans.tolist(), judges.tolist()


def some_weights(seed: int, n: int) -> list[float]:
    """1/π for π of the queue's values: 1 (a flip), 0.75 (a tie or split), 0.5 (the floor)."""
    rng = np.random.default_rng([seed, 1])
    return (1 / rng.choice([1.0, 0.75, 0.5], n)).tolist()


@pytest.mark.parametrize("seed", range(60))
def test_weighted_kappa_matches_scikit_learns_sample_weight(seed):
    humans, judges = rated_pairs(seed)
    weights = some_weights(seed, len(humans))
    result = cohen_kappa(humans, judges, weights=weights)
    expected = sklearn_kappa(humans, judges, weights)
    if math.isnan(expected):
        assert result.kappa is None
    else:
        assert result.kappa == pytest.approx(expected, abs=1e-12)
    agree = np.array(humans) == np.array(judges)
    assert result.agreement == pytest.approx(np.average(agree, weights=weights))
    assert result.n == len(humans)  # n counts labels, weighted or not


def test_the_weighted_confusion_matrix_sums_the_weights_and_kappa_shows_the_counts():
    humans, judges = ["tie", "candidate", "candidate"], ["tie", "candidate", "baseline"]
    assert confusion_matrix(humans, judges, weights=[2.0, 1.0, 4 / 3]) == [
        [0.0, 0.0, 0.0],
        [4 / 3, 1.0, 0.0],
        [0.0, 0.0, 2.0],
    ]
    assert cohen_kappa(humans, judges, weights=[2.0, 1.0, 4 / 3]).confusion == [
        [0, 0, 0], [1, 1, 0], [0, 0, 1],
    ]  # fmt: skip


@pytest.mark.parametrize("seed", range(20))
def test_weights_all_one_give_todays_figures_exactly(seed):
    humans, judges = rated_pairs(seed)
    ones = [1.0] * len(humans)
    cases = [f"c{i // 3}" for i in range(len(humans))]
    assert cohen_kappa(humans, judges, weights=ones) == cohen_kappa(humans, judges)
    assert case_interval(humans, judges, cases, weights=ones) == case_interval(
        humans, judges, cases
    )
    for by_case in (cases, None):
        assert bootstrap_kappa_ci(
            humans, judges, seed=seed, resamples=200, cases=by_case, weights=ones
        ) == bootstrap_kappa_ci(humans, judges, seed=seed, resamples=200, cases=by_case)
    rows = [
        (f"t{i % 2}", h, j, c)
        for i, (h, j, c) in enumerate(zip(humans, judges, cases, strict=True))
    ]
    assert per_task_kappa(rows, floor=0.4, weights=ones) == per_task_kappa(rows, floor=0.4)


def test_equal_weights_other_than_one_change_nothing_either():
    humans, judges = rated_pairs(7)
    assert cohen_kappa(humans, judges, weights=[2.0] * len(humans)) == cohen_kappa(humans, judges)


def test_a_label_asked_for_at_one_half_counts_as_two_asked_for_certain():
    humans, judges = agreeing(3, 40)
    weights = [2.0, 1.0, 2.0] + [1.0] * 37
    doubled = [0, 2]  # the items at π = 0.5, each once more
    twice_h = humans + [humans[i] for i in doubled]
    twice_j = judges + [judges[i] for i in doubled]
    weighted, duplicated = (
        cohen_kappa(humans, judges, weights=weights),
        cohen_kappa(twice_h, twice_j),
    )
    assert weighted.kappa == pytest.approx(duplicated.kappa, abs=1e-12)
    assert weighted.p_e == pytest.approx(duplicated.p_e, abs=1e-12)
    assert weighted.n == 40 and duplicated.n == 42


def test_the_weighted_se_is_the_fleiss_cohen_everitt_one_as_the_weights_come_together():
    humans, judges = agreeing(11)
    nearly = (1 + 1e-9 * np.arange(len(humans))).tolist()  # unequal: the weighted path
    weighted, plain = cohen_kappa(humans, judges, weights=nearly), cohen_kappa(humans, judges)
    assert weighted.se == pytest.approx(plain.se, rel=1e-6)


def test_the_case_interval_with_a_label_a_case_is_the_sandwich_se_times_the_small_sample_factor():
    humans, judges = agreeing(11)
    weights = some_weights(11, len(humans))
    own = [str(i) for i in range(len(humans))]
    kappa, interval = (
        cohen_kappa(humans, judges, weights=weights),
        case_interval(humans, judges, own, weights=weights),
    )
    c = len(own)
    assert interval.se == pytest.approx(kappa.se * math.sqrt(c / (c - 1)), rel=1e-12)


def test_effective_size_is_kishs():
    assert effective_size([1.0, 1.0, 1.0]) == 3
    assert effective_size([2.0, 1.0, 1.0]) == pytest.approx(16 / 6)
    with pytest.raises(ValueError):
        effective_size([])


def test_weights_must_be_one_an_item_and_positive():
    with pytest.raises(ValueError, match="2 weights for 3 items"):
        cohen_kappa(["tie"] * 3, ["tie"] * 3, weights=[1.0, 2.0])
    with pytest.raises(ValueError, match="positive"):
        cohen_kappa(["tie"] * 2, ["tie"] * 2, weights=[1.0, 0.0])


def test_weighted_kappa_undefined_and_all_agreeing_cases_say_so():
    constant = cohen_kappa(["tie"] * 4, ["tie"] * 4, weights=[1.0, 2.0, 1.0, 2.0])
    assert constant.kappa is None and constant.p_o == 1
    humans = ["tie", "candidate", "baseline"] * 4
    agree = case_interval(humans, humans, [str(i) for i in range(12)],
                          weights=[1.0, 2.0] * 6)  # fmt: skip
    assert agree.ci is not None and agree.ci[1] == 1.0 and agree.ci[0] < 1


def test_per_task_kappa_weights_each_task_by_its_rows():
    humans, judges = agreeing(11)
    weights = some_weights(11, len(humans))
    rows = [(f"t{i % 2}", h, j) for i, (h, j) in enumerate(zip(humans, judges, strict=True))]
    tasks = {task.task: task for task in per_task_kappa(rows, weights=weights)}
    mine = [i for i in range(len(rows)) if i % 2 == 0]
    expected = sklearn_kappa([humans[i] for i in mine], [judges[i] for i in mine],
                             [weights[i] for i in mine])  # fmt: skip
    assert tasks["t0"].kappa == pytest.approx(expected, abs=1e-12)
    assert tasks["t0"].n == len(mine)


def test_labels_for_a_tenth_read_the_weighted_case_interval():
    humans, judges = agreeing(11)
    weights = some_weights(11, len(humans))
    cases = [str(i // 2) for i in range(len(humans))]
    kappa = cohen_kappa(humans, judges, weights=weights)
    interval = case_interval(humans, judges, cases, weights=weights)
    needed = labels_for_half_width(kappa, interval)
    assert needed == math.ceil((Z_95 * interval.se * math.sqrt(kappa.n) / HALF_WIDTH) ** 2)
    plain = case_interval(humans, judges, cases)
    assert needed != labels_for_half_width(cohen_kappa(humans, judges), plain)


# --- the bias active sampling leaves, on the bench's simulation ----------------------------


@pytest.mark.parametrize("judge", ["pair sets", "sure judge"])
def test_weighting_by_one_over_pi_removes_the_bias_of_active_sampling(judge):
    """60 seeded runs of bench/active_labels.py (the bench runs 500) at 120 labels: the
    active queue's labels over-represent the judge's flips, where its errors sit, so their
    unweighted kappa is well below the population's; weighted by 1/π it is not."""
    from bench.active_labels import JUDGES, population_kappa, simulate_kappa

    truth = population_kappa(JUDGES[judge])
    (row,) = simulate_kappa(judge, runs=60, seed=5, labels=(120,))
    uniform, unweighted, weighted = row.mean
    assert unweighted < truth - 0.07  # biased low
    assert abs(weighted - truth) < 0.02
    assert abs(uniform - truth) < 0.02
    assert row.coverage[2] >= 0.88 and row.coverage[1] < 0.8
