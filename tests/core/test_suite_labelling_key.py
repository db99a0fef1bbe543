"""The suite's optional `labelling: {guidelines: …}` key: read when it is text, refused with
the place and the rule when it is anything else."""

from __future__ import annotations

import pytest

from evalsite.core.problems import SuiteError
from evalsite.core.suite_schema import GUIDELINES_CHARS
from evalsite.core.suites import parse_suite

SUITE = """\
suite: guided
version: 1
models: [fake/a, fake/b]
{labelling}
tasks:
  - id: t
    prompt: "Say {{{{x}}}}"
    cases: [{{id: c, vars: {{x: hi}}}}]
"""


def _parse(labelling: str):
    text = SUITE.format(labelling=labelling)
    return parse_suite(text.encode(), filename="guided.yaml", origin="upload")


def test_guidelines_are_read_and_optional():
    suite = _parse('labelling: {guidelines: "Prefer the answer that cites the policy."}')
    assert suite.guidelines == "Prefer the answer that cites the policy."
    assert _parse("").guidelines == ""


@pytest.mark.parametrize(
    ("labelling", "where", "said"),
    [
        ("labelling: {guidelines: 3}", "labelling.guidelines", "expected text, got the number 3"),
        ('labelling: {guidelines: ""}', "labelling.guidelines", "must be text of 1 to"),
        (f'labelling: {{guidelines: "{"x" * (GUIDELINES_CHARS + 1)}"}}', "labelling.guidelines",
         "must be text of 1 to 20,000 characters"),
        ("labelling: {rules: be kind}", "labelling", "unknown key 'rules'"),
        ("labelling: be kind", "labelling", "expected a mapping"),
    ],
)  # fmt: skip
def test_a_bad_labelling_value_is_refused_with_its_place(labelling, where, said):
    with pytest.raises(SuiteError) as raised:
        _parse(labelling)
    message = str(raised.value)
    assert "guided.yaml:4" in message and where in message and said in message
