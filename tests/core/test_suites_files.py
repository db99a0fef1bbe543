"""Suites that refer to files, origins, the version hash and key refusal (no database)."""

from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
from typing import Any

import pytest

from evalsite.core.input_limits import MAX_BYTES
from evalsite.core.suites import Problem, SuiteError, load_suite, parse_suite, render_messages

FIXTURES = pathlib.Path(__file__).parent.parent / "fixtures" / "suites"
FAKE_KEY = "sk-" + "ant-api03-" + "Q7w" * 14  # assembled so no key-shaped text is in the repo

HEADER = "suite: s\nversion: 1\n"


@pytest.fixture
def suite_dir(tmp_path: pathlib.Path) -> pathlib.Path:
    """A writable copy of the with_files fixture."""
    return pathlib.Path(shutil.copytree(FIXTURES / "with_files", tmp_path / "suite"))


def write(folder: pathlib.Path, files: dict[str, str]) -> pathlib.Path:
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder / "suite.yaml"


def errors(path: pathlib.Path, **options: Any) -> list[Problem]:
    with pytest.raises(SuiteError) as caught:
        load_suite(path, **options)
    return list(caught.value.problems)


def one_task(reference: str, prompt: str = "Hi {{name}}") -> str:
    return HEADER + f"tasks:\n  - id: t\n    prompt: '{prompt}'\n    {reference}\n"


def test_referenced_schema_cases_and_labels_are_inlined(suite_dir: pathlib.Path) -> None:
    suite = load_suite(suite_dir / "suite.yaml")
    assert suite.files == ("labels.yaml", "translate.csv", "triage.jsonl", "triage.schema.json")
    assert suite.task("triage").schema == {
        "type": "object",
        "required": ["category"],
        "properties": {"category": {"enum": ["billing", "access", "other"]}},
    }
    assert [c.id for c in suite.task("triage").cases] == ["charged-twice", "locked-out"]
    assert suite.task("triage").cases[0].tags == ("billing",)
    assert len(suite.labels) == 2
    assert suite.labels[0].labeller == "ada"
    document = suite.to_dict()
    assert "cases_path" not in document["tasks"][0]
    assert "labels_path" not in document
    assert document["tasks"][0]["schema"]["required"] == ["category"]


def test_csv_cases_take_vars_from_columns_and_tags_split_on_semicolons(
    suite_dir: pathlib.Path,
) -> None:
    suite = load_suite(suite_dir / "suite.yaml")
    greeting, multi = suite.task("translate").cases
    assert greeting.vars == {"language": "French", "text": "Good morning"}
    assert greeting.tags == ("short", "polite")
    assert multi.tags == ()
    messages = render_messages(suite, "translate", "multi-line")
    assert messages == [{"role": "user", "content": "Translate to German: First line\nsecond line"}]


def test_the_hash_folds_in_each_referenced_file(suite_dir: pathlib.Path) -> None:
    path = suite_dir / "suite.yaml"
    digest = hashlib.sha256(path.read_bytes())
    for name in sorted(["labels.yaml", "translate.csv", "triage.jsonl", "triage.schema.json"]):
        data = (suite_dir / name).read_bytes()
        digest.update(b"\0" + name.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    assert load_suite(path).sha256 == digest.hexdigest()


def test_the_hash_is_stable_and_changes_when_a_cases_file_changes(suite_dir: pathlib.Path) -> None:
    path = suite_dir / "suite.yaml"
    first = load_suite(path).sha256
    assert load_suite(path).sha256 == first
    cases = suite_dir / "triage.jsonl"
    cases.write_text(cases.read_text().replace("charged twice", "charged three times"))
    assert load_suite(path).sha256 != first


def test_an_error_in_a_jsonl_file_names_that_file_and_line(tmp_path: pathlib.Path) -> None:
    rows = '{"id": "a", "vars": {"name": "A"}}\n'
    rows += '{"id": "b", "vars": {"name": "B"}, "tgas": []}\n{"id": oops}\n'
    path = write(tmp_path, {"suite.yaml": one_task("cases_path: c.jsonl"), "c.jsonl": rows})
    found = [str(p) for p in errors(path)]
    assert (
        f"{tmp_path}/c.jsonl:2: tasks[0].cases[1].tgas: unknown key 'tgas' - did you mean 'tags'?"
        in found
    )
    assert f"{tmp_path}/c.jsonl:3: not valid JSON: Expecting value at column 8" in found


def test_a_duplicate_case_id_in_a_jsonl_file_names_its_line(tmp_path: pathlib.Path) -> None:
    rows = '{"id": "a", "vars": {"name": "A"}}\n\n{"id": "a", "vars": {"name": "B"}}\n'
    path = write(tmp_path, {"suite.yaml": one_task("cases_path: c.jsonl"), "c.jsonl": rows})
    (problem,) = errors(path)
    assert (problem.file, problem.line) == (f"{tmp_path}/c.jsonl", 3)
    assert problem.message == "duplicate case id 'a' in task 't' (first at line 1)"


def test_a_lone_surrogate_in_a_jsonl_file_is_refused(tmp_path: pathlib.Path) -> None:
    rows = '{"id": "a", "vars": {"name": "bad \\ud800"}}\n'
    path = write(tmp_path, {"suite.yaml": one_task("cases_path: c.jsonl"), "c.jsonl": rows})
    (problem,) = errors(path)
    assert (problem.file, problem.line) == (f"{tmp_path}/c.jsonl", 1)
    assert "lone surrogate" in problem.message


def test_a_short_csv_row_names_that_file_and_line(tmp_path: pathlib.Path) -> None:
    csv = 'id,name\na,"Ada\nLovelace"\nb\n'
    path = write(tmp_path, {"suite.yaml": one_task("cases_path: c.csv"), "c.csv": csv})
    assert [str(p) for p in errors(path)] == [
        f"{tmp_path}/c.csv:4: row has 1 fields; the header has 2"
    ]


def test_a_csv_without_an_id_column_is_refused(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, {"suite.yaml": one_task("cases_path: c.csv"), "c.csv": "name\nAda\n"})
    assert [p.message for p in errors(path)] == ["the header needs an 'id' column"]


def test_a_cases_file_needs_a_known_extension(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, {"suite.yaml": one_task("cases_path: c.txt"), "c.txt": "id\n"})
    assert [p.message for p in errors(path)] == ["a cases file must end in .jsonl or .csv"]


def test_an_invalid_schema_file_names_that_file_and_line(tmp_path: pathlib.Path) -> None:
    schema = '{\n  "type": "object",\n  "properties": {\n    "a": {"type": "strnig"}\n  }\n}\n'
    suite = one_task("schema_path: s.json\n    cases: [{id: c, vars: {name: x}}]")
    path = write(tmp_path, {"suite.yaml": suite, "s.json": schema})
    (problem,) = errors(path)
    assert (problem.file, problem.line, problem.path) == (
        f"{tmp_path}/s.json",
        4,
        "tasks[0].schema.properties.a.type",
    )
    assert problem.message.startswith("not a valid JSON Schema: 'strnig' is not valid")


def test_malformed_json_and_duplicate_keys_in_a_schema_file_name_their_lines(
    tmp_path: pathlib.Path,
) -> None:
    suite = one_task("schema_path: s.json\n    cases: [{id: c, vars: {name: x}}]")
    path = write(
        tmp_path, {"suite.yaml": suite, "s.json": '{\n  "type": "object",\n  "type": "array"\n}'}
    )
    assert [str(p) for p in errors(path)] == [
        f"{tmp_path}/s.json:3: type: duplicate key 'type' (lines 2 and 3)"
    ]
    (tmp_path / "s.json").write_text('{\n  "type": "object",\n}')
    (problem,) = errors(path)
    assert (problem.file, problem.line) == (f"{tmp_path}/s.json", 3)
    assert problem.message == (
        "not valid JSON: Expecting property name enclosed in double quotes at column 1"
    )


def test_a_yaml_schema_file_works(tmp_path: pathlib.Path) -> None:
    suite = one_task("schema_path: s.yaml\n    cases: [{id: c, vars: {name: x}}]")
    path = write(tmp_path, {"suite.yaml": suite, "s.yaml": "type: object\nrequired: [a]\n"})
    assert load_suite(path).tasks[0].schema == {"type": "object", "required": ["a"]}


@pytest.mark.parametrize("form", ["list", "mapping"])
def test_a_bad_label_in_a_labels_file_names_that_file_and_line(
    tmp_path: pathlib.Path, form: str
) -> None:
    labels = "- {task: t, case: c, baseline: fake/a, candidate: fake/b, prefer: tie}\n" + (
        "- {task: tt, case: c, baseline: fake/a, candidate: fake/b, prefer: maybe}\n"
    )
    if form == "mapping":
        labels = "labels:\n" + "".join(f"  {line}\n" for line in labels.splitlines())
    suite = one_task("cases: [{id: c, vars: {name: x}}]") + "labels_path: labels.yaml\n"
    path = write(tmp_path, {"suite.yaml": suite, "labels.yaml": labels})
    found = [(p.file, p.line, p.path, p.message) for p in errors(path)]
    line = 2 if form == "list" else 3
    assert found == [
        (f"{tmp_path}/labels.yaml", line, "labels[1].prefer",
         "must be one of: baseline, candidate, tie; got text 'maybe'"),
        (f"{tmp_path}/labels.yaml", line, "labels[1].task",
         "unknown task 'tt' - did you mean 't'?"),
    ]  # fmt: skip


def test_a_labels_file_mapping_takes_only_labels(tmp_path: pathlib.Path) -> None:
    suite = one_task("cases: [{id: c, vars: {name: x}}]") + "labels_path: labels.json\n"
    path = write(tmp_path, {"suite.yaml": suite, "labels.json": '{"label": []}'})
    messages = sorted(p.message for p in errors(path))
    assert messages == [
        "missing required key 'labels'",
        "unknown key 'label' - did you mean 'labels'?",
    ]


def test_a_missing_referenced_file_is_an_error_at_the_reference(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, {"suite.yaml": one_task("cases_path: nowhere.jsonl")})
    assert [str(p) for p in errors(path)] == [
        f"{path}:6: tasks[0].cases_path: nowhere.jsonl: file not found"
    ]


@pytest.mark.parametrize("reference", ["../outside.jsonl", "/etc/hostname", "link/outside.jsonl"])
def test_a_reference_may_not_leave_the_suite_folder(tmp_path: pathlib.Path, reference: str) -> None:
    folder = tmp_path / "suite"
    folder.mkdir()
    (tmp_path / "outside.jsonl").write_text('{"id": "a"}\n')
    os.symlink(tmp_path, folder / "link")
    path = write(folder, {"suite.yaml": one_task(f"cases_path: {reference}")})
    (problem,) = errors(path)
    assert problem.path == "tasks[0].cases_path"
    assert "relative to the suite's folder" in problem.message or "stay inside" in problem.message


def test_an_uploaded_suite_never_reads_referenced_files(suite_dir: pathlib.Path) -> None:
    data = (suite_dir / "suite.yaml").read_bytes()
    with pytest.raises(SuiteError) as caught:
        parse_suite(data, filename="upload.yaml", base_dir=suite_dir, origin="upload")
    refused = [
        ("tasks[0].schema_path", "schema"),
        ("tasks[0].cases_path", "cases"),
        ("tasks[1].cases_path", "cases"),
        ("labels_path", "labels"),
    ]
    assert [(p.path, p.message) for p in caught.value.problems] == [
        (path, f"{path.split('.')[-1]} is allowed only for suites loaded from a file; "
               f"write it inline as '{inline}:'")
        for path, inline in refused
    ]  # fmt: skip


def test_without_a_base_dir_references_are_refused_even_for_files() -> None:
    data = one_task("cases_path: c.jsonl").encode()
    with pytest.raises(
        SuiteError, match="cases_path is allowed only for suites loaded from a file"
    ):
        parse_suite(data, filename="s.yaml", base_dir=None, origin="file")


def test_python_checks_are_refused_in_uploads_and_allowed_from_files() -> None:
    data = one_task(
        "checks: [{python: 'scoring.triage:check'}]\n    cases: [{id: c, vars: {name: x}}]"
    )
    assert parse_suite(data.encode(), filename="s.yaml").tasks[0].checks == (
        {"python": "scoring.triage:check"},
    )
    with pytest.raises(SuiteError) as caught:
        parse_suite(data.encode(), filename="s.yaml", origin="upload")
    (problem,) = caught.value.problems
    assert problem.path == "tasks[0].checks[0].python"
    assert problem.message.startswith("python checks are allowed only in suites loaded from a file")


def test_a_replies_file_is_resolved_but_not_hashed(tmp_path: pathlib.Path) -> None:
    suite = one_task("cases: [{id: c, vars: {name: x}}]") + "replies: replies.yaml\n"
    path = write(tmp_path, {"suite.yaml": suite, "replies.yaml": "good: {}\n"})
    loaded = load_suite(path)
    assert loaded.replies == "replies.yaml"
    assert loaded.replies_path == (tmp_path / "replies.yaml").resolve()
    assert loaded.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    (tmp_path / "replies.yaml").unlink()
    assert [p.message for p in errors(path)] == ["replies.yaml: file not found"]


def test_a_50_mb_suite_is_refused_without_being_read(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)

    def refuse_to_open(*args: object, **kwargs: object) -> None:
        raise AssertionError("the file was opened")

    monkeypatch.setattr(pathlib.Path, "open", refuse_to_open)
    assert [str(p) for p in errors(path)] == [
        f"{path}: file is 52,428,800 bytes; the limit is {MAX_BYTES:,} bytes (5 MiB)"
    ]


def test_an_oversized_referenced_file_is_an_error_at_the_reference(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, {"suite.yaml": one_task("cases_path: big.jsonl")})
    with (tmp_path / "big.jsonl").open("wb") as handle:
        handle.truncate(MAX_BYTES + 1)
    (problem,) = errors(path)
    assert (problem.path, problem.line) == ("tasks[0].cases_path", 6)
    assert "the limit is 5,242,880 bytes" in problem.message


def test_a_missing_suite_file_is_a_suite_error(tmp_path: pathlib.Path) -> None:
    assert [str(p) for p in errors(tmp_path / "nope.yaml")] == [
        f"{tmp_path}/nope.yaml: file not found"
    ]
    assert [str(p) for p in errors(tmp_path)] == [f"{tmp_path}: not a regular file"]


def test_a_key_shaped_string_refuses_the_suite_without_repeating_it() -> None:
    data = HEADER + (
        "tasks:\n  - id: t\n    prompt: 'Hi {{name}}'\n    cases:\n"
        f"      - id: c\n        vars: {{name: x, note: 'token {FAKE_KEY}'}}\n"
    )
    with pytest.raises(SuiteError) as caught:
        parse_suite(data.encode(), filename="s.yaml")
    (problem,) = caught.value.problems
    assert (problem.line, problem.path) == (8, "tasks[0].cases[0].vars.note")
    assert "provider API key" in problem.message
    shown = str(caught.value)
    assert FAKE_KEY not in shown
    assert "ant-" not in shown
    assert FAKE_KEY[3:12] not in shown


def test_a_key_shaped_mapping_key_is_refused_and_redacted_in_the_path() -> None:
    data = (
        HEADER
        + f"tasks:\n  - id: t\n    prompt: hi\n    cases: [{{id: c, vars: {{{FAKE_KEY}: x}}}}]\n"
    )
    with pytest.raises(SuiteError) as caught:
        parse_suite(data.encode(), filename="s.yaml")
    shown = str(caught.value)
    assert "provider API key" in shown
    assert FAKE_KEY not in shown
    assert "sk-[REDACTED]" in shown


def test_a_key_in_a_referenced_file_names_that_file(tmp_path: pathlib.Path) -> None:
    rows = (
        f'{{"id": "a", "vars": {{"name": "A"}}}}\n{{"id": "b", "vars": {{"name": "{FAKE_KEY}"}}}}\n'
    )
    path = write(tmp_path, {"suite.yaml": one_task("cases_path: c.jsonl"), "c.jsonl": rows})
    (problem,) = errors(path)
    assert (problem.file, problem.line, problem.path) == (
        f"{tmp_path}/c.jsonl",
        2,
        "tasks[0].cases[1].vars.name",
    )
    assert FAKE_KEY not in str(problem)


def test_a_cases_file_with_too_many_values_is_refused(tmp_path: pathlib.Path) -> None:
    rows = '{"id": "a", "tags": [' + "1," * 200_000 + "1]}\n"
    path = write(tmp_path, {"suite.yaml": one_task("cases_path: c.jsonl"), "c.jsonl": rows})
    assert [str(p) for p in errors(path)] == [
        f"{tmp_path}/c.jsonl: the file holds more than 200,000 values; "
        "split it or move cases to a file"
    ]


@pytest.mark.parametrize("levels", [100, 100_000])
def test_a_schema_or_cases_file_nested_too_deep_is_a_problem_at_its_line(
    tmp_path: pathlib.Path, levels: int
) -> None:
    # Past Python's recursion limit the JSON reader raised RecursionError: exit 3 on the CLI.
    deep = "[" * levels + "]" * levels
    suite = one_task("schema_path: s.json\n    cases: [{id: c, vars: {name: x}}]")
    path = write(tmp_path, {"suite.yaml": suite, "s.json": deep})
    assert [str(p) for p in errors(path)] == [
        f"{tmp_path}/s.json:1: not valid JSON: nesting is deeper than 64 levels"
    ]
    one_case = '{"id": "a", "vars": {"name": "x"}}\n'
    suite = one_task("cases_path: c.jsonl")
    path = write(tmp_path, {"suite.yaml": suite, "c.jsonl": one_case + deep + "\n"})
    assert [str(p) for p in errors(path)] == [
        f"{tmp_path}/c.jsonl:2: not valid JSON: nesting is deeper than 64 levels"
    ]
