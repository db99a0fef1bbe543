"""Bradley–Terry strengths for ``pairing: all``, with bootstrap intervals (SPEC §8, §9).

Contestant i beats j with probability πᵢ / (πᵢ + πⱼ). A comparison (a, b, s) gives b a
share s of a win and a the rest, so a tie is half a win each. Strengths are reported as
log-strengths log πᵢ centred to mean 0: i beats j with probability 1 / (1 + e^(sⱼ − sᵢ)).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from evalsite.core.stats.bootstrap import (
    FEW_CLUSTERS,
    bca_interval,
    cluster_draws,
    cluster_index,
    draw_counts,
    percentile_interval,
)
from evalsite.core.stats.record import Record

PRIOR = 0.1  # virtual tied comparisons between every two contestants
_TOLERANCE = 1e-10  # largest change of a log-strength in the last step
_MAX_ITERATIONS = 1000  # Newton needs a few dozen steps at most; this only bounds a bug


@dataclass(frozen=True)
class BTScore(Record):
    contestant: str
    strength: float  # log-strength, mean 0 over the contestants
    ci: tuple[float, float] | None  # 95% bootstrap over cases; None: see no_interval
    comparisons: int  # comparisons the contestant took part in
    cases: int = 0  # cases those comparisons came from
    no_interval: str | None = None  # why there is no interval, when there is none


def bradley_terry(
    comparisons: Sequence[tuple[str, str, float]],
    *,
    seed: int,
    clusters: Sequence[Hashable] | None = None,
    resamples: int = 1000,
    prior: float = PRIOR,
) -> list[BTScore]:
    """Strengths from (a, b, score of b against a in [0, 1]) comparisons, best first.

    Fitted by maximum likelihood (see ``_Design.fit``). Every two contestants also have
    ``prior`` (> 0) virtual comparisons, all ties: a contestant that never loses (or never
    wins) keeps a finite strength, and contestants never compared with each other still
    share a scale; against hundreds of real comparisons the pull is negligible. Intervals
    resample cases (``clusters``: each comparison's case; its own without) with all their
    comparisons, by :func:`~evalsite.core.stats.bootstrap.cluster_draws` from ``seed``;
    BCa below :data:`~evalsite.core.stats.bootstrap.FEW_CLUSTERS` cases. A contestant that
    won or lost every comparison gets no interval (its strength is held by the prior only).
    """
    if prior <= 0:
        raise ValueError("the prior must be positive, or some strengths may be infinite")
    checked = [_checked(comparison) for comparison in comparisons]
    if not checked:
        return []
    kinds = list(dict.fromkeys(checked))
    names = sorted({name for a, b, _ in kinds for name in (a, b)})
    design = _Design(kinds, names)
    labels = cluster_index(clusters, len(checked))
    per_case = np.zeros((int(labels.max()) + 1, len(kinds)))
    np.add.at(per_case, (labels, [kinds.index(c) for c in checked]), 1)  # type: ignore[arg-type]  # numpy stubs: no tuple index
    counts = per_case.sum(axis=0)
    strengths = design.fit(counts[None, :], prior)[0]
    intervals: list[tuple[float, float] | None] = [None] * len(names)
    if resamples > 0:
        intervals = _intervals(design, per_case, strengths, prior, seed, resamples)
    involved = (counts @ design.pairs).reshape(len(names), len(names)).sum(axis=1)
    present = (per_case @ design.pairs).reshape(-1, len(names), len(names)).sum(axis=2) > 0
    wins, played = counts @ design.wins, involved
    scores = []
    for i, name in enumerate(names):
        reason = _separated(name, wins[i], played[i])
        scores.append(BTScore(name, float(strengths[i]), None if reason else intervals[i],
                              int(involved[i]), int(present[:, i].sum()), reason))  # fmt: skip
    return sorted(scores, key=lambda score: (-score.strength, score.contestant))


def _intervals(
    design: _Design,
    per_case: np.ndarray,
    strengths: np.ndarray,
    prior: float,
    seed: int,
    resamples: int,
) -> list[tuple[float, float] | None]:
    m = per_case.shape[0]
    fits = np.concatenate([
        design.fit(draw_counts(drawn, m) @ per_case, prior)
        for drawn in cluster_draws(m, resamples=resamples, seed=seed)
    ])  # fmt: skip
    if m >= FEW_CLUSTERS:
        return [percentile_interval(fits[:, i]) for i in range(design.size)]
    jackknife = design.fit(per_case.sum(axis=0) - per_case, prior)
    return [
        bca_interval(fits[:, i], float(strengths[i]), jackknife[:, i]) for i in range(design.size)
    ]


def _separated(name: str, wins: float, played: float) -> str | None:
    if played and wins == played:
        return f"{name} won every comparison: its strength has no upper limit (separation)"
    if played and wins == 0:
        return f"{name} lost every comparison: its strength has no lower limit (separation)"
    return None


def _checked(comparison: tuple[str, str, float]) -> tuple[str, str, float]:
    a, b, score = comparison
    if a == b or not 0.0 <= score <= 1.0:
        raise ValueError(f"{comparison!r} is not two contestants and a score in [0, 1]")
    return a, b, float(score)


class _Design:
    """Maps counts of each distinct comparison to wins and comparison counts per contestant,
    for many count vectors (resamples) at once."""

    def __init__(self, kinds: list[tuple[str, str, float]], names: list[str]):
        index = {name: i for i, name in enumerate(names)}
        k = len(names)
        self.size = k
        self.wins = np.zeros((len(kinds), k))
        self.pairs = np.zeros((len(kinds), k * k))
        for row, (a, b, score) in enumerate(kinds):
            i, j = index[a], index[b]
            self.wins[row, i] += 1 - score
            self.wins[row, j] += score
            self.pairs[row, i * k + j] += 1
            self.pairs[row, j * k + i] += 1

    def fit(self, counts: np.ndarray, prior: float) -> np.ndarray:
        """Maximum-likelihood log-strengths θ, centred, one row per row of ``counts``.

        Newton steps on the concave log-likelihood; where a Newton step would lower it (far
        from the optimum) that row takes the MM step of Hunter (2004) instead,
        θᵢ ← θᵢ + log Wᵢ − log Σⱼ nᵢⱼ σᵢⱼ, which never does. MM alone converges linearly and
        crawls when one contestant nearly always wins. W are the wins and n the comparison
        counts, both with the virtual ties; σᵢⱼ = 1 / (1 + e^(θⱼ − θᵢ)).
        """
        k = self.size
        wins = counts @ self.wins + prior * (k - 1) / 2
        pairs = (counts @ self.pairs).reshape(-1, k, k) + prior * (1 - np.eye(k))
        theta = np.zeros_like(wins)
        for _ in range(_MAX_ITERATIONS):
            beats = 1 / (1 + np.exp(theta[:, None, :] - theta[:, :, None]))  # σᵢⱼ
            expected = (pairs * beats).sum(axis=2)
            mm = theta + np.log(wins) - np.log(expected)
            newton = theta + _newton_step(pairs * beats * beats.transpose(0, 2, 1), wins - expected)
            worse = _log_likelihood(newton, wins, pairs) < _log_likelihood(theta, wins, pairs)
            updated = np.where(worse[:, None], mm, newton)
            updated -= updated.mean(axis=1, keepdims=True)
            change = np.max(np.abs(updated - theta))
            theta = updated
            if change < _TOLERANCE:
                break
        return theta


def _newton_step(weights: np.ndarray, gradient: np.ndarray) -> np.ndarray:
    """Solve L·Δ = g, L the Laplacian of ``weights`` (minus the Hessian). L is singular along
    (1, …, 1) and g sums to 0, so L + 11ᵀ gives the solution with ΣΔ = 0."""
    k = weights.shape[-1]
    laplacian = np.eye(k) * weights.sum(axis=2)[:, :, None] - weights
    return np.linalg.solve(laplacian + 1.0, gradient[:, :, None])[:, :, 0]


def _log_likelihood(theta: np.ndarray, wins: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    together = np.logaddexp(theta[:, :, None], theta[:, None, :])
    return cast(np.ndarray, (wins * theta).sum(axis=1) - (pairs * together).sum(axis=(1, 2)) / 2)
