"""The suite a process registered is the parse its version hands back (issue 31).

`evalsite run FILE` read and validated the file, then registered it as a version; scoring and
the report asked that version for its suite, and it parsed the stored document a second time
(3.5 s of a 50,000-case run). The version now keeps the file's parse, made to read as the
stored one does (:func:`~evalsite.core.suites.as_stored`), where the two are the same suite:
these tests prove them equal for every example suite and a generated bench suite, and that it
is not kept where they may differ.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path

import pytest
from django.db import connection
from django.test import TestCase

from bench.database import SuiteShape, write_suite
from evalsite.core.datasource import with_source_cases
from evalsite.core.suites import Suite, SuiteError, load_suite, parse_suite
from runs.models import PriceTable, Run, SuiteVersion
from runs.models import suites as suite_models
from tests.helpers.factories import run_command

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SUITES = sorted(p for p in EXAMPLES.rglob("*.yaml") if ".replies." not in p.name)


def _registered(path: Path) -> tuple[SuiteVersion, bool, Suite]:
    loaded = with_source_cases(load_suite(path), path.resolve().parent)
    version, created = SuiteVersion.objects.register_file(path, loaded)
    return version, created, loaded


def _kept(version: SuiteVersion) -> Suite:
    """The version's suite, refused if getting it parses the stored document."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(SuiteVersion, "_parse", _no_second_parse)
        return version.core_suite()


def _no_second_parse(self):
    raise AssertionError("the stored document was parsed again")


def _stored(version: SuiteVersion) -> Suite:
    """The version's suite as any other process reads it: parsed from its row."""
    suite_models.forget_read_versions()
    return SuiteVersion.objects.get(pk=version.pk).core_suite()


def _assert_same(version: SuiteVersion) -> None:
    """The kept suite is the parse of the stored document this process holds (what it
    parsed before), and of the row as any process reads it back."""
    kept = _kept(version)
    _assert_equal(kept, version._parse())
    stored = _stored(version)
    if connection.vendor == "postgresql":
        # jsonb gives keys back in its own order, and a stored parse's hash is that of the
        # JSON text read back: the registering process and the rest differ there, as before.
        stored = dataclasses.replace(stored, sha256=kept.sha256)
    _assert_equal(kept, stored)


def _assert_equal(kept: Suite, stored: Suite) -> None:
    assert kept == stored  # every field the dataclasses compare, tasks and cases included
    assert kept.media == stored.media and kept.warnings == stored.warnings == ()
    assert kept.to_dict() == stored.to_dict()
    if connection.vendor == "sqlite":  # PostgreSQL's jsonb gives its keys back in its order
        assert json.dumps(kept.to_dict()) == json.dumps(stored.to_dict())


class KeptParseTests(TestCase):
    def setUp(self):
        suite_models.forget_read_versions()

    def test_every_example_suite_registered_from_its_file_is_the_suite_its_row_reads(self):
        assert len(SUITES) >= 5
        for path in SUITES:
            with self.subTest(path.name):
                version, created, _ = _registered(path)
                assert created
                _assert_same(version)

    def test_a_generated_bench_suite_is_the_suite_its_row_reads(self):
        with tempfile.TemporaryDirectory() as folder:
            path = write_suite(Path(folder), SuiteShape(cases=300, judge=True, repeats=2))
            version, _, _ = _registered(path)
            _assert_same(version)

    def test_an_example_found_again_is_kept_where_its_row_reads_back_as_stored(self):
        """Registered again by a later process (the version found): kept when its document
        reads back as it was made, on SQLite; parsed again on PostgreSQL."""
        for path in SUITES:
            with self.subTest(path.name):
                first, _, _ = _registered(path)
                suite_models.forget_read_versions()
                version, created, _ = _registered(path)
                assert (version.pk, created) == (first.pk, False)
                if connection.vendor == "sqlite":
                    _assert_same(version)
                else:
                    assert version._key not in suite_models._PARSED

    def test_examples_registered_as_uploads_are_the_suites_their_rows_read(self):
        uploads = 0
        for path in SUITES:
            try:
                loaded = parse_suite(path.read_bytes(), filename=path.name, origin="upload")
            except SuiteError:  # an upload reads no file beside it (replies, cases)
                continue
            with self.subTest(path.name):
                version, _ = SuiteVersion.objects.register(
                    loaded, path.read_text("utf-8"), origin=SuiteVersion.Origin.UPLOAD
                )
                _assert_same(version)
                uploads += 1
        assert uploads >= 1

    def test_a_file_found_as_an_upload_is_parsed_again(self):
        """An upload's version is read as an upload (no python checks): a file registered
        later finds it, and its parse, read as a file's, is not the version's."""
        path = EXAMPLES / "case-vars.yaml"
        loaded = parse_suite(path.read_bytes(), filename=path.name, origin="upload")
        upload, _ = SuiteVersion.objects.register(
            loaded, path.read_text("utf-8"), origin=SuiteVersion.Origin.UPLOAD
        )
        suite_models.forget_read_versions()

        version, created, _ = _registered(path)

        assert (version.pk, created) == (upload.pk, False)
        assert version._key not in suite_models._PARSED
        assert version.core_suite().origin == "upload"

    def test_a_row_that_reads_back_otherwise_is_parsed_again(self):
        """A version whose stored document is not the one this file makes (another
        version of evalsite stored it; an admin edited it) is parsed from its row."""
        path = EXAMPLES / "case-vars.yaml"
        first, _, _ = _registered(path)
        edited = dict(first.parsed, description="edited in the database")
        SuiteVersion.objects.filter(pk=first.pk).update(parsed=edited)
        suite_models.forget_read_versions()

        version, _, _ = _registered(path)

        assert version._key not in suite_models._PARSED
        assert version.core_suite().description == "edited in the database"

    def test_a_no_look_suite_keeps_no_parse_of_its_stripped_row(self):
        path = EXAMPLES / "case-vars.yaml"
        loaded = load_suite(path)
        version, _ = SuiteVersion.objects.register_file(path, loaded, no_look=True)
        assert version.stripped
        assert version._key not in suite_models._PARSED


@pytest.mark.django_db(transaction=True)
def test_evalsite_run_of_a_file_never_parses_its_stored_version(monkeypatch):
    """The process that read the file scores, judges and reports with that parse."""
    PriceTable.objects.ensure_default()
    monkeypatch.setattr(SuiteVersion, "_parse", _no_second_parse)

    code, _, err = run_command("run", str(EXAMPLES / "support-desk.yaml"), "--fake")

    assert code == 0, err
    assert Run.objects.get().status == Run.Status.DONE
