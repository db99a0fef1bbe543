"""The change in pass rate between two runs tested with the case as the unit: McNemar's exact
test when each case has one unit (against statsmodels), the exact sign-flip test over cases
with repeats (against scipy's permutation test), and its type-I error with correlated
repeats."""

from __future__ import annotations

import numpy as np
import pytest

from evalsite.core.report.pairing import significance_lines
from evalsite.core.stats.mcnemar import MCNEMAR, SIGN_FLIP, case_mcnemar
from tests.helpers.references import mcnemar, permutation_test


def table(before, after):
    return [
        [np.sum(before & after), np.sum(before & ~after)],
        [np.sum(~before & after), np.sum(~before & ~after)],
    ]


@pytest.mark.parametrize("seed", range(10))
def test_one_unit_a_case_is_mcnemars_exact_test(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 5, 20, 80, 400]))
    before = rng.random(n) < 0.7
    after = np.where(rng.random(n) < rng.uniform(0.5, 1), before, rng.random(n) < 0.5)
    result = case_mcnemar(before.tolist(), after.tolist(), [f"c{i}" for i in range(n)])
    assert result.p_value == pytest.approx(
        mcnemar(table(before, after), exact=True).pvalue, abs=1e-9
    )
    assert (result.test, result.cases, result.n) == (MCNEMAR, n, n)
    assert case_mcnemar(before.tolist(), after.tolist()).p_value == result.p_value


def passes(rng, cases, repeats, copy, rate=None):
    """One run: each case's pass chance drawn once; each repeat copies repeat 0's verdict with
    probability ``copy``."""
    chance = rng.uniform(0.2, 0.9, cases) if rate is None else rate
    verdicts = rng.random((cases, repeats)) < chance[:, None]
    copied = rng.random((cases, repeats)) < copy
    return np.where(copied, verdicts[:, :1], verdicts).ravel()


@pytest.mark.parametrize("seed", range(8))
def test_with_repeats_it_is_the_exact_sign_flip_test_over_cases(seed):
    rng = np.random.default_rng(100 + seed)
    cases, repeats = int(rng.integers(3, 15)), int(rng.integers(2, 5))
    chance = rng.uniform(0.2, 0.9, cases)
    before = passes(rng, cases, repeats, 0.5, chance)
    after = passes(rng, cases, repeats, 0.5, chance)
    names = np.repeat([f"c{c}" for c in range(cases)], repeats).tolist()
    result = case_mcnemar(before.tolist(), after.tolist(), names)
    differences = (after.astype(int) - before.astype(int)).reshape(cases, repeats).sum(axis=1)
    ref = permutation_test(
        (differences,), np.sum, permutation_type="samples", n_resamples=np.inf
    ).pvalue
    assert result.test == SIGN_FLIP and (result.cases, result.n) == (cases, cases * repeats)
    assert result.p_value == pytest.approx(min(1.0, ref), abs=1e-9)
    assert (result.lost, result.gained) == (table(before, after)[0][1], table(before, after)[1][0])


def test_copied_verdicts_do_not_make_a_change_significant():
    """Ten cases, 3 passes to 7: the same p whether each verdict is seen once or copied
    into ten repeats (McNemar over attempts: p=0.34 once, 0.0005 copied)."""
    before = [c < 3 for c in range(10)]
    after = [c < 7 for c in range(10)]
    once = case_mcnemar(before, after, list(range(10)))
    copied = case_mcnemar(
        np.repeat(before, 10).tolist(), np.repeat(after, 10).tolist(), np.repeat(range(10), 10)
    )
    assert once.p_value == pytest.approx(copied.p_value, abs=1e-12)
    assert mcnemar([[30, 0], [40, 30]], exact=True).pvalue < 0.001


def test_type_one_error_with_correlated_repeats_is_near_five_percent():
    """Seeded, 400 pairs of runs with no change, 30 cases × 3 repeats that copy verdicts:
    the test over cases rejects at most 6.5% at 0.05 (bench/coverage_length_mcnemar.py runs
    more); McNemar over attempts rejects about four times as often."""
    rng = np.random.default_rng(27)
    names = np.repeat(np.arange(30), 3)
    by_case = by_attempt = 0
    runs = 400
    for _ in range(runs):
        chance = rng.uniform(0.2, 0.9, 30)
        before, after = passes(rng, 30, 3, 0.7, chance), passes(rng, 30, 3, 0.7, chance)
        by_case += case_mcnemar(before.tolist(), after.tolist(), names).p_value < 0.05
        by_attempt += mcnemar(table(before, after), exact=True).pvalue < 0.05
    assert by_case / runs <= 0.065
    assert by_attempt / runs > 0.10


def test_the_compare_line_names_the_test_and_counts_cases():
    entry = case_mcnemar([True, False] * 6, [True, True] * 6, np.repeat(range(4), 3)).to_dict()
    paired = {"level": 0.95, "win": {}, "score": {}, "passed": {"m": {"overall": entry}}}
    (line,) = [line for line in significance_lines(paired) if "pass rate" in line]
    assert "sign-flip test over cases" in line and "n=4 cases (12 units)" in line
