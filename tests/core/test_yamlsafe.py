"""Safe YAML loading: bounds, strictness, and a line for every value (no database)."""

from __future__ import annotations

import time

import pytest

from evalsite.core import yamlsafe
from evalsite.core.input_limits import MAX_BYTES, MAX_NODES
from evalsite.core.yamlsafe import load_yaml
from tests.helpers.yaml_loaders import yaml_problems

BILLION_LAUGHS = b"""\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def test_lines_are_recorded_for_every_key_and_item(loader: type) -> None:
    doc = load_yaml(b"suite: x\ntasks:\n  - id: a\n    cases:\n      - id: b\n", filename="s.yaml")
    assert doc.data == {"suite": "x", "tasks": [{"id": "a", "cases": [{"id": "b"}]}]}
    assert doc.lines[("tasks",)] == 2
    assert doc.lines[("tasks", 0)] == 3
    assert doc.lines[("tasks", 0, "cases", 0, "id")] == 5


def test_billion_laughs_is_refused_in_milliseconds(loader: type) -> None:
    assert len(BILLION_LAUGHS) < 400
    started = time.perf_counter()
    found = yaml_problems(BILLION_LAUGHS)
    assert time.perf_counter() - started < 5.0  # expanded, it would never end
    assert len(found) == 1
    assert "aliases expand past the limit" in found[0]


def test_small_aliases_and_merge_keys_load(loader: type) -> None:
    text = b"base: &b {temperature: 0}\nx:\n  <<: *b\n  max_tokens: 5\nrubric: &r hi\nagain: *r\n"
    doc = load_yaml(text, filename="s.yaml")
    assert doc.data["x"] == {"temperature": 0, "max_tokens": 5}
    assert doc.data["again"] == "hi"


def test_alias_to_its_own_parent_is_refused(loader: type) -> None:
    assert "refers to a node that contains it" in yaml_problems(b"a: &a [1, *a]\n")[0]


@pytest.mark.parametrize(
    "data",
    [b"[" * 10_000, b"- " * 10_000 + b"x\n", b"{a: " * 10_000],
    ids=["flow-sequences", "block-sequences", "flow-mappings"],
)
def test_ten_thousand_levels_of_nesting_are_refused_without_recursion(
    loader: type, data: bytes
) -> None:
    found = yaml_problems(data)
    assert found == ["s.yaml:1: nesting is deeper than 64 levels"]


def test_nesting_at_the_limit_loads(loader: type) -> None:
    depth = yamlsafe.MAX_DEPTH
    doc = load_yaml(b"[" * depth + b"]" * depth, filename="s.yaml")
    assert isinstance(doc.data, list)


def test_a_file_over_the_size_bound_is_refused_before_decoding() -> None:
    found = yaml_problems(b"\xff" * (MAX_BYTES + 1))  # invalid UTF-8 too: size is checked first
    assert found == [
        f"s.yaml: file is {MAX_BYTES + 1:,} bytes; the limit is {MAX_BYTES:,} bytes (5 MiB)"
    ]


def test_duplicate_keys_name_both_lines(loader: type) -> None:
    found = yaml_problems(b"suite: a\nversion: 1\nsuite: b\n")
    assert found == ["s.yaml:3: suite: duplicate key 'suite' (lines 1 and 3)"]


def test_duplicate_keys_in_nested_mappings_are_found(loader: type) -> None:
    found = yaml_problems(b"tasks:\n  - id: a\n    prompt: x\n    prompt: y\n")
    assert found == ["s.yaml:4: tasks[0].prompt: duplicate key 'prompt' (lines 3 and 4)"]


def test_a_merged_key_overridden_explicitly_is_not_a_duplicate(loader: type) -> None:
    doc = load_yaml(b"b: &b {x: 1}\nc: {<<: *b, x: 2}\n", filename="s.yaml")
    assert doc.data["c"] == {"x": 2}


def test_invalid_utf8_names_line_and_column() -> None:
    found = yaml_problems(b"suite: a\nversion: 1\ndescription: caf\xe9\n")
    assert found == ["s.yaml:3: not valid UTF-8: byte 0xe9 at column 17"]


def test_a_nul_byte_names_its_line() -> None:
    assert yaml_problems(b"suite: a\ndescription: x\x00y\n") == [
        "s.yaml:2: NUL byte at column 15: suite files must be text"
    ]


def test_an_escaped_nul_in_a_string_is_refused(loader: type) -> None:
    assert yaml_problems(b'a: 1\nb: "x\\0y"\n') == [
        "s.yaml:2: b: text contains a NUL character (U+0000)"
    ]


def test_a_lone_surrogate_escape_is_refused_with_its_line(loader: type) -> None:
    found = yaml_problems(b'suite: a\ndescription: "bad \\ud800 here"\n')
    assert len(found) == 1
    assert found[0].startswith("s.yaml:2:")
    assert "surrogate" in found[0]


def test_a_syntax_error_is_a_problem_with_line_and_column(loader: type) -> None:
    found = yaml_problems(b"suite: a\ntasks: [1, 2\nversion: 1\n")
    assert len(found) == 1
    assert found[0].startswith("s.yaml:")
    assert "YAML syntax error" in found[0]
    assert "column" in found[0]
    assert "Traceback" not in found[0]


def test_python_tags_are_refused(loader: type) -> None:
    found = yaml_problems(b"a: !!python/object/apply:os.system ['true']\n")
    assert "could not determine a constructor" in found[0]
    assert found[0].startswith("s.yaml:1:")


def test_keys_must_be_text(loader: type) -> None:
    found = yaml_problems(b"vars:\n  yes: 1\n  2: x\n")
    assert found == [
        "s.yaml:2: vars: key 'yes' is read by YAML as bool; quote it to use it as a name",
        "s.yaml:3: vars: key '2' is read by YAML as int; quote it to use it as a name",
    ]


def test_timestamps_stay_as_the_text_written(loader: type) -> None:
    assert load_yaml(b"d: 2026-01-01\n", filename="s.yaml").data == {"d": "2026-01-01"}


def test_non_json_values_are_refused(loader: type) -> None:
    found = yaml_problems(b"a: .nan\nb: !!binary aGk=\n")
    assert found[0].startswith("s.yaml:1: a:")
    assert found[1].startswith("s.yaml:2: b: unsupported YAML value (bytes)")


def test_yaml_11_coercions_are_recorded_with_their_source_text(loader: type) -> None:
    doc = load_yaml(b"a: NO\nb: 1.10\nc: 'NO'\nd: yes please\n", filename="s.yaml")
    assert doc.data == {"a": False, "b": 1.1, "c": "NO", "d": "yes please"}
    assert doc.coerced == {("a",): "NO", ("b",): "1.10"}


def test_an_empty_document_is_none() -> None:
    assert load_yaml(b"# nothing\n", filename="s.yaml").data is None


def test_a_file_with_too_many_values_is_refused_before_it_is_built() -> None:
    # Only under the default loader: the pure-Python scanner alone takes seconds here.
    data = b"tasks: [" + b"1," * MAX_NODES + b"1]\n"
    started = time.perf_counter()
    assert yaml_problems(data) == [
        "s.yaml:1: the file holds more than 200,000 values; split it or move cases to a file"
    ]
    assert time.perf_counter() - started < 10
