"""Scoring with a schema whose ``$ref``s are bad (validation bypassed): a verdict, no fetch."""

from __future__ import annotations

import json
import pathlib

import pytest
from referencing.exceptions import Unresolvable

from evalsite.core.providers.fake_json import is_valid
from evalsite.core.scoring.json_answer import schema_verdict
from tests.core.ref_server import counting_server

CANARY = "FILE-CONTENT-CANARY-7f3a"


def referring(ref: str) -> dict[str, object]:
    return {
        "type": "object",
        "$defs": {"item": {"type": "string", "maxLength": 3}},
        "properties": {"a": {"$ref": ref}},
    }


def test_scoring_with_a_remote_ref_is_a_schema_error_and_fetches_nothing() -> None:
    with counting_server() as (base, hits):
        verdict = schema_verdict('{"a": "x"}', referring(f"{base}/x.json"))
        assert hits == []
    assert verdict.verdict == "schema_fail"
    assert verdict.error is not None
    assert verdict.error.startswith(f"task schema error: $ref '{base}/x.json' points outside")
    assert "SERVED-SCHEMA-CANARY" not in verdict.error


@pytest.mark.parametrize("kind", ["etc-passwd", "tmp-file"])
def test_scoring_with_a_file_ref_never_reads_the_file(kind: str, tmp_path: pathlib.Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"x": {"type": "integer", "description": CANARY}}))
    ref = "file:///etc/passwd#/x" if kind == "etc-passwd" else f"{secret.as_uri()}#/x"
    verdict = schema_verdict('{"a": "x"}', referring(ref))
    assert verdict.verdict == "schema_fail"
    assert verdict.error is not None and "points outside this schema" in verdict.error
    assert CANARY not in verdict.error and "root:" not in verdict.error


def test_a_missing_def_is_a_schema_error_verdict_not_an_exception() -> None:
    verdict = schema_verdict('{"a": "x"}', referring("#/$defs/missing"))
    assert (verdict.verdict, verdict.error) == (
        "schema_fail",
        "task schema error: $ref '#/$defs/missing' points to nothing in this schema",
    )


def test_a_ref_to_something_that_is_not_a_schema_is_a_schema_error_verdict() -> None:
    verdict = schema_verdict('{"a": "x"}', referring("#/type"))
    assert verdict.verdict == "schema_fail"
    assert (
        verdict.error == "task schema error: $ref '#/type' points at something that is not a schema"
    )


def test_a_local_ref_checks_the_answer_against_the_def() -> None:
    assert schema_verdict('{"a": "abc"}', referring("#/$defs/item")).verdict == "pass"
    failed = schema_verdict('{"a": "abcd"}', referring("#/$defs/item"))
    assert failed.verdict == "schema_fail"
    assert failed.error is not None and failed.error.startswith("$.a: 'abcd' is too long")


def test_the_fake_providers_validator_fetches_nothing() -> None:
    with counting_server() as (base, hits):
        with pytest.raises(Unresolvable):
            is_valid(referring(f"{base}/x.json"), {"a": "x"})
        assert hits == []
