"""Coverage of the length fits' 95% intervals, the type-I error of the pass-rate test between
two runs, and the coverage of pass^k's interval, with repeats of a case (issue 27): 500
seeded data sets each. Prints the tables in docs/judging.md and docs/scoring.md.

    PYTHONPATH=. .venv/bin/python bench/coverage_length_mcnemar.py [runs]
"""

from __future__ import annotations

import sys

import numpy as np

from evalsite.core.scoring.aggregate import contestant_rates, pass_k_figures
from evalsite.core.stats.length import length_preference
from evalsite.core.stats.mcnemar import case_mcnemar
from evalsite.core.stats.paired import mcnemar_exact
from tests.core.stats.test_length_clusters import covered, repeated, sigmoid
from tests.core.stats.test_mcnemar_cases import passes

LEAN, QUALITY = 0.8, 0.3
LENGTH_SETTINGS = (
    ("90 independent pairs", 90, 1, 0.0),
    ("30 cases x 3 independent repeats", 30, 3, 0.0),
    ("30 cases x 3 correlated repeats (60% copied)", 30, 3, 0.6),
    ("30 cases x 3 identical repeats", 30, 3, 1.0),
)
TEST_SETTINGS = (
    ("30 cases x 1 repeat", 30, 1, 0.0),
    ("30 cases x 3 correlated repeats (70% copied)", 30, 3, 0.7),
    ("30 cases x 10 correlated repeats (70% copied)", 30, 10, 0.7),
)
PASS_K_SETTINGS = (
    ("20 cases x 3 attempts (BCa)", 20, 3, 3),
    ("30 cases x 3 attempts", 30, 3, 3),
    ("100 cases x 3 attempts", 100, 3, 3),
    ("30 cases x 5 attempts, k = 3", 30, 5, 3),
)


def length_coverage(runs: int) -> None:
    print("| data | slope, by case | controlled, by case | slope, pairs as units | "
          "controlled, pairs as units |\n|---|---|---|---|---|")  # fmt: skip
    for name, cases, repeats, copy in LENGTH_SETTINGS:
        rng = np.random.default_rng(27)
        hits = np.zeros(4)
        for _ in range(runs):
            differences, scores, names, _ = repeated(rng, cases, repeats, LEAN, copy, QUALITY)
            for i, by in enumerate((names, None)):
                fit = length_preference(scores, differences, cases=by)
                hits[2 * i] += covered(fit.slope_ci, LEAN)
                hits[2 * i + 1] += covered(fit.controlled_ci, sigmoid(QUALITY))
        print(f"| {name} | " + " | ".join(f"{h / runs:.1%}" for h in hits) + " |")


def type_one_error(runs: int) -> None:
    print("\n| data (no change) | test over cases | McNemar over attempts |\n|---|---|---|")
    for name, cases, repeats, copy in TEST_SETTINGS:
        rng = np.random.default_rng(27)
        names = np.repeat(np.arange(cases), repeats)
        by_case = by_attempt = 0
        for _ in range(runs):
            chance = rng.uniform(0.2, 0.9, cases)
            before = passes(rng, cases, repeats, copy, chance).tolist()
            after = passes(rng, cases, repeats, copy, chance).tolist()
            by_case += case_mcnemar(before, after, names).p_value < 0.05
            by_attempt += mcnemar_exact(before, after).p_value < 0.05
        print(f"| {name} | {by_case / runs:.1%} | {by_attempt / runs:.1%} |")


def pass_k_coverage(runs: int) -> None:
    """Each case's pass chance is uniform on [0.2, 0.9]: the true pass^k is E[p^k] and the
    true pass@k is 1 − E[(1 − p)^k]."""
    print("\n| data | pass^k interval | pass@k interval |\n|---|---|---|")
    for name, cases, attempts, k in PASS_K_SETTINGS:
        every = (0.9 ** (k + 1) - 0.2 ** (k + 1)) / ((k + 1) * 0.7)
        some = 1 - (0.8 ** (k + 1) - 0.1 ** (k + 1)) / ((k + 1) * 0.7)
        rng = np.random.default_rng(27)
        hits = [0, 0]
        for run in range(runs):
            chance = rng.uniform(0.2, 0.9, cases)
            verdicts = rng.random((cases, attempts)) < chance[:, None]
            outcomes = {((c,), "m"): row.tolist() for c, row in enumerate(verdicts)}
            figures = pass_k_figures(contestant_rates(outcomes, k=k)["m"], k, seed=run)
            hits[0] += covered(figures["pass_all_ci"], every)
            hits[1] += covered(figures["pass_any_ci"], some)
        print(f"| {name} | {hits[0] / runs:.1%} | {hits[1] / runs:.1%} |")


if __name__ == "__main__":
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    length_coverage(runs)
    type_one_error(runs)
    pass_k_coverage(runs)
