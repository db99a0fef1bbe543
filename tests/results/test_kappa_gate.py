"""judge.calibration.min_kappa_lower_bound: read, validated, and gated on (issue 27)."""

from __future__ import annotations

import pytest

from evalsite.core.suites import SuiteError, parse_suite
from runs.results.calibration import suite_calibration
from tests.helpers.factories import make_judged_run, make_suite_version
from tests.results.test_calibration_edges import agreeing, labelled_suite


def _suite(bound: str) -> str:
    return labelled_suite(12).replace(
        "calibration: {min_kappa: 0.4, min_labels: 10}",
        f"calibration: {{min_kappa: 0.4, min_labels: 10, min_kappa_lower_bound: {bound}}}",
    )


def test_the_lower_bound_is_read_beside_min_kappa():
    suite = parse_suite(_suite("0.5").encode(), filename="suite.yaml")
    assert (suite.judge.min_kappa, suite.judge.min_kappa_lower_bound) == (0.4, 0.5)


def test_a_lower_bound_outside_zero_to_one_names_its_key():
    with pytest.raises(SuiteError) as caught:
        parse_suite(_suite("1.5").encode(), filename="suite.yaml")
    [problem] = caught.value.problems
    assert problem.path == "judge.calibration.min_kappa_lower_bound"
    assert "at most 1" in problem.message


@pytest.mark.django_db
@pytest.mark.parametrize(("bound", "status"), [("0.4", "ok"), ("0.5", "below_lower_bound")])
def test_the_headline_gate_reads_kappas_interval_over_cases(bound, status):
    """12 cases, every label agreeing with the judge: kappa 1, and its interval's lower bound
    is what 0 disagreements in 12 cases allow, 1 − (1 − 0.025^(1/12)) / ½ = 0.47."""
    version = make_suite_version(_suite(bound))
    run = make_judged_run(agreeing(12), suite_version=version)
    calibration = suite_calibration(version.suite, run)
    assert calibration["kappa"] == 1.0 and calibration["kappa_cases"] == 12
    assert calibration["kappa_ci"] == pytest.approx([0.4707, 1.0], abs=1e-4)
    assert calibration["status"] == status
    if status != "ok":
        assert (
            "[0.47, 1.00] over 12 cases has lower bound 0.47, below 0.50" in calibration["reason"]
        )
