"""Coverage of kappa's 95% intervals with repeats of a case (issue 27): 500 seeded data sets
each, a judge with kappa 0.6 over three categories. Prints the table in docs/judging.md.

    PYTHONPATH=. .venv/bin/python bench/coverage_kappa.py [runs]
"""

from __future__ import annotations

import sys

import numpy as np

from evalsite.core.stats.gate import labels_for_half_width
from evalsite.core.stats.kappa import bootstrap_kappa_ci, case_interval, cohen_kappa
from tests.core.stats.test_kappa_interval_gate import draw, true_kappa

SETTINGS = (
    ("30 cases x 3 correlated repeats", 30, 3, 0.8),
    ("90 independent labels", 90, 1, 0.0),
    ("30 independent labels", 30, 1, 0.0),
)


def coverage(runs: int) -> None:
    truth = true_kappa(0.6)
    print("| data | case interval | case bootstrap |\n|---|---|---|")
    for name, cases, repeats, copy in SETTINGS:
        rng = np.random.default_rng(27)
        inside = boot_inside = 0
        for run in range(runs):
            humans, judges, ids = draw(rng, cases, repeats, copy)
            ci = case_interval(humans, judges, ids).ci
            inside += ci is not None and ci[0] <= truth <= ci[1]
            boot = bootstrap_kappa_ci(humans, judges, seed=run, resamples=1000, cases=ids)
            boot_inside += boot is not None and boot[0] <= truth <= boot[1]
        print(f"| {name} | {inside / runs:.1%} | {boot_inside / runs:.1%} |")


def half_widths() -> None:
    print("\n| kappa | labels needed for ±0.10 | simulated half-width |\n|---|---|---|")
    rng = np.random.default_rng(1)
    for accuracy in (0.4, 0.6, 0.8):
        humans, judges, ids = draw(rng, 2000, 1, 0.0, accuracy=accuracy)
        kappa = cohen_kappa(humans, judges)
        needed = labels_for_half_width(kappa, case_interval(humans, judges, ids))
        cells = np.asarray(kappa.confusion, float).ravel() / kappa.n
        tables = rng.multinomial(needed, cells, size=4000).reshape(-1, 3, 3)
        n = tables.sum(axis=(1, 2))
        chance = (tables.sum(1) * tables.sum(2)).sum(1)
        kappas = (n * np.trace(tables, axis1=1, axis2=2) - chance) / (n * n - chance)
        low, high = np.percentile(kappas, [2.5, 97.5])
        print(f"| {kappa.kappa:.2f} | {needed} | ±{(high - low) / 2:.3f} |")


if __name__ == "__main__":
    coverage(int(sys.argv[1]) if len(sys.argv) > 1 else 500)
    half_widths()
