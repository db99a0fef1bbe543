"""Parsers for the files a suite refers to, each giving data plus a line for every path.

- :func:`load_document`: a schema or labels file; JSON when the name ends in ``.json``
  (Python's json module, with NaN/Infinity and duplicate keys refused), else YAML through
  :mod:`~evalsite.core.yamlsafe`.
- :func:`load_cases`: a cases file; JSONL (``.jsonl``: one case object a line, blank lines
  skipped) or CSV (``.csv``: header ``id,<var columns…>[,tags]``, tags separated by ``;``,
  every value text; a field holds at most 131,072 characters, the csv module's limit). In
  either, a var whose value is ``file://PATH`` is a file the case attaches (``files:``).

Both bound size and node count and check UTF-8 and NUL like the suite file, refuse NUL
characters and lone surrogates in any string, and raise SuiteError with every problem found
in the file.
"""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

from evalsite.core.input_limits import (
    MAX_NODES,
    count_nodes,
    decode_text,
    nodes_message,
    value_problems,
)
from evalsite.core.json_text import JsonTextError, load_json
from evalsite.core.problems import Path, Problem, SourceMap, SuiteError, format_path
from evalsite.core.yamlsafe import YamlDocument, load_yaml


def load_document(data: bytes, *, filename: str) -> YamlDocument:
    """A schema or labels file: JSON when the name ends in ``.json``, else YAML."""
    if not filename.lower().endswith(".json"):
        return load_yaml(data, filename=filename)
    text = decode_text(data, filename=filename)
    try:
        value = load_json(text)
    except JsonTextError as error:
        raise SuiteError([Problem(filename, error.line, "", str(error))]) from None
    _check_nodes(value, filename)
    lines, duplicates = json_lines(text)
    problems = [
        Problem(
            filename,
            second,
            format_path(path),
            f"duplicate key '{path[-1]}' (lines {first} and {second})",
        )
        for path, first, second in duplicates
    ]
    problems += value_problems(value, SourceMap(filename, lines))
    if problems:
        raise SuiteError(problems)
    return YamlDocument(value, lines, {})


def _check_nodes(value: Any, filename: str) -> None:
    """Bound the work later checks do, as the YAML loader does with MAX_NODES."""
    if count_nodes(value) > MAX_NODES:
        raise SuiteError([Problem(filename, None, "", nodes_message())])


_JSON_LEXEME = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')


def json_lines(text: str) -> tuple[dict[Path, int], list[tuple[Path, int, int]]]:
    """Line of every path in a *valid* JSON text, and duplicate keys (path, first, second).

    Python's json module reports no positions; valid JSON has no raw newlines inside
    strings, so counting newlines between lexemes is exact.
    """
    lines: dict[Path, int] = {(): 1}
    duplicates: list[tuple[Path, int, int]] = []
    stack: list[dict[str, Any]] = []  # {"path", "key" | "index", "seen"}
    line, pos = 1, 0
    for match in _JSON_LEXEME.finditer(text):
        line, pos = line + text.count("\n", pos, match.start()), match.start()
        lexeme, top = match.group(), stack[-1] if stack else None
        if lexeme in ("]", "}"):
            stack.pop()
        elif lexeme == ",":
            if top is not None and "seen" in top:
                top["key"] = None
        elif lexeme == ":":
            continue
        elif top is not None and "seen" in top and top["key"] is None:
            top["key"] = key = json.loads(lexeme)
            lines[(*top["path"], key)] = line
            if key in top["seen"]:
                duplicates.append(((*top["path"], key), top["seen"][key], line))
            top["seen"][key] = line
        else:
            path = _value_path(top, lines, line)
            if lexeme == "{":
                stack.append({"path": path, "key": None, "seen": {}})
            elif lexeme == "[":
                stack.append({"path": path, "index": -1})
    return lines, duplicates


def _value_path(top: dict[str, Any] | None, lines: dict[Path, int], line: int) -> Path:
    if top is None:
        lines[()] = line
        return ()
    if "seen" in top:
        return (*top["path"], top["key"])
    top["index"] += 1
    path = (*top["path"], top["index"])
    lines[path] = line
    return path


def load_cases(data: bytes, *, filename: str) -> tuple[YamlDocument, list[Problem]]:
    """Case rows from JSONL (``.jsonl``) or CSV (``.csv``), each path's line being its row's.

    Rows that cannot be read are left out and reported in the returned problems, so the
    other rows can still be checked; SuiteError only when the file cannot be read at all.
    """
    lowered = filename.lower()
    if not lowered.endswith((".jsonl", ".csv")):
        raise SuiteError([Problem(filename, None, "", "a cases file must end in .jsonl or .csv")])
    text = decode_text(data, filename=filename)
    rows, lines, problems = (_jsonl_rows if lowered.endswith(".jsonl") else _csv_rows)(
        text, filename
    )
    _check_nodes(rows, filename)
    problems += value_problems(rows, SourceMap(filename, lines))
    for index, row in enumerate(rows):
        _file_columns(row, index, lines)
    return YamlDocument(rows, lines, {}), problems


FILE_SCHEME = "file://"


def _file_columns(row: Any, index: int, lines: dict[Path, int]) -> None:
    """Move each var whose value is ``file://PATH`` into the case's ``files`` as PATH: in a
    cases file that is how a column names a file (relative to the suite's folder)."""
    if not isinstance(row, dict) or not isinstance(row.get("vars"), dict):
        return
    named = {
        name: value[len(FILE_SCHEME) :]
        for name, value in row["vars"].items()
        if isinstance(value, str) and value.startswith(FILE_SCHEME)
    }
    if not named:
        return
    files = row.setdefault("files", {})
    if not isinstance(files, dict):
        return
    for name, path in named.items():
        del row["vars"][name]
        files.setdefault(name, path)
        line = lines.get((index, "vars", name), lines.get((index,)))
        if line is not None:
            lines[(index, "files", name)] = line


def _jsonl_rows(text: str, filename: str) -> tuple[list[Any], dict[Path, int], list[Problem]]:
    rows: list[Any] = []
    lines: dict[Path, int] = {(): 1}
    problems: list[Problem] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            row = load_json(raw, object_pairs_hook=_unique_pairs)
        except JsonTextError as error:
            problems.append(Problem(filename, number, "", str(error)))
            continue
        lines[(len(rows),)] = number
        rows.append(row)
    return rows, lines, problems


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key '{key}'")
        result[key] = value
    return result


def _csv_rows(text: str, filename: str) -> tuple[list[Any], dict[Path, int], list[Problem]]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows: list[Any] = []
    lines: dict[Path, int] = {(): 1}
    try:
        header = [name.strip() for name in next(reader, [])]
        problems = _header_problems(header, filename)
        if problems:  # no row can be read without a usable header
            raise SuiteError(problems)
        start = reader.line_num + 1
        for record in reader:
            line, start = start, reader.line_num + 1
            if not any(cell.strip() for cell in record):
                continue
            if len(record) != len(header):
                message = f"row has {len(record)} fields; the header has {len(header)}"
                problems.append(Problem(filename, line, "", message))
                continue
            lines[(len(rows),)] = line
            rows.append(_csv_case(dict(zip(header, record, strict=True))))
    except csv.Error as error:
        problems.append(Problem(filename, reader.line_num, "", f"not valid CSV: {error}"))
    return rows, lines, problems


def _header_problems(header: list[str], filename: str) -> list[Problem]:
    problems = []
    if "id" not in header:
        problems.append(Problem(filename, 1, "", "the header needs an 'id' column"))
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        problems.append(Problem(filename, 1, "", f"repeated header columns: {', '.join(repeated)}"))
    return problems


def _csv_case(record: dict[str, str]) -> dict[str, Any]:
    case: dict[str, Any] = {"id": record.pop("id")}
    tags = record.pop("tags", "")
    case["vars"] = record
    if tags.strip():
        case["tags"] = [tag.strip() for tag in tags.split(";") if tag.strip()]
    return case
