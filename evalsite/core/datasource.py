"""Datasources: a task's cases read at run time (``cases_from:``), not from the suite.

A task takes its cases from ``cases_from: {python: "module:function"}`` (a callable,
imported like a ``python:`` check with the suite's folder searched first, that returns or
yields case mappings) or ``cases_from: {command: [argv, ...]}`` (a program run in the suite's
folder without a shell, printing one case a line as JSON). Reading is bounded in cases,
bytes and time. Each case is validated like an inline case (the suite format's ``case``,
unique ids, then the templates with its vars) and every error names the source and the
line (or item) it came from.

The suite a run uses is the suite with these cases inlined (:func:`with_source_cases`); its
hash covers the cases read, so a source that returns other cases is another version. A run
of such a suite is never resumed (docs/no-look.md says why).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from evalsite.core.problems import Problem, SourceMap, SuiteError
from evalsite.core.schema_errors import schema_problems
from evalsite.core.scoring.checks import load_python
from evalsite.core.suites import Suite, parse_document

MAX_CASES = 100_000
MAX_BYTES = 256 * 1024 * 1024  # what a command may print, all lines together
_CASE_PATH = re.compile(r"tasks\[(\d+)\]\.cases\[(\d+)\]")


def command_timeout_s() -> float:
    """How long a source command may run: EVALSITE_SOURCE_TIMEOUT_S, read when a command
    starts (the core reads no environment as it is imported)."""
    return float(os.environ.get("EVALSITE_SOURCE_TIMEOUT_S", "600"))


class SourceError(SuiteError):
    """Cases that cannot be read from a source, each problem naming the source and line."""


def source_name(spec: Mapping[str, Any]) -> str:
    """How messages name a source: ``python sources.tickets:cases`` or ``command ./x --y``."""
    if "python" in spec:
        return f"python {spec['python']}"
    return "command " + " ".join(str(part) for part in spec.get("command") or ())


def uses_sources(suite: Suite) -> bool:
    return any(task.cases_from for task in suite.tasks)


def source_problems(suite: Suite, folder: Path) -> list[str]:
    """For `evalsite validate`: each source that cannot be used (a reference that does not
    import, a command that does not exist), named by its task. Nothing is read."""
    problems = []
    for task in suite.tasks:
        spec = task.cases_from
        if not spec:
            continue
        reason = _unusable(spec, folder)
        if reason:
            problems.append(f"tasks {task.id}: cases_from ({source_name(spec)}): {reason}")
    return problems


def _unusable(spec: Mapping[str, Any], folder: Path) -> str | None:
    if "python" in spec:
        try:
            load_python(spec["python"], (str(folder),))
        except (Exception, SystemExit) as error:  # noqa: BLE001 - named in the message
            return f"cannot import it: {type(error).__name__}: {str(error)[:200]}"
        return None
    program = str(spec["command"][0])
    found = (folder / program).is_file() if "/" in program else shutil.which(program)
    return None if found else f"no program {program!r} (looked in the suite's folder and PATH)"


def with_source_cases(suite: Suite, folder: Path, *, quote: bool = True) -> Suite:
    """`suite` with each datasource's cases read and inlined, validated as inline cases;
    SourceError naming the source and line of every bad case. With `quote` False (a no-look
    run), messages name where a case is wrong and never what it holds."""
    if not uses_sources(suite):
        return suite
    document = suite.to_dict()
    digest = hashlib.sha256(suite.sha256.encode())
    origins: dict[tuple[int, int], str] = {}  # (task index, case index): source and line
    for index, (raw, task) in enumerate(zip(document["tasks"], suite.tasks, strict=True)):
        if not task.cases_from:
            continue
        cases, wheres = read_cases(task.cases_from, folder, quote=quote)
        origins |= {(index, j): where for j, where in enumerate(wheres)}
        raw.pop("cases_from")
        raw["cases"] = cases
        digest.update(b"\0" + task.id.encode() + b"\0" + json.dumps(cases, sort_keys=True).encode())
    try:
        full = parse_document(
            document, filename=suite.filename, base_dir=folder, origin=suite.origin
        )
    except SuiteError as error:
        raise SourceError(_located(error.problems, origins, quote)) from None
    return dataclasses.replace(full, sha256=digest.hexdigest(), replies_path=suite.replies_path)


def _located(
    problems: Iterable[Problem], origins: Mapping[tuple[int, int], str], quote: bool
) -> list[Problem]:
    """The problems of the suite with its sources' cases inlined; one about a case read from
    a source is named by that source and line, not by where the case was inlined."""
    located = []
    for problem in problems:
        found = _CASE_PATH.match(problem.path)
        where = origins.get((int(found[1]), int(found[2]))) if found else None
        if found is None or where is None:
            located.append(problem)
            continue
        rest = problem.path[found.end() :].lstrip(".")
        message = problem.message if quote else "not valid here (its value is not shown: no-look)"
        located.append(Problem(where, None, rest, message, problem.severity))
    return located


def read_cases(
    spec: Mapping[str, Any], folder: Path, *, quote: bool = True
) -> tuple[list[dict[str, Any]], list[str]]:
    """The cases of one source, each checked against the case format, ids unique; with
    where each came from (``command ./x line 3``)."""
    name = source_name(spec)
    if "python" in spec:
        items, unit = _from_callable(spec["python"], folder, name), "item"
    else:
        items, unit = _from_command([str(p) for p in spec["command"]], folder, name), "line"
    cases, wheres, problems = [], [], []
    seen: dict[str, int] = {}
    for number, item in items:
        where = SourceMap(f"{name} {unit} {number}", {(): None})
        wheres.append(where.file)
        found = schema_problems(item, where, definition="case")
        problems += _unquoted(found, quote, f"{name} {unit} {number}")
        case_id = item.get("id") if isinstance(item, dict) else None
        if isinstance(case_id, str) and case_id in seen:
            message = f"case id {case_id!r} repeats {unit} {seen[case_id]}"
            problems.append(Problem(f"{name} {unit} {number}", None, "id", message))
        elif isinstance(case_id, str):
            seen[case_id] = number
        cases.append(item)
    if not cases and not problems:
        problems.append(Problem(name, None, "", "the source gave no cases"))
    if problems:
        raise SourceError(problems)
    return cases, wheres


def _unquoted(problems: Iterable[Problem], quote: bool, where: str) -> list[Problem]:
    if quote:
        return list(problems)
    return [
        Problem(where, None, p.path, "not a valid case here (its value is not shown: no-look)")
        for p in problems
    ]


def _from_callable(reference: str, folder: Path, name: str) -> Iterable[tuple[int, Any]]:
    try:
        function = load_python(reference, (str(folder),))
        produced = function()
        items = list(itertools.islice(iter(produced), MAX_CASES + 1))
    except (Exception, SystemExit) as error:  # noqa: BLE001 - the source's own failure
        raise SourceError([Problem(name, None, "", f"failed: {type(error).__name__}")]) from None
    if len(items) > MAX_CASES:
        raise SourceError([Problem(name, None, "", f"gave more than {MAX_CASES} cases")])
    return [(number, _plain(item)) for number, item in enumerate(items, 1)]


def _plain(item: Any) -> Any:
    """A mapping as a plain dict of JSON values (what a command's line would give)."""
    if not isinstance(item, Mapping):
        return item
    try:
        return json.loads(json.dumps(dict(item)))
    except (TypeError, ValueError):
        return {"id": item.get("id"), "vars": "not JSON values"}


def _from_command(argv: list[str], folder: Path, name: str) -> list[tuple[int, Any]]:
    output = _run(argv, folder, name)
    items = []
    for number, line in enumerate(output.splitlines(), 1):
        if not line.strip():
            continue
        try:
            items.append((number, json.loads(line)))
        except json.JSONDecodeError as error:
            at = f"column {error.colno}: {error.msg}"
            problem = Problem(f"{name} line {number}", None, "", f"not JSON ({at})")
            raise SourceError([problem]) from None
        if len(items) > MAX_CASES:
            raise SourceError([Problem(name, None, "", f"gave more than {MAX_CASES} cases")])
    return items


def _run(argv: list[str], folder: Path, name: str) -> str:
    """The command's standard output (its standard error is passed through), bounded in
    bytes and time; SourceError when it fails, overflows or overruns."""
    program = str(folder / argv[0]) if "/" in argv[0] else argv[0]
    try:
        process = subprocess.Popen([program, *argv[1:]], cwd=folder, stdout=subprocess.PIPE)
        stdout = process.stdout
        assert stdout is not None  # stdout=PIPE
    except OSError as error:
        raise SourceError([Problem(name, None, "", f"cannot start: {error.strerror}")]) from None
    timeout_s = command_timeout_s()
    timer = threading.Timer(timeout_s, process.kill)
    timer.start()
    try:
        data = stdout.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            process.kill()
        code = process.wait()
    finally:
        timer.cancel()
        stdout.close()
    if len(data) > MAX_BYTES:
        raise SourceError([Problem(name, None, "", f"printed more than {MAX_BYTES} bytes")])
    if code != 0:
        reason = f"timed out after {timeout_s:g} s" if code < 0 else f"exited {code}"
        raise SourceError([Problem(name, None, "", reason)])
    return data.decode("utf-8", errors="replace")
