"""Agreement among human labellers: the ceiling for judge–human kappa (SPEC §9).

``labels`` maps each item (a labelled pair) to ``{labeller: category}``; a labeller who did
not label an item is simply absent from its mapping.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from typing import Any, cast

from evalsite.core.stats.kappa import Kappa, cohen_kappa
from evalsite.core.stats.pairs import CATEGORIES

# item (any hashable: Mapping is invariant in its key) -> rater -> label
Labels = Mapping[Any, Mapping[str, str]]


def strict_majority(votes: Iterable[str]) -> str | None:
    """The preference of more than half the votes, else None: the human consensus of an item
    everywhere (a run's calibration, the labelling queue, the judge lab)."""
    counted = Counter(votes)
    top = counted.most_common(1)
    return top[0][0] if top and 2 * top[0][1] > sum(counted.values()) else None


def pairwise_cohen(labels: Labels, *, categories: Sequence[str] = CATEGORIES) -> dict[str, Kappa]:
    """Cohen's kappa of each two labellers over the items both labelled, keyed "x~y" with
    x < y (x is rater A). Two labellers with no item in common are left out."""
    labellers = sorted({labeller for ratings in labels.values() for labeller in ratings})
    result = {}
    for x, y in combinations(labellers, 2):
        common = [ratings for ratings in labels.values() if x in ratings and y in ratings]
        if common:
            result[f"{x}~{y}"] = cohen_kappa(
                [r[x] for r in common], [r[y] for r in common], categories=categories
            )
    return result


def fleiss_kappa(labels: Labels, *, categories: Sequence[str] = CATEGORIES) -> float | None:
    """Fleiss' kappa over the items with two or more ratings; None when there are none or
    every rating is the same category.

    Items may have different numbers of raters mᵢ: item i agrees by
    Pᵢ = Σⱼ nᵢⱼ(nᵢⱼ − 1) / (mᵢ(mᵢ − 1)), P̄ is their mean, category j's share is
    pⱼ = Σᵢ nᵢⱼ / Σᵢ mᵢ and P_e = Σⱼ pⱼ²; kappa = (P̄ − P_e) / (1 − P_e). With the same
    number of raters on every item this is exactly Fleiss (1971).
    """
    items = _item_counts(labels, categories)
    totals = [sum(column) for column in zip(*items, strict=True)] if items else []
    if sum(1 for total in totals if total) < 2:
        return None
    per_item = []
    for counts in items:
        m = sum(counts)
        per_item.append(sum(c * (c - 1) for c in counts) / (m * (m - 1)))
    observed = sum(per_item) / len(per_item)
    ratings = sum(totals)
    expected = sum((total / ratings) ** 2 for total in totals)
    return cast(float, (observed - expected) / (1 - expected))


def krippendorff_alpha(
    labels: Labels, level: str = "nominal", *, categories: Sequence[str] = CATEGORIES
) -> float | None:
    """Krippendorff's alpha for nominal data, 1 − D_o / D_e from the coincidence matrix.

    Items with fewer than two ratings are not pairable and contribute nothing. With mᵤ
    ratings on item u, nᵤ꜀ of them category c, and n꜀ = Σᵤ nᵤ꜀, n = Σ꜀ n꜀ over pairable items:
    alpha = 1 − (n − 1) · Σᵤ (mᵤ² − Σ꜀ nᵤ꜀²) / (mᵤ − 1) / (n² − Σ꜀ n꜀²).
    None when fewer than two categories occur among pairable ratings.
    """
    if level != "nominal":
        raise ValueError(f"only nominal alpha is defined for categories, not {level!r}")
    items = _item_counts(labels, categories)
    totals = [sum(column) for column in zip(*items, strict=True)] if items else []
    n = sum(totals)
    expected = n * n - sum(total * total for total in totals)
    if expected == 0:
        return None
    observed = sum((sum(c) ** 2 - sum(x * x for x in c)) / (sum(c) - 1) for c in items)
    return cast(float, 1 - (n - 1) * observed / expected)


def _item_counts(labels: Labels, categories: Sequence[str]) -> list[list[int]]:
    """Per item with two or more ratings, how many ratings fell in each category."""
    index = {category: i for i, category in enumerate(categories)}
    items = []
    for ratings in labels.values():
        if len(ratings) < 2:
            continue
        counts = [0] * len(categories)
        for label in ratings.values():
            if label not in index:
                raise ValueError(f"unknown category {label!r}; expected one of {tuple(index)}")
            counts[index[label]] += 1
        items.append(counts)
    return items
