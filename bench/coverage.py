"""Coverage of the win-rate, Bradley–Terry, corrected win-rate (PPI), self-consistency and
compare's paired-bootstrap intervals with repeats of a case (issue 27): 500 seeded data sets
each, 1,000 resamples an interval. Prints the table in docs/judging.md, and beside it what
resampling pairs one by one (as before issue 27) gives on the same data.

    PYTHONPATH=. .venv/bin/python bench/coverage.py [runs]
"""

from __future__ import annotations

import sys

import numpy as np

from evalsite.core.stats.pairs import win_rate
from evalsite.core.stats.ranking import bradley_terry
from tests.core.stats.test_interval_coverage import (
    SETTINGS,
    STRENGTHS,
    WIN_RATE_MEAN,
    bradley_terry_coverage,
    bradley_terry_data,
    consistency_coverage,
    covered,
    paired_coverage,
    ppi_coverage,
    ppi_small_tasks_coverage,
    win_rate_coverage,
    win_rate_data,
)


def by_pairs(runs: int, cases: int, repeats: int, copy: float) -> tuple[float, float]:
    """Win-rate and Bradley–Terry coverage resampling pairs one by one, on the same data."""
    rng = np.random.default_rng(27)
    hits = 0
    for run in range(runs):
        scores, _ = win_rate_data(rng, cases, repeats, copy)
        hits += covered(win_rate(scores, seed=run, resamples=1000).ci, WIN_RATE_MEAN)
    rng = np.random.default_rng(27)
    bt_hits = total = 0
    for run in range(runs):
        comparisons, _ = bradley_terry_data(rng, cases, repeats, copy)
        for score in bradley_terry(comparisons, seed=run, resamples=1000):
            bt_hits += covered(score.ci, STRENGTHS[score.contestant])
            total += 1
    return hits / runs, bt_hits / total


# beside the CI test's two settings, few cases: the win-rate, Bradley–Terry and
# self-consistency intervals are BCa there and print "few cases"
BENCH_SETTINGS = (*SETTINGS, ("12 cases x 3 correlated repeats", 12, 3, 0.7))


def main(runs: int) -> None:
    names = [name for name, *_ in BENCH_SETTINGS]
    print(f"| interval | {' | '.join(names)} |\n|---|" + "---|" * len(names))
    rows = {
        "win-rate (bootstrap over cases)": lambda c, r, p: win_rate_coverage(runs, c, r, p),
        "Bradley–Terry (bootstrap over cases)": lambda c, r, p: bradley_terry_coverage(
            runs, c, r, p, resamples=1000
        ),
        "corrected win-rate (PPI), 30 labels": lambda c, r, p: ppi_coverage(runs, c, r, p, 30),
        "corrected win-rate (PPI), 60 labels": lambda c, r, p: (
            ppi_coverage(runs, c, r, p, 60) if c * r > 60 else None
        ),
        "corrected win-rate (PPI), 3 tasks x 4 labels": lambda c, r, p: ppi_small_tasks_coverage(
            runs, c, r, p
        ),
        "judge self-consistency": lambda c, r, p: consistency_coverage(runs, c, r, p),
        "compare's paired bootstrap (unchanged)": lambda c, r, p: paired_coverage(runs, c, r, p),
    }
    for label, figure in rows.items():
        figures = [figure(cases, repeats, copy) for _, cases, repeats, copy in BENCH_SETTINGS]
        cells = ["–" if value is None else f"{value:.1%}" for value in figures]
        print(f"| {label} | {' | '.join(cells)} |")
    before = [by_pairs(runs, cases, repeats, copy) for _, cases, repeats, copy in BENCH_SETTINGS]
    print(f"| win-rate resampling pairs (before) | {' | '.join(f'{w:.1%}' for w, _ in before)} |")
    print(f"| Bradley–Terry resampling pairs (before) | "
          f"{' | '.join(f'{b:.1%}' for _, b in before)} |")  # fmt: skip


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 500)
