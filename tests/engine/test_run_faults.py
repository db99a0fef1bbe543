"""A fault in a run's phase (scoring, judging, reporting) fails the run with its reason, once:
it is never handed out again and again (issue 13 item 3)."""

from __future__ import annotations

import pytest

from evalsite.core.suites import parse_suite
from runs.engine.runner import execute
from runs.models import PriceTable, Run
from runs.models import suites as suite_models
from runs.planning.planner import RunOptions, make_plan, store_plan
from tests.helpers.factories import make_suite_version

pytestmark = pytest.mark.django_db(transaction=True)

SCHEMA_SUITE = """\
suite: refs
version: 1
models: [fake/small, fake/large]
tasks:
  - id: shape
    prompt: "Give JSON for {{who}}."
    schema: {type: object, properties: {item: {$ref: "#/$defs/item"}}, $defs: {item: {type: string}}}
    cases: [{id: one, vars: {who: Ada}}]
"""


def planned(text: str) -> Run:
    PriceTable.objects.ensure_default()
    version = make_suite_version(text)
    loaded = parse_suite(text.encode(), filename="x.yaml", origin="upload")
    return store_plan(make_plan(version, loaded, RunOptions(fake=True)))


def test_an_exception_while_scoring_fails_the_run_with_its_reason(monkeypatch):
    run = planned(SCHEMA_SUITE)

    def broken(run):
        raise ValueError("the scorer broke")

    monkeypatch.setattr("runs.engine.judging.score_run", broken)
    run = execute(run.id)

    assert run.status == Run.Status.FAILED
    assert run.detail == "failed while judging: ValueError: the scorer broke"  # scoring opens it
    assert not Run.objects.stalled(lease_s=0).filter(pk=run.pk).exists()
    assert execute(run.id).status == Run.Status.FAILED  # a redelivered shard does nothing


def test_a_stored_suite_with_a_ref_to_nowhere_scores_schema_fail_instead_of_looping():
    """A version stored before refs were checked at validation (its stored form is read
    again when scoring starts): its answers score schema_fail, as docs/checks.md says; the
    run is not handed out again and again (tests/planning/test_stored_suite_format.py has the rest)."""
    run = planned(SCHEMA_SUITE)
    version = run.suite_version
    parsed = version.parsed
    parsed["tasks"][0]["schema"]["properties"]["item"]["$ref"] = "#/$defs/missing"
    type(version).objects.filter(pk=version.pk).update(parsed=parsed)
    suite_models.forget_read_versions()  # a process reads a version once: this one was edited

    run = execute(run.id)

    assert run.status == Run.Status.DONE
    assert not Run.objects.stalled(lease_s=0).filter(pk=run.pk).exists()
    verdicts = {answer.schema_verdict for answer in run.answers.all()}
    assert verdicts == {"schema_fail"}
