"""Many comparisons: Holm's step-down adjustment of a family of p-values.

A report that tests every task (or every tag) makes as many comparisons as it has rows,
and at 0.05 one row in twenty is "significant" by chance. Holm's adjustment keeps the
chance of any false flag in the family at the level, whatever the dependence between the
tests (the tasks of a run share a judge and contestants); Benjamini–Hochberg would bound
only the share of false flags, and only under positive dependence.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["ONE_SIDED_ALPHA", "comparisons_text", "holm"]

# A figure is called below its floor when its one-sided Holm-adjusted p is under half of
# 1 − 0.95: then, alone, its 95% interval would lie below the floor too.
ONE_SIDED_ALPHA = 0.025


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values in the order given; a None (no test) stays None and is not
    counted in the family. Equal to statsmodels' ``multipletests(p, method="holm")``."""
    tested = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    m = len(tested)
    adjusted: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(tested):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


def comparisons_text(count: int) -> str:
    """How many comparisons a list made: '12 comparisons, Holm-corrected'."""
    noun = "comparison" if count == 1 else "comparisons"
    return f"{count} {noun}, Holm-corrected"
