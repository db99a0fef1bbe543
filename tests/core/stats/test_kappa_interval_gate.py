"""Kappa's interval over cases, the gate that reads it, and labels needed for ±0.10."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalsite.core.stats.gate import HALF_WIDTH, headline_gate, labels_for_half_width
from evalsite.core.stats.kappa import bootstrap_kappa_ci, case_interval, cohen_kappa
from evalsite.core.stats.pairs import CATEGORIES
from tests.helpers.references import statsmodels_kappa

PI = np.array([0.35, 0.25, 0.40])


def true_kappa(accuracy: float) -> float:
    """Population kappa when the judge copies the human with probability `accuracy`."""
    joint = PI[:, None] * ((1 - accuracy) / 3 + accuracy * np.eye(3))
    p_o, p_e = np.trace(joint), joint.sum(1) @ joint.sum(0)
    return float((p_o - p_e) / (1 - p_e))


def draw(rng, cases: int, repeats: int, copy: float, accuracy: float = 0.6):
    """Labels of `cases` × `repeats`: a repeat copies its case's verdicts with prob `copy`."""
    humans, judges, ids = [], [], []
    for case in range(cases):
        first = rng.choice(3, p=PI)
        first_judge = first if rng.random() < accuracy else rng.integers(3)
        for _ in range(repeats):
            if rng.random() < copy:
                human, judge = first, first_judge
            else:
                human = rng.choice(3, p=PI)
                judge = human if rng.random() < accuracy else rng.integers(3)
            humans.append(CATEGORIES[human])
            judges.append(CATEGORIES[judge])
            ids.append(str(case))
    return humans, judges, ids


def test_one_label_a_case_is_the_fleiss_cohen_everitt_interval_of_statsmodels():
    rng = np.random.default_rng(3)
    humans, judges, ids = draw(rng, 60, 1, 0.0)
    kappa = cohen_kappa(humans, judges)
    reference = statsmodels_kappa(np.asarray(kappa.confusion))
    interval = case_interval(humans, judges, ids)
    assert interval.se == pytest.approx(reference.std_kappa * math.sqrt(60 / 59), rel=1e-9)


def test_copying_a_verdict_buys_no_confidence():
    humans, judges, ids = draw(np.random.default_rng(5), 20, 1, 0.0)
    once = case_interval(humans, judges, ids)
    thrice = case_interval(humans * 3, judges * 3, ids * 3)
    assert thrice.ci == pytest.approx(once.ci, abs=1e-12)
    boot = bootstrap_kappa_ci(humans * 3, judges * 3, seed=1, resamples=500, cases=ids * 3)
    naive = bootstrap_kappa_ci(humans * 3, judges * 3, seed=1, resamples=500)
    assert boot[1] - boot[0] > 1.3 * (naive[1] - naive[0])


def test_no_interval_says_why():
    assert case_interval(["tie"] * 4, ["tie"] * 4, list("abcd")).why_none == "kappa is undefined"
    one = case_interval(["tie", "candidate"], ["tie", "candidate"], ["a", "a"])
    assert (one.ci, one.why_none) == (None, "fewer than 2 cases")


def test_every_label_agreeing_bounds_kappa_by_the_exact_bound_on_disagreement():
    """Never a zero-width [1, 1]: 0 disagreements in 30 cases bound the rate at 11.6%."""
    same = case_interval(["tie", "candidate"] * 30, ["tie", "candidate"] * 30, list(range(30)) * 2)
    disagree = 1 - 0.025 ** (1 / 30)
    assert same.ci == pytest.approx((1 - disagree / 0.5, 1.0))


def test_the_gate_reads_the_lower_bound_of_kappas_interval():
    humans, judges, ids = draw(np.random.default_rng(11), 30, 1, 0.0, accuracy=0.7)
    kappa = cohen_kappa(humans, judges)
    interval = case_interval(humans, judges, ids)
    assert kappa.kappa > 0.4 and interval.ci[0] < 0.5
    plain = headline_gate(kappa, min_labels=10, min_kappa=0.4)
    assert plain.status == "ok"
    gate = headline_gate(kappa, min_labels=10, min_kappa=0.4, min_lower_bound=0.5,
                         interval=interval)  # fmt: skip
    assert gate.status == "below_lower_bound" and not gate.eligible
    assert f"[{interval.ci[0]:.2f}, {interval.ci[1]:.2f}] over 30 cases" in gate.reason
    low = headline_gate(kappa, min_labels=10, min_kappa=0.4, min_lower_bound=0.1,
                        interval=interval)  # fmt: skip
    assert low.status == "ok"


def test_no_interval_fails_a_lower_bound_gate_saying_why():
    kappa = cohen_kappa(["tie", "candidate"] * 6, ["tie", "candidate"] * 6)
    interval = case_interval(["tie", "candidate"] * 6, ["tie", "candidate"] * 6, ["a"] * 12)
    gate = headline_gate(kappa, min_labels=10, min_kappa=0.4, min_lower_bound=0.2,
                         interval=interval)  # fmt: skip
    assert gate.status == "below_lower_bound"
    assert "no kappa interval (fewer than 2 cases)" in gate.reason


def test_labels_needed_for_plus_minus_a_tenth_at_kappa_point_six_is_about_two_hundred():
    """The formula, then a simulation: N labels drawn at the current table's proportions give
    kappas whose central 95% spread is ±0.10."""
    rng = np.random.default_rng(2)
    humans, judges, ids = draw(rng, 400, 1, 0.0, accuracy=0.6)
    kappa = cohen_kappa(humans, judges)
    needed = labels_for_half_width(kappa, case_interval(humans, judges, ids))
    assert 0.55 < kappa.kappa < 0.65 and 150 <= needed <= 250
    cells = np.asarray(kappa.confusion, float).ravel() / kappa.n
    tables = rng.multinomial(needed, cells, size=2000).reshape(-1, 3, 3)
    n = tables.sum(axis=(1, 2))
    chance = (tables.sum(1) * tables.sum(2)).sum(1)
    kappas = (n * np.trace(tables, axis1=1, axis2=2) - chance) / (n * n - chance)
    low, high = np.percentile(kappas, [2.5, 97.5])
    assert (high - low) / 2 == pytest.approx(HALF_WIDTH, abs=0.012)


@pytest.mark.parametrize(("cases", "repeats", "copy"), [(30, 3, 0.8), (90, 1, 0.0)])
def test_kappas_interval_covers_with_correlated_repeats_and_independent_data(cases, repeats, copy):
    """Seeded, 200 data sets (a second or two); the bench runs 500 and holds 93%."""
    rng = np.random.default_rng(27)
    truth = true_kappa(0.6)
    hits = 0
    for _ in range(200):
        interval = case_interval(*draw(rng, cases, repeats, copy))
        hits += interval.ci is not None and interval.ci[0] <= truth <= interval.ci[1]
    assert hits / 200 >= 0.90
