"""Human–human agreement: pairwise Cohen, Fleiss' kappa and Krippendorff's alpha."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalsite.core.stats.agreement import fleiss_kappa, krippendorff_alpha, pairwise_cohen
from evalsite.core.stats.kappa import cohen_kappa
from evalsite.core.stats.pairs import CATEGORIES
from tests.helpers.references import aggregate_raters, krippendorff, statsmodels_fleiss


def generated_labels(seed: int, *, raters: int, items: int, coverage: float = 1.0) -> dict:
    """{item: {labeller: category}}: raters who agree with a latent truth most of the time,
    each labelling an item with probability ``coverage``."""
    rng = np.random.default_rng(seed)
    truth = rng.choice(3, items, p=rng.dirichlet([2.0] * 3))
    skill = rng.uniform(0.2, 0.9, raters)
    labels: dict = {}
    for item in range(items):
        ratings = {}
        for rater in range(raters):
            if rng.random() < coverage:
                guess = truth[item] if rng.random() < skill[rater] else rng.integers(3)
                ratings[f"r{rater}"] = CATEGORIES[guess]
        labels[f"item{item}"] = ratings
    return labels


def test_pairwise_cohen_keys_sorted_names_over_common_items():
    labels = {
        1: {"zoe": "tie", "ann": "baseline", "bob": "baseline"},
        2: {"ann": "candidate", "zoe": "candidate"},
        3: {"bob": "tie", "ann": "candidate"},
        4: {"bob": "candidate", "cy": "candidate"},
    }
    result = pairwise_cohen(labels)
    assert sorted(result) == ["ann~bob", "ann~zoe", "bob~cy", "bob~zoe"]  # ann and cy: none
    assert result["ann~zoe"] == cohen_kappa(["baseline", "candidate"], ["tie", "candidate"])
    assert result["ann~bob"] == cohen_kappa(["baseline", "candidate"], ["baseline", "tie"])
    assert result["bob~cy"].n == 1


@pytest.mark.parametrize("seed", range(30))
def test_fleiss_kappa_matches_statsmodels_with_equal_raters_per_item(seed):
    raters = 2 + seed % 4
    labels = generated_labels(seed, raters=raters, items=10 + 7 * seed)
    matrix = np.array([[CATEGORIES.index(c) for c in item.values()] for item in labels.values()])
    expected = statsmodels_fleiss(aggregate_raters(matrix)[0])
    assert fleiss_kappa(labels) == pytest.approx(expected, abs=1e-12)


def test_fleiss_kappa_with_varying_raters_by_hand():
    labels = {
        1: {"a": "baseline", "b": "baseline", "c": "tie"},  # P = 2/6
        2: {"a": "candidate", "b": "candidate"},  # P = 1
        3: {"a": "tie"},  # one rating: left out
        4: {"a": "baseline", "b": "candidate", "c": "candidate", "d": "candidate"},  # P = 6/12
    }
    # P̄ = 11/18; shares 3/9, 5/9, 1/9 give P_e = 35/81; kappa = 29/92.
    assert fleiss_kappa(labels) == pytest.approx(29 / 92, abs=1e-15)


def test_fleiss_kappa_is_undefined_without_two_ratings_or_two_categories():
    assert fleiss_kappa({}) is None
    assert fleiss_kappa({1: {"a": "tie"}, 2: {"b": "baseline"}}) is None
    assert fleiss_kappa({1: {"a": "tie", "b": "tie"}, 2: {"a": "tie", "b": "tie"}}) is None


def reliability_data(labels: dict) -> np.ndarray:
    """krippendorff's (coders × units) array, NaN where a coder did not label a unit."""
    coders = sorted({coder for ratings in labels.values() for coder in ratings})
    return np.array(
        [
            [CATEGORIES.index(r[coder]) if coder in r else np.nan for r in labels.values()]
            for coder in coders
        ],
        dtype=float,
    )


@pytest.mark.parametrize("seed", range(30))
def test_krippendorff_alpha_matches_the_krippendorff_package_with_missing_labels(seed):
    labels = generated_labels(seed, raters=2 + seed % 5, items=5 + 5 * seed, coverage=0.6)
    try:
        expected = krippendorff.alpha(
            reliability_data=reliability_data(labels), level_of_measurement="nominal"
        )
    except ValueError:  # one value in the whole domain
        expected = math.nan
    result = krippendorff_alpha(labels)
    if math.isnan(expected):
        assert result is None
    else:
        assert result == pytest.approx(expected, abs=1e-12)


def test_krippendorff_alpha_reproduces_the_published_nominal_example():
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 coders, 12 units,
    # values 1–5 with gaps; nominal alpha = 0.743.
    rows = {
        "A": "1 2 3 3 2 1 4 1 2 . . .",
        "B": "1 2 3 3 2 2 4 1 2 5 . 3",
        "C": ". 3 3 3 2 3 4 2 2 5 1 .",
        "D": "1 2 3 3 2 4 4 1 2 5 1 .",
    }
    labels: dict = {unit: {} for unit in range(12)}
    for coder, values in rows.items():
        for unit, value in enumerate(values.split()):
            if value != ".":
                labels[unit][coder] = value
    alpha = krippendorff_alpha(labels, categories=("1", "2", "3", "4", "5"))
    assert round(alpha, 3) == 0.743


def test_krippendorff_alpha_ignores_items_with_one_rating():
    labels = {1: {"a": "tie", "b": "tie"}, 2: {"a": "baseline", "b": "candidate"}}
    with_singletons = {**labels, 3: {"a": "candidate"}, 4: {"b": "baseline"}}
    assert krippendorff_alpha(with_singletons) == krippendorff_alpha(labels)


def test_krippendorff_alpha_is_undefined_with_one_category_and_nominal_only():
    assert krippendorff_alpha({}) is None
    assert krippendorff_alpha({1: {"a": "tie", "b": "tie"}, 2: {"a": "tie"}}) is None
    with pytest.raises(ValueError, match="nominal"):
        krippendorff_alpha({}, level="interval")


def test_unknown_categories_are_errors():
    with pytest.raises(ValueError, match="unknown category"):
        fleiss_kappa({1: {"a": "left", "b": "tie"}})
    with pytest.raises(ValueError, match="unknown category"):
        krippendorff_alpha({1: {"a": "left", "b": "tie"}})
