"""evalpin's three text formats: suites (``case`` / ``prompt:`` / ``expect KIND: VALUE``),
replies (``reply ID`` / ``| text`` / ``fail ID MESSAGE``) and results (``evalpin-results 1``).

A suite becomes one task, ``evalpin``, whose prompt is each case's own text (the var
``prompt``, inserted as written), with one evalsite case per evalpin case and its checks,
each read as evalpin reads a reply (``read: evalpin``; JSON numbers by spelling). The
contestant is the scripted model ``scripted/evalpin``, answering from the replies file in
evalpin's order: attempt k gets the k-th entry of the case, cycling, as evalsite's repeats
do. A results file becomes JSON a baseline can be loaded from (docs/importing.md).

Every file is UTF-8 text with one leading BOM ignored and CRLF read as LF; only ASCII space
and TAB are blanks around a line's parts. Every error names the file and line.
"""

from __future__ import annotations

import json
import pathlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from evalsite.core.importers.common import Collector, Translation, identifier, read_text, unique
from evalsite.core.problems import Problem, SuiteError
from evalsite.core.scoring.evalpin import is_json_scalar

__all__ = ["PinCase", "parse_replies", "parse_results", "parse_suite_text", "translate"]

ID = r"[a-z0-9][a-z0-9_-]*"
TASK = "evalpin"
MODEL = "evalpin"  # scripted/evalpin
BLANKS = " \t"
KINDS = ("equals", "contains", "not-contains", "one-of", "max-chars", "min-chars", "json")
_CASE = re.compile(rf"case[{BLANKS}]+(?P<id>\S+)")
_PROMPT = re.compile(rf"prompt:[{BLANKS}]*(?P<text>.*)")
_EXPECT = re.compile(
    rf"expect[{BLANKS}]+(?P<kind>[^:{BLANKS}]+)[{BLANKS}]*:[{BLANKS}]*(?P<value>.*)"
)
_REPLY = re.compile(rf"reply[{BLANKS}]+(?P<id>\S+)")
_FAIL = re.compile(rf"fail[{BLANKS}]+(?P<id>\S+)[{BLANKS}]+(?P<message>.+)")
_ROW = re.compile(rf"(?P<id>{ID}) (?P<passed>[0-9]+) (?P<total>[0-9]+)")
_DIGITS = re.compile(r"[0-9]{1,6}")
_JSON_PATH = re.compile(r"\$(?:\.[^.\[]+|\[[0-9]+\])*")
_STEP = re.compile(r"\.(?P<name>[^.\[]+)|\[(?P<index>[0-9]+)\]")
_EVALSITE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
RESULTS_HEADER = "evalpin-results 1"
MAX_COUNT = 1_000_000  # attempts of one case; more is not a results file


@dataclass
class PinCase:
    id: str
    line: int
    prompt: str | None = None
    prompt_line: int | None = None
    expects: list[tuple[str, str, int]] = field(default_factory=list)  # kind, value, line


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of the lines that are not blank or comments."""
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip(BLANKS)
        if stripped and not stripped.startswith("#"):
            yield number, stripped


def _id_problem(value: str) -> str | None:
    if re.fullmatch(ID, value):
        return None
    return (
        f"case id {value!r}: use lowercase ASCII letters, digits, _ and -, not starting with _ or -"
    )


def parse_suite_text(text: str, filename: str) -> list[PinCase]:
    """The cases of an evalpin suite; SuiteError with every problem, each at its line."""
    cases: list[PinCase] = []
    problems: list[Problem] = []
    seen: dict[str, int] = {}

    def problem(line: int, message: str) -> None:
        problems.append(Problem(filename, line, "", message))

    for number, line in _lines(text):
        if match := _CASE.fullmatch(line):
            case_id = match["id"]
            if (message := _id_problem(case_id)) is not None:
                problem(number, message)
            elif case_id in seen:
                problem(number, f"duplicate case id {case_id!r} (first at line {seen[case_id]})")
            seen.setdefault(case_id, number)
            cases.append(PinCase(case_id, number))
        elif not cases:
            problem(number, "expected 'case ID' before any prompt or expect line")
        elif match := _PROMPT.fullmatch(line):
            _set_prompt(cases[-1], match["text"], number, problem)
        elif match := _EXPECT.fullmatch(line):
            kind, value = match["kind"], match["value"]
            if (message := expect_problem(kind, value)) is not None:
                problem(number, message)
            cases[-1].expects.append((kind, value, number))
        else:
            problem(number, "expected 'case ID', 'prompt: TEXT' or 'expect KIND: VALUE'")
    for case in cases:
        if case.prompt is None:
            problem(case.line, f"case {case.id!r} has no 'prompt:' line")
        if not case.expects:
            problem(case.line, f"case {case.id!r} has no 'expect KIND: VALUE' line")
    if not cases and not problems:
        problem(1, "no 'case ID' line: this is not an evalpin suite")
    if problems:
        raise SuiteError(problems)
    return cases


def _set_prompt(case: PinCase, text: str, number: int, problem: Any) -> None:
    if case.prompt is not None:
        problem(number, f"case {case.id!r} has a second prompt (first at line {case.prompt_line})")
    elif not text:
        problem(number, "prompt: needs text")
    else:
        case.prompt, case.prompt_line = text, number


def expect_problem(kind: str, value: str) -> str | None:
    """Why ``expect KIND: VALUE`` is not one of evalpin's checks, or None."""
    if kind not in KINDS:
        return f"unknown check kind {kind!r}; evalpin's are {', '.join(KINDS)}"
    if not value:
        return f"expect {kind}: needs a value"
    if kind in ("max-chars", "min-chars") and not _DIGITS.fullmatch(value):
        return f"expect {kind}: takes 1 to 6 ASCII digits, not {value!r}"
    if kind == "one-of" and not all(choice.strip(BLANKS) for choice in value.split("|")):
        return "expect one-of: every choice between '|' must be non-empty"
    if kind == "json":
        path, equals, scalar = value.partition("=")
        path, scalar = path.strip(BLANKS), scalar.strip(BLANKS)
        if not equals or not _JSON_PATH.fullmatch(path):
            return "expect json: takes PATH = SCALAR, PATH like $.user.name or $.items[0]"
        if not is_json_scalar(scalar):
            return f"expect json: {scalar!r} is not one JSON scalar (string, number, boolean, null)"
    return None


def check_of(kind: str, value: str) -> dict[str, Any]:
    """The evalsite check for a valid ``expect KIND: VALUE``, read as evalpin reads."""
    read = {"read": "evalpin"}
    if kind in ("equals", "contains"):
        return {kind: value, **read}
    if kind == "not-contains":
        return {"not_contains": value, **read}
    if kind == "one-of":
        return {"one_of": [choice.strip(BLANKS) for choice in value.split("|")], **read}
    if kind in ("max-chars", "min-chars"):
        return {kind.replace("-", "_"): int(value), **read}
    path, _, scalar = value.partition("=")
    spec = {"path": evalsite_path(path.strip(BLANKS)), "equals": scalar.strip(BLANKS)}
    return {"json_path": {**spec, "compare": "json_spelling"}, **read}


def evalsite_path(path: str) -> str:
    """An evalpin path (``.name`` and ``[N]`` steps) in evalsite's spelling: a name that is
    not a plain name is written as a quoted key."""
    out = "$"
    for step in _STEP.finditer(path, 1):
        name = step["name"]
        if name is None:
            out += f"[{int(step['index'])}]"
        elif _EVALSITE_NAME.fullmatch(name):
            out += f".{name}"
        elif '"' not in name:
            out += f'["{name}"]'
        else:
            out += f"['{name}']"
    return out


# --- replies ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    case: str
    line: int
    text: str | None  # None for a `fail` entry
    message: str | None = None


def parse_replies(text: str, filename: str) -> list[Reply]:
    """The entries of an evalpin replies file, in order; SuiteError at the lines otherwise."""
    entries: list[Reply] = []
    problems: list[Problem] = []
    open_reply: list[str] | None = None  # the text lines of the reply being read
    start = (0, "")
    for number, line in enumerate(text.split("\n"), start=1):
        if line.startswith("|"):
            if open_reply is None:
                message = "a '|' text line outside a reply (after a blank, comment or fail line)"
                problems.append(Problem(filename, number, "", message))
            else:
                open_reply.append(line[2:] if line.startswith("| ") else line[1:])
            continue
        if open_reply is not None:
            entries.append(Reply(start[1], start[0], "\n".join(open_reply)))
            open_reply = None
        stripped = line.strip(BLANKS)
        if not stripped or stripped.startswith("#"):
            continue
        if match := _REPLY.fullmatch(stripped):
            problems += _reply_id_problem(match["id"], filename, number)
            open_reply, start = [], (number, match["id"])
        elif match := _FAIL.fullmatch(stripped):
            problems += _reply_id_problem(match["id"], filename, number)
            message = match["message"].strip(BLANKS)
            entries.append(Reply(match["id"], number, None, message))
        else:
            message = "expected 'reply ID', a '| text' line or 'fail ID MESSAGE'"
            problems.append(Problem(filename, number, "", message))
    if open_reply is not None:
        entries.append(Reply(start[1], start[0], "\n".join(open_reply)))
    if problems:
        raise SuiteError(problems)
    return entries


def _reply_id_problem(case_id: str, filename: str, number: int) -> list[Problem]:
    message = _id_problem(case_id)
    return [] if message is None else [Problem(filename, number, "", message)]


# --- results ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResultRow:
    case: str
    passed: int
    total: int
    line: int


def parse_results(text: str, filename: str) -> list[ResultRow]:
    """The rows of an ``evalpin-results 1`` file (strict: single spaces, no blank rows, no
    duplicates, 1 <= TOTAL, PASSED <= TOTAL); SuiteError at the lines otherwise."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline ending the last row
    if not lines or lines[0] != RESULTS_HEADER:
        raise SuiteError([Problem(filename, 1, "", f"the first line must be '{RESULTS_HEADER}'")])
    rows: list[ResultRow] = []
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines[1:], start=2):
        match = _ROW.fullmatch(line)
        if match is None:
            text = "expected 'ID PASSED TOTAL', separated by single spaces"
            problems.append(Problem(filename, number, "", text))
            continue
        passed, total = _count(match["passed"]), _count(match["total"])
        message = None
        if passed is None or total is None:
            message = f"PASSED and TOTAL are at most {MAX_COUNT:,}"
        elif total < 1:
            message = "TOTAL must be at least 1"
        elif passed > total:
            message = f"PASSED ({passed}) cannot exceed TOTAL ({total})"
        elif match["id"] in seen:
            message = f"duplicate id {match['id']!r} (first at line {seen[match['id']]})"
        if message or passed is None or total is None:
            problems.append(Problem(filename, number, "", message or ""))
            continue
        seen[match["id"]] = number
        rows.append(ResultRow(match["id"], passed, total, number))
    if problems:
        raise SuiteError(problems)
    return rows


def _count(digits: str) -> int | None:
    """The count `digits` spell, or None past MAX_COUNT (read before Python's int(), which
    refuses more than 4,300 digits with an exception of its own)."""
    significant = digits.lstrip("0") or "0"
    if len(significant) > len(str(MAX_COUNT)):
        return None
    return int(significant) if int(significant) <= MAX_COUNT else None


# --- translation ------------------------------------------------------------------------------


def kind_of(text: str) -> str | None:
    """'suite', 'replies' or 'results' by the first line that says, or None."""
    if text.split("\n", 1)[0] == RESULTS_HEADER:
        return "results"
    for _, line in _lines(text):
        if _CASE.fullmatch(line) or _PROMPT.fullmatch(line) or line.startswith("expect "):
            return "suite"
        if _REPLY.fullmatch(line) or _FAIL.fullmatch(line):
            return "replies"
        return None
    return None


def evalsite_ids(case_ids: list[str]) -> dict[str, str]:
    """evalpin case id → evalsite case id (``_`` is not allowed there: it becomes ``-``)."""
    taken: set[str] = set()
    return {case_id: unique(identifier(case_id, "case"), taken) for case_id in case_ids}


def translate(
    source: pathlib.Path, *, replies: pathlib.Path | None = None, repeats: int | None = None
) -> Translation:
    """An evalpin suite (with its replies file) or results file, translated."""
    text = read_text(source)
    kind = kind_of(text)
    if kind == "results":
        return translate_results(source, text)
    if kind == "replies":
        message = (
            "this is an evalpin replies file: import the suite and give this file with --replies"
        )
        raise SuiteError([Problem(str(source), None, "", message)])
    cases = parse_suite_text(text, str(source))
    ids = evalsite_ids([case.id for case in cases])
    collector = Collector(str(source))
    stem = identifier(source.stem, "evalpin")
    document: dict[str, Any] = {
        "suite": stem,
        "version": 1,
        "description": f"evalpin suite {source.name}, imported.",
        "models": [f"scripted/{MODEL}"],
    }
    if repeats is not None:
        document["repeats"] = repeats
    files: dict[str, str] = {}
    if replies is not None:
        replies_name = f"{stem}.replies.yaml"
        files[replies_name] = _replies_yaml(replies, ids, collector)
        document["replies"] = replies_name
    # evalpin fails a run (exit 1) unless every case passed every attempt (a `fail` too).
    document["gate"] = {"min_pass_all_rate": 1}
    document["tasks"] = [
        {"id": TASK, "prompt": "{{prompt}}", "cases": [_case(case, ids) for case in cases]}
    ]
    for old, new in ids.items():
        if old != new:
            collector.notes.append(f"case {old!r} is {new!r} in evalsite (ids take no '_')")
    return Translation(
        "evalpin",
        str(source),
        f"{stem}.yaml",
        document,
        files,
        tuple(collector.untranslated),
        tuple(collector.notes),
        _HEADER,
    )


_HEADER = (
    "evalpin runs one scripted contestant: here scripted/evalpin, answering from the",
    "replies file (attempt k gets the case's k-th reply, cycling). evalpin's -k N is",
    "`repeats:` (or `evalsite run --repeats N`); its checks read the reply as evalpin does",
    "(read: evalpin: ASCII blanks trimmed, a fence only around the whole reply; JSON numbers",
    "by spelling). The gate min_pass_all_rate: 1 fails the run unless every case passed",
    "every attempt, as evalpin's run without a baseline does (a scripted `fail` is a",
    "failed attempt).",
)


def _case(case: PinCase, ids: dict[str, str]) -> dict[str, Any]:
    return {
        "id": ids[case.id],
        "vars": {"prompt": case.prompt},
        "checks": [check_of(kind, value) for kind, value, _ in case.expects],
    }


def _replies_yaml(path: pathlib.Path, ids: dict[str, str], collector: Collector) -> str:
    entries = parse_replies(read_text(path), str(path))
    cycles: dict[str, list[Any]] = {}
    for entry in entries:
        if entry.case not in ids:
            why = "no case of the suite has this id; evalpin ignores it too"
            collector.skip_at(entry.line, f"reply for {entry.case!r}", why, file=str(path))
            continue
        item = entry.text if entry.text is not None else {"error": entry.message}
        cycles.setdefault(f"{TASK}/{ids[entry.case]}", []).append(item)
    for case_id, new in ids.items():
        if f"{TASK}/{new}" not in cycles:
            collector.notes.append(f"case {case_id!r} has no reply in {path}: its answers error")
    document = {MODEL: cycles}
    import yaml

    header = (
        f"# Scripted replies imported from evalpin's {path.name}: each case's entries in\n"
        "# order; repeat k gets entry k (cycling). {error: …} is evalpin's `fail`.\n"
    )
    return header + yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)


def translate_results(source: pathlib.Path, text: str) -> Translation:
    """An ``evalpin-results 1`` file as ``<stem>.baseline.json`` (docs/importing.md)."""
    rows = parse_results(text, str(source))
    ids = evalsite_ids([row.case for row in rows])
    document = {
        "format": "evalpin-results",
        "version": 1,
        "source": source.name,
        "cases": [
            {
                "task": TASK,
                "case": ids[row.case],
                "evalpin_id": row.case,
                "passed": row.passed,
                "total": row.total,
            }
            for row in rows
        ],
    }
    name = f"{identifier(source.stem, 'evalpin')}.baseline.json"
    content = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    return Translation("evalpin", str(source), None, None, {name: content})
