"""pass^k and pass@k with the unbiased combinatorial estimator when a case's attempts differ
from k, an interval over cases, and cases with fewer than k attempts left out and counted."""

from __future__ import annotations

import itertools
from dataclasses import replace
from math import comb

import numpy as np
import pytest

from evalsite.core.report.breakdown import pass_k_text
from evalsite.core.report.build import build_report
from evalsite.core.report.markdown import render_markdown
from evalsite.core.report.summary import summary_lines
from evalsite.core.scoring.aggregate import (
    contestant_rates,
    pass_at_k,
    pass_hat_k,
)
from evalsite.core.stats.pass_k import pass_k_figures
from tests.core.report.test_judge_figures import BASE, generated_run


@pytest.mark.parametrize(("n", "c", "k"), [(5, 2, 3), (10, 7, 3), (4, 4, 2), (6, 0, 1), (9, 3, 9)])
def test_the_estimators_are_the_share_of_k_subsets_of_the_attempts(n, c, k):
    """Unbiased: over every k of the n attempts, the share that has a pass (pass@k) and
    that is all passes (pass^k), which is 1 − C(n−c, k)/C(n, k) and C(c, k)/C(n, k)."""
    attempts = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(attempts, k))
    assert pass_at_k(n, c, k) == pytest.approx(sum(map(any, subsets)) / len(subsets), abs=1e-12)
    assert pass_hat_k(n, c, k) == pytest.approx(sum(map(all, subsets)) / len(subsets), abs=1e-12)
    assert pass_at_k(n, c, k) == pytest.approx(1 - comb(n - c, k) / comb(n, k), abs=1e-12)


def test_fewer_attempts_than_k_have_no_estimate():
    assert pass_at_k(2, 2, 3) is None and pass_hat_k(1, 1, 3) is None


def test_a_stopped_run_does_not_count_one_answer_as_passing_all_three():
    outcomes = {
        (("t", "a"), "m"): [True],  # stopped after 1 of 3 attempts
        (("t", "b"), "m"): [True, True, True],
        (("t", "c"), "m"): [True, False, True],
    }
    rates = contestant_rates(outcomes, k=3)["m"]
    assert (rates.cases, rates.short, rates.estimated) == (3, 1, 2)
    assert rates.pass_all_rate == pytest.approx(0.5)  # b passes all 3; c does not
    assert rates.pass_any_rate == pytest.approx(1.0)
    assert rates.answers == 7 and rates.answers_passed == 6


def test_more_attempts_than_k_use_the_estimator():
    outcomes = {(("t", "a"), "m"): [True, False, True, True, False]}
    rates = contestant_rates(outcomes, k=2)["m"]
    assert rates.pass_all_rate == pytest.approx(comb(3, 2) / comb(5, 2))
    assert rates.pass_any_rate == pytest.approx(1 - comb(2, 2) / comb(5, 2))


def test_with_k_attempts_every_case_it_is_the_share_of_cases():
    rng = np.random.default_rng(3)
    passes = rng.random((40, 3)) < 0.6
    outcomes = {((f"c{i}",), "m"): row.tolist() for i, row in enumerate(passes)}
    rates = contestant_rates(outcomes, k=3)["m"]
    assert rates.pass_all_rate == pytest.approx(passes.all(axis=1).mean())
    assert rates.pass_any_rate == pytest.approx(passes.any(axis=1).mean())
    assert (rates.pass_all, rates.pass_any) == (passes.all(axis=1).sum(), passes.any(axis=1).sum())


def plain_case_bootstrap(values, seed, resamples):
    rng = np.random.default_rng(seed)
    values = np.asarray(values, dtype=float)
    means = [values[rng.integers(0, values.size, values.size)].mean() for _ in range(resamples)]
    return np.percentile(means, [2.5, 97.5])


def test_the_interval_resamples_cases():
    rng = np.random.default_rng(9)
    outcomes = {
        ((f"c{i}",), "m"): (rng.random(int(rng.integers(3, 6))) < 0.7).tolist() for i in range(50)
    }
    rates = contestant_rates(outcomes, k=3)["m"]
    figures = pass_k_figures(rates, 3, seed=11, resamples=400)
    estimates = [pass_hat_k(len(p), sum(p), 3) for p in outcomes.values()]
    low, high = figures["pass_all_ci"]
    assert low < figures["pass_all_rate"] < high
    # the case bootstrap of the per-case estimates: same spread as a plain loop
    ref = plain_case_bootstrap(estimates, 11, 4000)
    assert (high - low) == pytest.approx(ref[1] - ref[0], rel=0.15)
    assert figures["cases"] == 50 and figures["short"] == 0 and figures["k"] == 3


def test_no_spread_gives_no_interval_and_says_why():
    outcomes = {((f"c{i}",), "m"): [True, True] for i in range(12)}
    figures = pass_k_figures(contestant_rates(outcomes, k=2)["m"], 2, seed=1)
    assert figures["pass_all_rate"] == 1.0 and figures["pass_all_ci"] is None
    assert figures["pass_all_why"] == "every case has the same estimate, 1.000: no spread"


def test_every_case_short_gives_no_rate_and_says_so():
    outcomes = {((f"c{i}",), "m"): [True] for i in range(4)}
    figures = pass_k_figures(contestant_rates(outcomes, k=3)["m"], 3, seed=1)
    assert figures["pass_all_rate"] is None and figures["pass_any_rate"] is None
    assert figures["pass_all_why"] == figures["pass_any_why"] == "no case has 3 attempts"
    assert figures["short"] == 4


def test_the_report_says_which_cases_had_too_few_attempts():
    data, _, _ = generated_run(3)  # two repeats a case
    stopped = [a for a in data.answers if not (a.case == "c0" and a.repeat == 1)]
    report = build_report(replace(data, answers=stopped, repeats=2))
    figures = report["per_contestant"][BASE]["pass_k"]
    assert (figures["k"], figures["short"]) == (2, len({a.task for a in stopped if a.case == "c0"}))
    assert figures["estimated"] == figures["cases"] - figures["short"]
    low, high = figures["pass_all_ci"]
    assert low <= figures["pass_all_rate"] <= high
    text = pass_k_text(figures)
    assert text.startswith(f"pass^2 {figures['pass_all_rate']:.3f} [")
    assert f"n={figures['estimated']} cases; {figures['short']} cases with fewer than 2 " in text
    assert "fewer than 2 attempts left out" in render_markdown(report)


def test_a_figure_without_an_interval_says_why():
    figures = pass_k_figures(contestant_rates({(("a",), "m"): [True, True]}, k=2)["m"], 2, seed=1)
    assert pass_k_text(figures) == (
        "pass^2 1.000 no interval (too few cases: 1; an interval needs 8), pass@2 1.000 no "
        "interval (too few cases: 1; an interval needs 8) (n=1 case)"
    )


def test_one_contestants_summary_leaves_short_cases_out_and_says_so():
    pk = pass_k_figures(
        contestant_rates({(("a",), "m"): [True], (("b",), "m"): [True, False]}, k=2)["m"],
        2,
        seed=1,
    )
    report = {"contestants": ["m"], "per_contestant": {"m": {"pass_k": pk}}}
    assert "  m: pass^2 0/1, pass@2 1/1; 1 case with fewer than 2 attempts left out" in (
        summary_lines(report)
    )


def test_under_thirty_cases_the_interval_is_bca_and_says_few_cases():
    outcomes = {((f"c{i}",), "m"): [i % 3 > 0, i % 2 > 0] for i in range(12)}
    figures = pass_k_figures(contestant_rates(outcomes, k=2)["m"], 2, seed=4)
    assert figures["pass_all_method"] == "bca" and figures["pass_all_ci"] is not None
    assert "few cases" in pass_k_text(figures)
