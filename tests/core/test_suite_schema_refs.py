"""Task schema ``$ref``s resolve only inside the schema, and every one resolves at validation."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from evalsite.core.scoring.json_answer import schema_verdict
from evalsite.core.suites import Problem, SuiteError, load_suite, parse_suite
from tests.core.ref_server import counting_server
from tests.helpers import launcher
from tests.helpers.cli import cli_env

CANARY = "FILE-CONTENT-CANARY-7f3a"

HEADER = "suite: refs\nversion: 1\ntasks:\n  - id: t\n    prompt: hi\n    cases: [{id: c}]\n"


def with_ref(ref: str) -> str:
    """A suite whose task schema has ``ref`` at line 13, under properties.a."""
    return HEADER + (
        "    schema:\n"
        "      type: object\n"
        "      $defs:\n"
        "        item: {type: string, maxLength: 3}\n"
        "      properties:\n"
        "        a:\n"
        f"          $ref: {json.dumps(ref)}\n"
    )


def errors(text: str, **options: Any) -> list[Problem]:
    with pytest.raises(SuiteError) as caught:
        parse_suite(text.encode(), filename="refs.yaml", **options)
    return list(caught.value.problems)


def test_a_ref_to_a_local_server_is_an_error_at_its_line_and_nothing_is_fetched() -> None:
    with counting_server() as (base, hits):
        ref = f"{base}/x.json"
        ((problem,),) = [errors(with_ref(ref))]
        assert hits == []
    assert (problem.file, problem.line, problem.path) == (
        "refs.yaml",
        13,
        'tasks[0].schema.properties.a["$ref"]',
    )
    assert problem.message.startswith(f"$ref '{ref}' points outside this schema")
    assert "SERVED-SCHEMA-CANARY" not in str(problem)


@pytest.mark.parametrize("kind", ["etc-passwd", "tmp-file"])
def test_file_refs_are_errors_and_never_show_the_files_content(
    kind: str, tmp_path: pathlib.Path
) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"x": {"type": "string", "description": CANARY}}))
    ref = "file:///etc/passwd#/x" if kind == "etc-passwd" else f"{secret.as_uri()}#/x"
    (problem,) = errors(with_ref(ref), base_dir=tmp_path)
    assert (problem.line, problem.path) == (13, 'tasks[0].schema.properties.a["$ref"]')
    assert "points outside this schema" in problem.message
    assert CANARY not in str(problem) and "root:" not in str(problem)


def test_a_local_ref_into_defs_validates_and_checks_the_answer_against_the_def() -> None:
    suite = parse_suite(with_ref("#/$defs/item").encode(), filename="refs.yaml")
    schema = suite.task("t").schema
    assert schema_verdict('{"a": "ok"}', schema).verdict == "pass"
    failed = schema_verdict('{"a": "too long"}', schema)
    assert failed.verdict == "schema_fail"
    assert failed.error is not None and failed.error.startswith("$.a: ")


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("#/$defs/missing", "$ref '#/$defs/missing' points to nothing in this schema"),
        ("#nowhere", "$ref '#nowhere' names an anchor this schema does not define"),
        ("#/type", "$ref '#/type' points at something that is not a schema"),
        ("urn:example:item", "$ref 'urn:example:item' points outside this schema"),
    ],
)
def test_a_ref_that_does_not_resolve_is_an_error_at_validate_time(ref: str, message: str) -> None:
    (problem,) = errors(with_ref(ref))
    assert (problem.file, problem.line) == ("refs.yaml", 13)
    assert problem.path == 'tasks[0].schema.properties.a["$ref"]'
    assert problem.message.startswith(message)


def test_refs_to_ids_and_anchors_defined_in_the_schema_resolve() -> None:
    text = HEADER + (
        "    schema:\n"
        "      $defs:\n"
        "        code: {$id: 'urn:example:code', type: string}\n"
        "        name: {$anchor: name, type: string}\n"
        "      properties:\n"
        "        a: {$ref: 'urn:example:code'}\n"
        "        b: {$ref: '#name'}\n"
    )
    schema = parse_suite(text.encode(), filename="refs.yaml").task("t").schema
    assert schema_verdict('{"a": "x", "b": "y"}', schema).verdict == "pass"
    assert schema_verdict('{"a": 1}', schema).verdict == "schema_fail"


def test_a_ref_reached_only_through_another_ref_is_checked_too() -> None:
    text = HEADER + (
        "    schema:\n"
        "      x-parts:\n"
        "        hop: {$ref: '#/$defs/missing'}\n"
        "      properties:\n"
        "        a: {$ref: '#/x-parts/hop'}\n"
    )
    (problem,) = errors(text)
    assert (problem.line, problem.path) == (9, 'tasks[0].schema.x-parts.hop["$ref"]')
    assert problem.message == "$ref '#/$defs/missing' points to nothing in this schema"


SCHEMA_FILE = {
    "type": "object",
    "$defs": {"item": {"type": "string"}},
    "properties": {"a": {"$ref": "#/$defs/item"}},
}


def schema_file_suite(folder: pathlib.Path, schema: dict[str, Any]) -> pathlib.Path:
    (folder / "answer.schema.json").write_text(json.dumps(schema, indent=2))
    suite = folder / "suite.yaml"
    suite.write_text(HEADER + "    schema_path: answer.schema.json\n")
    return suite


def test_a_schema_file_with_local_refs_loads_and_scores(tmp_path: pathlib.Path) -> None:
    suite = load_suite(schema_file_suite(tmp_path, SCHEMA_FILE))
    assert schema_verdict('{"a": "x"}', suite.task("t").schema).verdict == "pass"


def test_a_missing_def_in_a_schema_file_names_that_file_and_line(tmp_path: pathlib.Path) -> None:
    schema = {**SCHEMA_FILE, "properties": {"a": {"$ref": "#/$defs/missing"}}}
    with pytest.raises(SuiteError) as caught:
        load_suite(schema_file_suite(tmp_path, schema))
    (problem,) = caught.value.problems
    assert problem.file.endswith("answer.schema.json")
    assert (problem.line, problem.path) == (10, 'tasks[0].schema.properties.a["$ref"]')


@pytest.mark.parametrize("ref", ["item.schema.json", "../outside.json", "link.json#/x"])
def test_a_ref_to_another_file_is_refused_even_inside_the_suite_folder(
    ref: str, tmp_path: pathlib.Path
) -> None:
    folder = tmp_path / "suite"
    folder.mkdir()
    leaked = {"x": {"type": "string", "description": CANARY}}
    (tmp_path / "outside.json").write_text(json.dumps(leaked))
    (folder / "item.schema.json").write_text(json.dumps(leaked))
    (folder / "link.json").symlink_to(tmp_path / "outside.json")
    schema = {**SCHEMA_FILE, "properties": {"a": {"$ref": ref}}}
    with pytest.raises(SuiteError) as caught:
        load_suite(schema_file_suite(folder, schema))
    (problem,) = caught.value.problems
    assert problem.file.endswith("answer.schema.json") and problem.line == 10
    assert problem.message.startswith(f"$ref '{ref}' points outside this schema")
    assert CANARY not in str(problem)


def test_evalsite_validate_prints_the_ref_error_and_exits_2(tmp_path: pathlib.Path) -> None:
    with counting_server() as (base, hits):
        suite = tmp_path / "x.yaml"
        suite.write_text(with_ref(f"{base}/x.json"))
        result = launcher.run(["validate", str(suite)], env=cli_env(tmp_path / "data"))
        assert hits == []
    assert result.returncode == 2, result.stderr
    assert f"{suite}:13: tasks[0].schema.properties.a" in result.stderr
    assert "points outside this schema" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
