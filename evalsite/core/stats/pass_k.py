"""pass^k and pass@k as the report shows them: each rate with a bootstrap interval over
cases, or why it has none. Kept out of :mod:`evalsite.core.scoring.aggregate`, which
`evalsite validate` imports, so the estimators there need no numpy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from evalsite.core.scoring.aggregate import ContestantRates
from evalsite.core.stats.bootstrap import LEVEL, cluster_mean_interval
from evalsite.core.stats.pairs import MIN_N_FOR_INTERVAL

__all__ = ["PASS_K_RESAMPLES", "pass_k_figures"]

PASS_K_RESAMPLES = 2000


def pass_k_figures(
    rates: ContestantRates | None, k: int, *, seed: int, resamples: int = PASS_K_RESAMPLES
) -> dict[str, Any]:
    """The report's ``pass_k`` of one contestant: the rates, each with its bootstrap
    interval over cases (the per-case estimates resampled, a case at a time; BCa below 30
    cases, ``pass_all_method``), or why it has none (``pass_all_why``, ``pass_any_why``)."""
    rates = rates or ContestantRates("", 0, 0.0, 0.0, 0, 0, k)
    figures: dict[str, Any] = {
        "k": rates.k, "cases": rates.cases, "short": rates.short, "estimated": rates.estimated,
        "pass_all": rates.pass_all, "pass_any": rates.pass_any,
        "pass_all_rate": rates.pass_all_rate, "pass_any_rate": rates.pass_any_rate,
        "answers": rates.answers, "answers_passed": rates.answers_passed, "level": LEVEL,
    }  # fmt: skip
    for name, estimates in (("pass_all", rates.all_estimates), ("pass_any", rates.any_estimates)):
        ci, method, why = _case_interval(estimates, rates.k, seed, resamples)
        figures[f"{name}_ci"], figures[f"{name}_method"], figures[f"{name}_why"] = ci, method, why
    return figures


def _case_interval(
    estimates: Sequence[float], k: int, seed: int, resamples: int
) -> tuple[tuple[float, float] | None, str | None, str | None]:
    """The per-case estimates resampled a case at a time: (interval, method, why none)."""
    return cluster_mean_interval(
        np.asarray(estimates, dtype=float),
        np.arange(len(estimates)),
        seed=seed,
        resamples=resamples,
        min_n=MIN_N_FOR_INTERVAL,
        constant=lambda value: f"every case has the same estimate, {value:.3f}: no spread",
        empty=f"no case has {k} attempts",
    )
