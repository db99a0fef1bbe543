"""A judge-lab rubric reads the pair's question as `{{question}}`, rendered per pair as
any suite's rubric is; any other placeholder refuses the lab run's suite, naming it
(docs/judge-lab.md)."""

from __future__ import annotations

import pytest

from evalsite.core.judging import pair_rubric
from evalsite.core.pairsets import LabCase, lab_suite_yaml
from evalsite.core.suites import SuiteError, parse_suite

CASES = [LabCase("pairs", "p1", "Is 7 prime?"), LabCase("pairs", "p2", "Is 9 prime?")]


def _suite(rubric: str):
    text = lab_suite_yaml("primes", CASES, judge="fake/large", rubric=rubric)
    return parse_suite(text.encode(), filename="lab-primes.yaml", origin="upload")


def test_a_lab_rubric_reads_each_pairs_question():
    suite = _suite("Prefer the answer that settles: {{question}}")
    assert pair_rubric(suite, "pairs", "p2") == "Prefer the answer that settles: Is 9 prime?"


def test_a_lab_rubric_naming_another_var_is_refused_with_the_var():
    with pytest.raises(SuiteError) as caught:
        _suite("Prefer {{expected}}")
    assert "has no var for {{expected}} (used in judge.rubric)" in str(caught.value)
