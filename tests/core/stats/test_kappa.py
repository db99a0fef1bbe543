"""Cohen's kappa, its standard error and intervals, against scikit-learn and statsmodels."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from evalsite.core.stats.kappa import (
    bootstrap_kappa_ci,
    case_interval,
    cohen_kappa,
    confusion_matrix,
    kappa_band,
)
from evalsite.core.stats.pairs import CATEGORIES
from evalsite.core.stats.task_kappa import per_task_kappa
from tests.core.stats.reference import rated_pairs
from tests.helpers.references import cohen_kappa_score, statsmodels_kappa


def sklearn_kappa(a: list[str], b: list[str]) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # UndefinedMetricWarning where kappa is undefined
        return float(cohen_kappa_score(a, b, labels=list(CATEGORIES)))


@pytest.mark.parametrize("seed", range(80))
def test_kappa_matches_scikit_learn_on_generated_data(seed):
    humans, judges = rated_pairs(seed)
    result = cohen_kappa(humans, judges)
    expected = sklearn_kappa(humans, judges)
    if math.isnan(expected):
        assert result.kappa is None
    else:
        assert result.kappa == pytest.approx(expected, abs=1e-12)
    assert result.agreement == pytest.approx(np.mean(np.array(humans) == np.array(judges)))


@pytest.mark.parametrize(
    ("humans", "judges"),
    [
        (["tie"], ["baseline"]),  # one label, disagreeing
        (["baseline", "candidate"] * 4, ["baseline", "candidate"] * 4),  # perfect
        (["baseline", "candidate"] * 4, ["candidate", "baseline"] * 4),  # perfect disagreement
        (["baseline", "candidate", "tie", "tie", "candidate"], ["candidate"] * 5),  # constant
        (["candidate"] * 6, ["candidate"] * 5 + ["tie"]),
    ],
)
def test_edge_cases_match_scikit_learn(humans, judges):
    assert cohen_kappa(humans, judges).kappa == pytest.approx(sklearn_kappa(humans, judges))


def test_no_labels_leave_everything_undefined():
    result = cohen_kappa([], [])
    assert (result.n, result.kappa, result.p_o, result.p_e, result.agreement) == (
        0, None, None, None, None,
    )  # fmt: skip
    assert (result.se, result.ci, result.band) == (None, None, None)
    assert result.confusion == [[0, 0, 0], [0, 0, 0], [0, 0, 0]]


@pytest.mark.parametrize("n", [1, 3, 20])
def test_one_category_used_by_both_raters_is_undefined_not_zero(n):
    result = cohen_kappa(["tie"] * n, ["tie"] * n)
    assert math.isnan(sklearn_kappa(["tie"] * n, ["tie"] * n))
    assert (result.kappa, result.band, result.se, result.ci) == (None, None, None, None)
    assert (result.p_o, result.p_e, result.agreement) == (1.0, 1.0, 1.0)


def test_perfect_disagreement_keeps_its_negative_kappa():
    result = cohen_kappa(["baseline", "candidate"] * 4, ["candidate", "baseline"] * 4)
    assert (result.kappa, result.band, result.agreement) == (-1.0, "poor", 0.0)


def test_a_constant_judge_has_kappa_exactly_zero():
    humans = ["baseline", "candidate", "tie", "tie", "candidate", "baseline", "tie"]
    result = cohen_kappa(humans, ["candidate"] * 7)
    assert result.kappa == 0.0
    assert result.p_o == result.p_e == pytest.approx(2 / 7)


def test_confusion_rows_are_the_human_and_columns_the_judge():
    humans = ["baseline", "baseline", "candidate", "tie"]
    judges = ["candidate", "baseline", "tie", "tie"]
    assert cohen_kappa(humans, judges).confusion == [[1, 1, 0], [0, 0, 1], [0, 0, 1]]
    assert confusion_matrix(judges, humans) == [[1, 0, 0], [1, 0, 0], [0, 1, 1]]


def test_unknown_categories_and_unequal_lengths_are_errors():
    with pytest.raises(ValueError, match="unknown category 'left'"):
        cohen_kappa(["left"], ["tie"])
    with pytest.raises(ValueError, match="rated 2 and 1"):
        cohen_kappa(["tie", "tie"], ["tie"])


@pytest.mark.parametrize("seed", range(80))
def test_standard_error_and_interval_match_statsmodels(seed):
    humans, judges = rated_pairs(seed)
    result = cohen_kappa(humans, judges)
    if result.kappa is None:
        return
    for table in (np.array(result.confusion), np.array(result.confusion).T):  # either way round
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # statsmodels' null variance can be 0 here
            reference = statsmodels_kappa(table)
        assert result.kappa == pytest.approx(reference.kappa, abs=1e-12)
        # Compared as variances: where the variance is 0 (a constant rater) rounding leaves
        # ±1e-17, whose square root (or NaN) is statsmodels' std_kappa.
        assert result.se**2 == pytest.approx(reference.var_kappa, abs=1e-14)
        if math.isfinite(reference.std_kappa):
            low, high = max(-1.0, reference.kappa_low), min(1.0, reference.kappa_upp)
            assert result.ci == pytest.approx((low, high), abs=1e-7)


def test_the_interval_is_clipped_to_minus_one_and_one():
    result = cohen_kappa(["baseline", "candidate", "tie"] * 3, ["baseline", "candidate", "tie"] * 3)
    assert result.kappa == 1.0 and result.ci == (1.0, 1.0)
    near_perfect = cohen_kappa(
        ["baseline", "candidate"] * 3, ["baseline", "candidate"] * 2 + ["tie", "candidate"]
    )
    assert near_perfect.ci[1] == 1.0 and near_perfect.ci[0] < near_perfect.kappa


@pytest.mark.parametrize(
    ("kappa", "band"),
    [
        (None, None), (-0.01, "poor"), (0.0, "slight"), (0.2, "slight"), (0.2001, "fair"),
        (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial"), (0.8001, "almost perfect"),
        (1.0, "almost perfect"),
    ],
)  # fmt: skip
def test_landis_koch_bands_include_their_upper_bound(kappa, band):
    assert kappa_band(kappa) == band


def test_to_dict_is_plain_json():
    data = cohen_kappa(*rated_pairs(5)).to_dict()
    assert json.loads(json.dumps(data, allow_nan=False)) == data
    assert set(data) == {
        "n", "kappa", "p_o", "p_e", "agreement", "se", "ci", "band", "confusion",
    }  # fmt: skip


def test_bootstrap_interval_is_reproducible_and_near_the_asymptotic_one():
    humans, judges = agreeing_pairs(200, agree=0.7)
    first = bootstrap_kappa_ci(humans, judges, seed=11)
    assert bootstrap_kappa_ci(humans, judges, seed=11) == first
    assert bootstrap_kappa_ci(humans, judges, seed=12) != first
    asymptotic = cohen_kappa(humans, judges).ci
    assert first == pytest.approx(asymptotic, abs=0.03)


def test_bootstrap_interval_matches_plain_index_resampling():
    humans, judges = agreeing_pairs(150, agree=0.6)
    h = np.array([CATEGORIES.index(x) for x in humans])
    j = np.array([CATEGORIES.index(x) for x in judges])
    rng = np.random.default_rng(2024)
    kappas = []
    for _ in range(4000):
        pick = rng.integers(0, h.size, h.size)
        p_o = np.mean(h[pick] == j[pick])
        p_e = sum(np.mean(h[pick] == c) * np.mean(j[pick] == c) for c in range(3))
        if p_e < 1:
            kappas.append((p_o - p_e) / (1 - p_e))
    expected = np.percentile(kappas, [2.5, 97.5])
    assert bootstrap_kappa_ci(humans, judges, seed=1, resamples=4000) == pytest.approx(
        tuple(expected), abs=0.015
    )


def test_bootstrap_interval_is_none_when_it_cannot_be_defined():
    assert bootstrap_kappa_ci([], [], seed=1) is None
    assert bootstrap_kappa_ci(["tie"], ["baseline"], seed=1) is None
    assert bootstrap_kappa_ci(["tie"] * 10, ["tie"] * 10, seed=1) is None


def test_bootstrap_drops_resamples_where_kappa_is_undefined():
    # One disagreement in 30: many resamples miss it and are all "tie" on both sides.
    low, high = bootstrap_kappa_ci(["tie"] * 29 + ["baseline"], ["tie"] * 30, seed=3)
    assert -1.0 <= low <= high <= 1.0


def agreeing_pairs(n: int, *, agree: float, seed: int = 0) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed)
    humans = rng.choice(CATEGORIES, n, p=[0.4, 0.4, 0.2])
    judges = np.where(rng.random(n) < agree, humans, rng.choice(CATEGORIES, n))
    return [str(x) for x in humans], [str(x) for x in judges]


def test_per_task_kappa_shows_kappa_only_from_five_pairs_and_sorts_worst_first():
    rows = (
        [("good", "baseline", "baseline"), ("good", "candidate", "candidate")] * 3
        + [("bad", "baseline", "candidate"), ("bad", "candidate", "baseline")] * 3
        + [("small", "tie", "baseline")] * 4
        + [("small-agreeing", "tie", "tie")] * 4
        + [("one-category", "tie", "tie")] * 6
    )
    result = per_task_kappa(rows)
    assert [t.task for t in result] == ["bad", "good", "small", "one-category", "small-agreeing"]
    bad, good, small, one_category, _ = result
    assert (bad.kappa, bad.band, bad.n, bad.low_n) == (-1.0, "poor", 6, False)
    assert (good.kappa, good.band, good.agreement) == (1.0, "almost perfect", 1.0)
    assert (small.kappa, small.band, small.agreement, small.low_n) == (None, None, 0.0, True)
    assert (one_category.kappa, one_category.low_n, one_category.agreement) == (None, False, 1.0)


def test_per_task_kappa_minimum_n_is_adjustable():
    rows = [("t", "baseline", "baseline"), ("t", "candidate", "tie"), ("t", "tie", "tie")]
    (task,) = per_task_kappa(rows, min_n=3)
    assert task.kappa == pytest.approx(
        sklearn_kappa(["baseline", "candidate", "tie"], ["baseline", "tie", "tie"])
    )
    assert per_task_kappa(rows)[0].low_n is True


def _task_rows(task: str, n: int, agree: float, seed: int, repeats: int = 1) -> list[tuple]:
    """(task, human, judge, case) rows of n cases, each label copied into ``repeats``."""
    humans, judges = agreeing_pairs(n, agree=agree, seed=seed)
    pairs = enumerate(zip(humans, judges, strict=True))
    return [(task, h, j, f"{task}/c{i}") for i, (h, j) in pairs for _ in range(repeats)]


def _family(repeats: int = 1) -> list[tuple]:
    rows = _task_rows("bad", 30, 0.0, 1, repeats) + _task_rows("borderline", 20, 0.45, 2, repeats)
    for index in range(8):
        rows += _task_rows(f"good{index}", 20, 0.85, 10 + index, repeats)
    return rows


def test_a_task_below_the_floor_is_decided_after_holm_over_every_task_tested():
    """Ten tasks tested against the floor of 0.40: 'borderline' (kappa 0.00 over 20 cases)
    is below it at p=0.012 alone, not after Holm's correction for ten comparisons."""
    from scipy.stats import t as student
    from statsmodels.stats.multitest import multipletests

    result = {task.task: task for task in per_task_kappa(_family(), floor=0.4)}
    tested = [task for task in result.values() if task.p_value is not None]
    assert len(tested) == 10
    # one-sided: P(T <= (kappa - floor) / se) on cases - 1 degrees of freedom
    border = result["borderline"]
    rows = [row for row in _family() if row[0] == "borderline"]
    se = case_interval([r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows]).se
    assert border.p_value == pytest.approx(student.cdf((border.kappa - 0.4) / se, 19), abs=1e-9)
    reference = multipletests([task.p_value for task in tested], method="holm")[1]
    assert [task.p_holm for task in tested] == pytest.approx(list(reference), abs=1e-12)
    assert border.p_value < 0.025 < border.p_holm and border.below_floor is False
    assert result["bad"].below_floor is True
    assert not any(result[f"good{i}"].below_floor for i in range(8))
    assert border.cases == 20 and border.ci is not None


def test_copying_labels_into_repeats_does_not_make_a_task_below_the_floor():
    once = {t.task: t for t in per_task_kappa(_family(), floor=0.4)}
    thrice = {t.task: t for t in per_task_kappa(_family(repeats=3), floor=0.4)}
    assert thrice["borderline"].cases == 20 and thrice["borderline"].n == 60
    assert thrice["borderline"].below_floor is False
    assert thrice["borderline"].p_value == pytest.approx(once["borderline"].p_value, abs=1e-9)


def test_without_a_floor_no_task_is_tested():
    assert all(t.p_value is None and t.below_floor is None for t in per_task_kappa(_family()))
