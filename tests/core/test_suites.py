"""Suite parsing: schema errors, unknown keys, contestants and the Suite API (no database)."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import pathlib
import random
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from evalsite.core.suite_parts import Case, Task
from evalsite.core.suite_schema import SUITE_SCHEMA
from evalsite.core.suites import (
    Contestant,
    Problem,
    SuiteError,
    format_problems,
    load_suite,
    parse_contestant,
    parse_suite,
    render_messages,
)

FIXTURES = pathlib.Path(__file__).parent.parent / "fixtures" / "suites"

# Every level of the format, each present once, so a typo can be put anywhere.
FULL: dict[str, Any] = {
    "suite": "full",
    "version": 1,
    "description": "every level",
    "defaults": {"temperature": 0, "max_tokens": 100, "system": "Be brief."},
    "limits": {"max_cost_usd": 1.5},
    "models": ["fake/a", "fake/b@concise"],
    "repeats": 2,
    "judge": {
        "model": "fake/judge",
        "rubric": "Prefer correct answers.",
        "calibration": {"min_kappa": 0.4, "min_labels": 10, "on_below_floor": "flag"},
    },
    "gate": {"max_flip_rate": 0.3, "min_win_rate_lower_bound": {"fake/b@concise": 0.4}},
    "report": {"mover_threshold": 0.15},
    "variants": {"concise": {"system": "Few words.", "params": {"temperature": 0.2}}},
    "tasks": [
        {
            "id": "greet",
            "kind": "rewrite",
            "prompt": "Say hi to {{name}}",
            "rubric": "Friendly.",
            "check": {"run": "test -s $ANSWER", "timeout_s": 5},
            "grade": {"rubric": "Is it friendly?", "threshold": 0.6},
            "variants": {"concise": {"prompt": "Hi {{name}}"}},
            "checks": [{"contains": "hi", "case_sensitive": False}],
            "cases": [{"id": "ada", "vars": {"name": "Ada"}, "tags": ["short"]}],
        },
        {
            "id": "chat",
            "prompt": [{"role": "user", "content": "Hello {{name}}"}],
            "cases": [{"id": "bob", "vars": {"name": "Bob"}, "check": {"run": "true"}}],
        },
    ],
    "labels": [
        {"task": "greet", "case": "ada", "baseline": "fake/a", "candidate": "fake/b@concise",
         "prefer": "candidate", "note": "warmer", "labeller": "ada"},
    ],
}  # fmt: skip


def dump(document: dict[str, Any]) -> bytes:
    return yaml.safe_dump(document, sort_keys=False).encode()


def parse(data: bytes | str, **options: Any) -> Any:
    raw = data.encode() if isinstance(data, str) else data
    return parse_suite(raw, filename="suite.yaml", **options)


def errors(data: bytes | str, **options: Any) -> list[Problem]:
    with pytest.raises(SuiteError) as caught:
        parse(data, **options)
    return list(caught.value.problems)


def line_of(data: bytes, text: str) -> int:
    """The 1-based line of the only line containing ``text``."""
    lines = [n for n, line in enumerate(data.decode().splitlines(), start=1) if text in line]
    assert len(lines) == 1, lines
    return lines[0]


def test_the_full_example_is_valid() -> None:
    suite = parse(dump(FULL))
    assert suite.name == "full"
    assert suite.warnings == ()


def test_the_suite_schema_is_a_valid_draft_2020_12_schema() -> None:
    Draft202012Validator.check_schema(SUITE_SCHEMA)


@pytest.mark.parametrize(
    ("where", "typo", "suggestion", "path"),
    [
        ((), "descripton", "description", "descripton"),
        (("defaults",), "temprature", "temperature", "defaults.temprature"),
        (("limits",), "max_cost", "max_cost_usd", "limits.max_cost"),
        (("judge",), "rubrik", "rubric", "judge.rubrik"),
        (("judge", "calibration"), "min_kapa", "min_kappa", "judge.calibration.min_kapa"),
        (("gate",), "max_flip", "max_flip_rate", "gate.max_flip"),
        (("report",), "mover_treshold", "mover_threshold", "report.mover_treshold"),
        (("variants", "concise"), "sytem", "system", "variants.concise.sytem"),
        (("variants", "concise", "params"), "temperture", "temperature",
         "variants.concise.params.temperture"),
        (("tasks", 0), "rubrik", "rubric", "tasks[0].rubrik"),
        (("tasks", 0, "check"), "setpu", "setup", "tasks[0].check.setpu"),
        (("tasks", 0, "grade"), "treshold", "threshold", "tasks[0].grade.treshold"),
        (("tasks", 0, "variants", "concise"), "sytem", "system", "tasks[0].variants.concise.sytem"),
        (("tasks", 0, "cases", 0), "tgas", "tags", "tasks[0].cases[0].tgas"),
        (("tasks", 1, "cases", 0, "check"), "rnu", "run", "tasks[1].cases[0].check.rnu"),
        (("tasks", 0, "checks", 0), "case_sensitiv", "case_sensitive",
         "tasks[0].checks[0].case_sensitiv"),
        (("tasks", 1, "prompt", 0), "rol", "role", "tasks[1].prompt[0].rol"),
        (("labels", 0), "notes", "note", "labels[0].notes"),
    ],
)  # fmt: skip
def test_an_unknown_key_at_every_level_names_its_path_line_and_a_suggestion(
    where: tuple[Any, ...], typo: str, suggestion: str, path: str
) -> None:
    document = copy.deepcopy(FULL)
    node: Any = document
    for part in where:
        node = node[part]
    node[typo] = "x"
    data = dump(document)
    unknown = [p for p in errors(data) if "unknown key" in p.message]
    assert len(unknown) == 1
    assert unknown[0].path == path
    assert unknown[0].message == f"unknown key '{typo}' - did you mean '{suggestion}'?"
    assert unknown[0].line == line_of(data, f"{typo}:")
    assert unknown[0].file == "suite.yaml"


def test_rubrik_on_a_task_suggests_rubric_and_names_its_line() -> None:
    data = "suite: s\nversion: 1\ntasks:\n  - id: t\n    prompt: hi\n    rubrik: be kind\n"
    data += "    cases: [{id: c}]\n"
    (problem,) = errors(data)
    assert (
        str(problem)
        == "suite.yaml:6: tasks[0].rubrik: unknown key 'rubrik' - did you mean 'rubric'?"
    )


def test_an_unknown_key_far_from_any_allowed_one_lists_the_allowed_keys() -> None:
    (problem,) = errors(dump({**FULL, "limits": {"zzz": 1}}))
    assert problem.message == "unknown key 'zzz'; allowed here: max_cost_usd"


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        ({"repeats": "two"}, "repeats", "expected an integer, got text 'two'"),
        ({"repeats": 50}, "repeats", "must be at most 20, got 50"),
        ({"tasks": "none"}, "tasks", "expected a list, got text 'none'"),
        ({"tasks": []}, "tasks", "must not be empty"),
        ({"version": 2}, "version", "must be 1 (the only suite format version)"),
        ({"description": 12}, "description",
         "expected text, got the number 12 - quote it to keep it as text"),
        ({"defaults": {"max_tokens": 1.5}}, "defaults.max_tokens",
         "expected an integer, got the number 1.5"),
        ({"judge": {"model": "fake/j", "pairing": "al"}}, "judge.pairing",
         "must be one of: baseline, all; got text 'al' - did you mean 'all'?"),
        ({"suite": "Bad Name"}, "suite",
         "must be an identifier: lowercase letters, digits and '-', at most 64"),
        ({"models": ["gpt-4o"]}, "models[0]",
         "must be a contestant: a model string with an optional '@variant'"),
        ({"judge": {"rubric": "x"}}, "judge", "missing required key 'model'"),
    ],
)  # fmt: skip
def test_wrong_values_name_what_was_expected(
    change: dict[str, Any], path: str, message: str
) -> None:
    found = errors(dump({**FULL, **change}))
    assert [(p.path, p.message) for p in found] == [(path, message)]


def test_a_task_needs_exactly_one_of_cases_and_cases_path() -> None:
    task = {"id": "t", "prompt": "x"}
    found = errors(dump({"suite": "s", "version": 1, "tasks": [task]}))
    assert [(p.path, p.message) for p in found] == [
        ("tasks[0]", "a task needs exactly one of 'cases', 'cases_path' and 'cases_from'")
    ]


def test_schema_and_schema_path_together_are_refused() -> None:
    task = {"id": "t", "prompt": "x", "schema": {}, "schema_path": "s.json", "cases": [{"id": "c"}]}
    messages = [p.message for p in errors(dump({"suite": "s", "version": 1, "tasks": [task]}))]
    assert "give 'schema' or 'schema_path', not both" in messages


def test_a_check_needs_exactly_one_kind() -> None:
    document = copy.deepcopy(FULL)
    document["tasks"][0]["checks"] = [{"contains": "a", "regex": "b"}, {"case_sensitive": True}]
    found = {(p.path, p.message) for p in errors(dump(document))}
    kinds = (
        "equals, contains, not_contains, one_of, regex, max_chars, min_chars, exact_match, "
        "json_path, json_valid, python"
    )
    assert ("tasks[0].checks[0]", f"a check needs exactly one of: {kinds}") in found
    assert ("tasks[0].checks[1]", f"a check needs exactly one of: {kinds}") in found


def test_case_sensitive_only_goes_with_text_checks() -> None:
    document = copy.deepcopy(FULL)
    document["tasks"][0]["checks"] = [{"max_chars": 10, "case_sensitive": False}]
    (problem,) = errors(dump(document))
    assert problem.message.startswith("case_sensitive applies only to equals")


def test_var_values_must_be_scalars_and_names_plain() -> None:
    document = copy.deepcopy(FULL)
    document["tasks"][0]["cases"][0]["vars"] = {"name": "Ada", "list": [1], "bad name": "x"}
    found = {(p.path, p.message) for p in errors(dump(document))}
    assert (
        "tasks[0].cases[0].vars.list",
        "expected text or a number or true or false or null, got a list",
    ) in found
    assert ('tasks[0].cases[0].vars["bad name"]', "var names are letters, digits, _ and -") in found


def test_all_errors_are_reported_at_once() -> None:
    data = """\
suite: s
version: 1
tasks:
  - id: t
    prompt: "Hello {{name}}"
    rubrik: typo
    cases:
      - {id: a, vars: {name: A}}
      - {id: a, vars: {name: B}}
      - {id: b, vars: {nmae: C}}
"""
    found = errors(data)
    assert [(p.line, p.path) for p in found] == [
        (6, "tasks[0].rubrik"),
        (9, "tasks[0].cases[1].id"),
        (10, "tasks[0].cases[2]"),
    ]
    assert found[1].message == "duplicate case id 'a' in task 't' (first at line 8)"


def test_problems_format_as_file_line_path_message() -> None:
    problems = [
        Problem("s.yaml", 3, "tasks[0].rubrik", "unknown key 'rubrik'"),
        Problem("s.yaml", None, "", "file not found"),
        Problem("cases.csv", 2, "", "row has 3 fields", "error"),
        Problem("s.yaml", 9, "tasks[0].cases[0].vars.x", "unused", "warning"),
    ]
    assert format_problems(problems).splitlines() == [
        "s.yaml:3: tasks[0].rubrik: unknown key 'rubrik'",
        "s.yaml: file not found",
        "cases.csv:2: row has 3 fields",
        "s.yaml:9: tasks[0].cases[0].vars.x: warning: unused",
    ]


def test_a_suite_error_reads_as_the_problem_list() -> None:
    with pytest.raises(SuiteError) as caught:
        parse("suite: s\nversion: 1\ntasks: []\nextra: 1\n")
    assert str(caught.value) == (
        "suite.yaml:3: tasks: must not be empty\nsuite.yaml:4: extra: unknown key 'extra'; "
        "allowed here: " + ", ".join(SUITE_SCHEMA["properties"])
    )


def test_a_document_that_is_not_a_mapping_is_refused() -> None:
    assert [p.message for p in errors("- just\n- a list\n")] == ["expected a mapping, got a list"]
    assert [p.message for p in errors("")] == ["expected a mapping, got nothing (null)"]


def test_an_unknown_origin_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="origin"):
        parse(dump(FULL), origin="web")


@pytest.mark.parametrize(
    ("text", "model", "variant"),
    [
        ("openai/gpt-4o-mini@concise", "openai/gpt-4o-mini", "concise"),
        ("openai/gpt-4o-mini", "openai/gpt-4o-mini", None),
        ("anthropic/claude-haiku-4-5@base", "anthropic/claude-haiku-4-5", None),
        ("openrouter/meta-llama/llama-3.1-8b", "openrouter/meta-llama/llama-3.1-8b", None),
    ],
)  # fmt: skip
def test_parse_contestant(text: str, model: str, variant: str | None) -> None:
    contestant = parse_contestant(text)
    assert contestant == Contestant(model, variant)
    assert str(contestant) == (text.removesuffix("@base"))


@pytest.mark.parametrize(
    "text", ["gpt-4o", "openai/", "@concise", "openai/gpt@", "openai/gpt@Bad", "a/b@c@d", ""]
)
def test_parse_contestant_refuses_bad_syntax_with_a_clear_message(text: str) -> None:
    with pytest.raises(ValueError, match=r"not a (contestant|variant name)"):
        parse_contestant(text)


def test_evalmine_v1_suite_loads_unchanged() -> None:
    path = FIXTURES / "evalmine_everyday_eight.yaml"
    suite = load_suite(path)
    assert (len(suite.tasks), suite.case_count(), len(suite.labels)) == (8, 20, 12)
    assert suite.model_strings() == [
        "anthropic/claude-haiku-4-5", "anthropic/claude-sonnet-4-6", "google/gemini-2.5-flash"
    ]  # fmt: skip
    assert suite.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert suite.warnings == ()
    assert suite.judge is not None
    assert (suite.judge.min_kappa, suite.judge.min_labels, suite.judge.on_below_floor) == (
        0.4,
        10,
        "flag",
    )
    assert suite.max_cost_usd == 1.5
    assert sum(1 for task in suite.tasks if task.schema) == 3
    jq = suite.task("jq-filter").case("jq-remote")
    assert jq.check is not None and jq.check["run"].startswith("jq -r")
    for task in suite.tasks:
        for case in task.cases:
            assert render_messages(suite, task.id, case.id)[-1]["role"] == "user"


def test_model_strings_cover_models_judge_and_labels_without_variants() -> None:
    assert parse(dump(FULL)).model_strings() == ["fake/a", "fake/b", "fake/judge"]


def test_case_count_counts_cases_of_every_task() -> None:
    assert parse(dump(FULL)).case_count() == 2


def test_to_dict_is_json_and_parses_back_to_the_same_suite() -> None:
    suite = parse(dump(FULL))
    again = parse(json.dumps(suite.to_dict()))
    assert again.tasks == suite.tasks
    assert again.labels == suite.labels


def test_the_hash_of_a_suite_without_files_is_the_sha256_of_its_bytes() -> None:
    data = dump(FULL)
    assert parse(data).sha256 == hashlib.sha256(data).hexdigest()
    assert parse(data + b"# a comment\n").sha256 != parse(data).sha256


def test_suite_values_are_frozen() -> None:
    suite = parse(dump(FULL))
    with pytest.raises(AttributeError):
        suite.name = "other"  # type: ignore[misc]


ODD_VALUES: list[Any] = [
    None, 0, -1, 1.5, True, "", "{{x}}", "{{ a | b }}", [], [1], {}, {"a": 1}, [{}],
    [{"role": "system", "content": "x"}], "fake/a@zz", "a(b", "../x.csv", {"run": 1},
]  # fmt: skip


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    children = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else []
    )
    for key, child in children:
        found += _paths(child, (*prefix, key))
    return found


@pytest.mark.parametrize("origin", ["file", "upload"])
def test_any_malformed_suite_gives_problems_never_an_exception(origin: str) -> None:
    """Seeded mutations of every part of FULL: each gives a Suite or a SuiteError."""
    rng = random.Random(20260801)
    paths = [path for path in _paths(FULL) if path]
    for _ in range(100):
        document = copy.deepcopy(FULL)
        for path in rng.sample(paths, 2):
            node: Any = document
            with contextlib.suppress(KeyError, IndexError, TypeError):
                for part in path[:-1]:
                    node = node[part]
                node[path[-1]] = copy.deepcopy(rng.choice(ODD_VALUES))
        try:
            parse(dump(document), origin=origin)
        except SuiteError as error:
            assert all(problem.file == "suite.yaml" for problem in error.problems)


def test_the_example_in_the_docs_is_valid(tmp_path: pathlib.Path) -> None:
    docs = pathlib.Path(__file__).parents[2] / "docs" / "suite-format.md"
    example = docs.read_text().split("## A complete example\n\n```yaml\n")[1].split("```")[0]
    (tmp_path / "suite.yaml").write_text(example)
    (tmp_path / "translate.csv").write_text("id,language,text\ngreeting,French,Good morning\n")
    suite = load_suite(tmp_path / "suite.yaml")
    assert suite.warnings == ()
    assert suite.case_count() == 4


def test_a_flood_of_problems_is_cut_short_with_a_note() -> None:
    found = errors(b"suite: s\nversion: 1\ntasks: [" + b"1, " * 5000 + b"1]\n")
    assert len(found) == 201
    assert found[0].message == "expected a mapping, got the number 1"
    assert (
        str(found[-1]) == "suite.yaml: ... and more problems not shown (the first 200 are listed)"
    )


def test_a_tasks_case_is_found_by_id_and_a_missing_one_names_the_task():
    task = Task(
        id="greet",
        prompt="Hi {{name}}",
        cases=(Case(id="a", vars={"name": "first"}), Case(id="b", vars={"name": "second"}),
               Case(id="a", vars={"name": "repeated"})),
    )  # fmt: skip
    assert task.case("b").vars == {"name": "second"}
    assert task.case("a").vars == {"name": "first"}  # the first of a repeated id, as written
    with pytest.raises(ValueError, match="task 'greet' has no case 'z'"):
        task.case("z")
