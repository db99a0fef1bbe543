"""The judge's rubric is rendered with the case's vars before it reaches the judge, and the
judge call's cache key is that of the rendered request: editing a var a rubric reads is a
new judge call, as editing the rubric is (docs/judging.md)."""

from __future__ import annotations

from evalsite.core.judging import PairSide, judge_config, pair_requests, pair_rubric
from evalsite.core.plan import call_hash
from evalsite.core.providers import build_provider
from evalsite.core.suites import parse_suite

SUITE = """\
suite: support
version: 1
models: [fake/small, fake/large]
judge: {model: fake/large, rubric: "Prefer the reply that helps {{customer}}."}
tasks:
  - id: reply
    prompt: "Answer this message: {{customer_message}}"
    rubric: "It must address: {{customer_message}}"
    cases:
      - id: late
        vars: {customer: Ada, customer_message: "Where is my parcel?"}
"""
SIDES = (PairSide("It ships today."), PairSide("No idea."))


def _parse(text: str = SUITE):
    return parse_suite(text.encode(), filename="s.yaml")


def _keys(suite) -> list[str]:
    fake = build_provider("fake/large", env={})
    requests = pair_requests(
        suite, "fake/large", ("reply", "late", 0), *SIDES, contestants=("fake/small", "fake/large")
    )
    return [call_hash(request, fake) for _, request in requests]


def test_the_pair_rubric_reaches_the_judge_rendered_for_the_case():
    suite = _parse()
    assert pair_rubric(suite, "reply", "late") == (
        "Prefer the reply that helps Ada.\n\nIt must address: Where is my parcel?"
    )
    assert pair_rubric(suite, "reply").startswith("Prefer the reply that helps {{customer}}.")
    fake = build_provider("fake/large", env={})
    [(_, first), _] = pair_requests(
        suite, "fake/large", ("reply", "late", 0), *SIDES, contestants=("fake/small", "fake/large")
    )
    user = fake.prepare(first).messages[-1]["content"]
    assert (
        "<rubric>\nPrefer the reply that helps Ada.\n\nIt must address: Where is my parcel?\n</rubric>"
        in user
    )
    assert "{{" not in user


def test_an_edited_var_is_a_new_judge_call_and_the_same_var_the_same_call():
    keys = _keys(_parse())
    assert _keys(_parse()) == keys
    assert _keys(_parse(SUITE.replace("customer: Ada", "customer: Bob"))) != keys


def test_a_var_edit_is_a_new_judge_call_but_not_a_new_judge_configuration():
    # kappa measures the rubric as written: a case's var is not a new judge configuration
    edited = _parse(SUITE.replace("customer: Ada", "customer: Bob"))
    assert _keys(edited) != _keys(_parse())
    assert judge_config(edited, "fake/large") == judge_config(_parse(), "fake/large")
