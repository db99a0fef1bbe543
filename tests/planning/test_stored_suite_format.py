"""A stored suite reads back as it was stored (issue 25 items 5 and 20).

A version's document is stored as JSON; it was read back by writing it out with
``json.dumps`` and parsing that text as YAML 1.1, which reads ``1e-05`` as text. A suite
with ``temperature: 0.00001`` then broke its page for everyone and failed a paid run while
judging. The document is now read as the JSON values it is. And a stored task schema whose
``$ref`` points nowhere (edited in the database) is a ``schema_fail``, as docs/checks.md
says, not a page that answers 500 or a failed run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import TestCase
from django.urls import reverse

from evalsite.core.datasource import with_source_cases
from evalsite.core.suites import load_suite, parse_suite
from runs.engine.runner import execute
from runs.models import Answer, PriceTable, Run, Suite, SuiteVersion
from runs.models import suites as suite_models
from tests.engine.test_run_faults import SCHEMA_SUITE, planned
from tests.helpers.factories import make_suite_version, make_user, run_command

TINY = """\
suite: tiny-decimals
version: 1
models: [fake/small, fake/large]
defaults: {temperature: 0.00001}
limits: {max_cost_usd: 0.00005}
report: {mover_threshold: 0.00001, frontier_points: 0.000001}
judge: {model: fake/large, temperature: 0.000001}
tasks:
  - id: greet
    prompt: "Say hello to {{who}}."
    grade: {rubric: "Is it friendly?"}
    cases: [{id: one, vars: {who: Ada}}]
"""


def _dangle(version: SuiteVersion) -> SuiteVersion:
    """The version as an admin who edited its schema's ref in the database left it."""
    parsed = version.parsed
    parsed["tasks"][0]["schema"]["properties"]["item"]["$ref"] = "#/$defs/missing"
    SuiteVersion.objects.filter(pk=version.pk).update(parsed=parsed)
    suite_models.forget_read_versions()  # a process reads a version once: this one was edited
    return SuiteVersion.objects.get(pk=version.pk)


class StoredNumbersTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        PriceTable.objects.ensure_default()
        cls.user = make_user()

    def setUp(self):
        self.client.force_login(self.user)

    def test_tiny_decimals_read_back_as_the_numbers_stored(self):
        suite = make_suite_version(TINY).core_suite()
        assert suite.defaults["temperature"] == 0.00001
        assert suite.max_cost_usd == 0.00005
        assert suite.mover_threshold == 0.00001
        assert suite.frontier_points == 0.000001
        assert suite.judge.temperature == 0.000001

    def test_a_suite_with_tiny_decimals_registered_through_the_web_shows_its_page(self):
        response = self.client.post(reverse("suite_new"), {"yaml_text": TINY})
        assert response.status_code == 302
        page = self.client.get(reverse("suite_detail", args=["tiny-decimals"]))
        assert page.status_code == 200
        assert b"tiny-decimals" in page.content

    def test_a_row_written_the_old_way_still_reads(self):
        """A row as the code before this change wrote it: the parsed document in the JSON
        column, the YAML text beside it (nothing about storing changed, so no migration)."""
        loaded = parse_suite(TINY.encode(), filename="tiny.yaml", origin="upload")
        suite = Suite.objects.create(name=loaded.name)
        version = SuiteVersion.objects.create(
            suite=suite,
            sha256=loaded.sha256,
            yaml_text=TINY,
            parsed=loaded.stored_dict(),
            origin=SuiteVersion.Origin.UPLOAD,
        )
        again = SuiteVersion.objects.get(pk=version.pk)
        assert again.core_suite().defaults["temperature"] == 0.00001
        page = self.client.get(reverse("suite_detail", args=[suite.name]))
        assert page.status_code == 200

    def test_the_stored_reading_keeps_the_hash_it_had(self):
        """What a stored suite's hash covers is unchanged: the JSON of its document."""
        version = make_suite_version(SCHEMA_SUITE)
        data = json.dumps(version.parsed).encode()
        before = parse_suite(data, filename="x", origin="upload").sha256
        assert version.core_suite().sha256 == before


class DanglingStoredSchemaTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        PriceTable.objects.ensure_default()
        cls.user = make_user()
        cls.version = _dangle(make_suite_version(SCHEMA_SUITE))

    def test_its_suite_page_answers(self):
        self.client.force_login(self.user)
        page = self.client.get(reverse("suite_detail", args=["refs"]))
        assert page.status_code == 200

    def test_its_stored_suite_reads(self):
        suite = self.version.core_suite()
        assert suite.tasks[0].schema["properties"]["item"]["$ref"] == "#/$defs/missing"


@pytest.mark.django_db(transaction=True)
def test_a_run_of_a_stored_schema_with_a_dangling_ref_gives_schema_fail():
    run = planned(SCHEMA_SUITE)
    _dangle(run.suite_version)

    run = execute(run.id)

    assert run.status == Run.Status.DONE
    verdicts = set(Answer.objects.filter(run=run).values_list("schema_verdict", flat=True))
    assert verdicts == {"schema_fail"}
    errors = set(Answer.objects.filter(run=run).values_list("schema_error", flat=True))
    assert errors == {"task schema error: $ref '#/$defs/missing' points to nothing in this schema"}


@pytest.mark.django_db(transaction=True)
def test_evalsite_run_of_a_suite_with_tiny_decimals_is_judged(tmp_path: Path):
    PriceTable.objects.ensure_default()
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)

    code, out, err = run_command("run", str(path), "--fake", "--max-cost", "1")

    assert code == 0, err
    run = Run.objects.get()
    assert run.status == Run.Status.DONE
    assert "1e-05" not in err


def test_a_suite_with_a_datasource_and_tiny_decimals_reads_its_cases(tmp_path: Path):
    """The suite with its datasource's cases inlined is read as values too (it was written
    out as JSON and read as YAML, so the run stopped at `expected a number`)."""
    (tmp_path / "tiny_decimal_cases.py").write_text(
        "def cases():\n    return [{'id': 'one', 'vars': {'who': 'Ada'}}]\n"
    )
    text = TINY.replace(
        "cases: [{id: one, vars: {who: Ada}}]",
        'cases_from: {python: "tiny_decimal_cases:cases"}',
    )
    (tmp_path / "suite.yaml").write_text(text)

    full = with_source_cases(load_suite(tmp_path / "suite.yaml"), tmp_path)

    assert full.defaults["temperature"] == 0.00001
    assert [case.id for case in full.tasks[0].cases] == ["one"]


class UnreadableStoredVersionTests(TestCase):
    """A stored version that no longer reads at all (an admin edited the database: a python
    check added to an upload, a task id made invalid) shows its page with the problems and
    refuses a run, for everyone, instead of a 500."""

    @classmethod
    def setUpTestData(cls):
        PriceTable.objects.ensure_default()
        cls.user = make_user()
        version = make_suite_version(SCHEMA_SUITE)
        parsed = version.parsed
        parsed["tasks"][0]["checks"] = [{"python": "checks:ok"}]
        SuiteVersion.objects.filter(pk=version.pk).update(parsed=parsed)
        suite_models.forget_read_versions()
        cls.version = SuiteVersion.objects.get(pk=version.pk)

    def setUp(self):
        self.client.force_login(self.user)

    def test_its_page_answers_with_what_is_wrong(self):
        page = self.client.get(reverse("suite_detail", args=[self.version.suite.name]))
        assert page.status_code == 200
        assert b"no longer reads" in page.content
        assert b"python" in page.content

    def test_a_run_of_it_is_refused_with_the_reason(self):
        url = reverse("run_new", args=[self.version.suite.name, self.version.sha256])
        response = self.client.post(url, {"models": ["fake/small", "fake/large"]})
        assert response.status_code in (200, 400)
        assert Run.objects.count() == 0
