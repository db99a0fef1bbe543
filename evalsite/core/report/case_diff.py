"""The per-case diff of two runs (evalpin's ``diff``, evalblink's ``compare --detailed``), and
evalpin's results files, which either side of it may be.

Each case is *better*, *same* or *worse* by its share of passed attempts (2/2 against 1/2 is
better; with the same number of attempts that is the count of passed attempts), *new* when
only the later side has it and *gone* when only the earlier one does. Rows list the later
side's cases in its order, then the gone ones sorted by code point, as evalpin does.

An evalpin results file is the exact header ``evalpin-results 1`` and one row per case, ``ID
PASSED TOTAL``: fields separated by single spaces, decimal counts, TOTAL at least 1 and PASSED
at most TOTAL (both at most :data:`~evalsite.core.importers.evalpin.MAX_COUNT`), no blank row
and no ID twice; UTF-8, one leading BOM ignored and CRLF read as LF, as evalpin writes it on
any system (:func:`read_results`, errors name the line). The baseline JSON `evalsite import`
writes of one (:func:`read_baseline_json`) is held to the same counts, errors naming the key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from evalsite.core.importers import evalpin
from evalsite.core.input_limits import decode_text
from evalsite.core.json_text import JsonTextError, load_json
from evalsite.core.problems import SuiteError, format_problems
from evalsite.core.suite_schema import IDENTIFIER

HEADER = evalpin.RESULTS_HEADER
STATUSES = ("better", "same", "worse", "new", "gone")


class ResultsError(ValueError):
    """A results file that does not follow the format; the message names the line."""


@dataclass(frozen=True)
class Attempts:
    passed: int
    total: int

    @property
    def rate(self) -> Fraction:
        return Fraction(self.passed, self.total)

    def __str__(self) -> str:
        return f"{self.passed}/{self.total}"


@dataclass(frozen=True)
class CaseChange:
    key: str
    before: Attempts | None
    after: Attempts | None

    @property
    def status(self) -> str:
        if self.before is None:
            return "new"
        if self.after is None:
            return "gone"
        if self.after.rate == self.before.rate:
            return "same"
        return "better" if self.after.rate > self.before.rate else "worse"


@dataclass(frozen=True)
class CaseBaseline:
    """What a run's cases are held against (`evalsite run --baseline`, evalpin's rule): a
    run's or evalpin's cases by key, and whether they are keyed by case id (evalpin's) or as
    a run's. Stored on the run (its options) so the report's gate reads it, not the command."""

    name: str
    rows: Mapping[str, Attempts]
    by_case_id: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "by_case_id": self.by_case_id,
            "rows": {key: [a.passed, a.total] for key, a in self.rows.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CaseBaseline | None:
        if not data:
            return None
        rows = {key: Attempts(int(p), int(t)) for key, (p, t) in data["rows"].items()}
        return cls(str(data["name"]), rows, bool(data["by_case_id"]))


def failing_cases(changes: Iterable[CaseChange]) -> list[CaseChange]:
    """evalpin's rule against a baseline: a case fails when it is worse, or new and not
    fully passing; better, same and gone cases never fail."""
    return [
        c
        for c in changes
        if c.status == "worse"
        or (c.status == "new" and c.after is not None and c.after.passed < c.after.total)
    ]


def why_failing(change: CaseChange) -> str:
    """``greet 1/2 is worse`` / ``greet 0/2 is new and not fully passing``."""
    why = "worse" if change.status == "worse" else "new and not fully passing"
    return f"{change.key} {change.after} is {why}"


def diff_cases(before: Mapping[str, Attempts], after: Mapping[str, Attempts]) -> list[CaseChange]:
    """Every case of either side: the later side's in its order, then the gone ones."""
    rows = [CaseChange(key, before.get(key), attempts) for key, attempts in after.items()]
    gone = sorted(key for key in before if key not in after)
    return rows + [CaseChange(key, before[key], None) for key in gone]


def counts(changes: Iterable[CaseChange]) -> dict[str, int]:
    tally = dict.fromkeys(STATUSES, 0)
    for change in changes:
        tally[change.status] += 1
    return tally


def totals_text(changes: Iterable[CaseChange]) -> str:
    """``1 better, 0 same, 0 worse, 0 new, 0 gone``."""
    return ", ".join(f"{n} {status}" for status, n in counts(changes).items())


def diff_lines(changes: list[CaseChange], *, show: str = "all") -> list[str]:
    """The diff as an aligned table (``--show changes`` leaves out the same rows; the totals
    line still counts every case)."""
    shown = [c for c in changes if show == "all" or c.status != "same"]
    rows = [("CASE", "OLD", "NEW", "VS")] + [
        (c.key, str(c.before or "-"), str(c.after or "-"), c.status) for c in shown
    ]
    return [*_aligned(rows), f"cases: {totals_text(changes)}"]


def case_lines(cases: Mapping[str, Attempts]) -> list[str]:
    """evalpin's run table: each case's passed attempts, their share as a whole percentage
    (halves rounded up) and whether every attempt passed."""
    rows = [("CASE", "PASSED", "RATE", "ALL")] + [
        (key, str(attempts), f"{_percent(attempts.rate)}%", _yes(attempts))
        for key, attempts in cases.items()
    ]
    return _aligned(rows)


def _percent(rate: Fraction) -> int:
    return int(rate * 100 + Fraction(1, 2))  # floor(x + 1/2): halves up, exact


def _yes(attempts: Attempts) -> str:
    return "yes" if attempts.passed == attempts.total else "no"


def _aligned(rows: Sequence[tuple[str, ...]]) -> list[str]:
    """Columns two spaces apart, each as wide as its widest cell; the last one unpadded."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [
        "  ".join([*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[-1]])
        for row in rows
    ]


def parse_results(text: str, *, filename: str) -> dict[str, Attempts]:
    """The rows of an evalpin results file, by evalpin's case id, in order; ResultsError
    naming every line at fault (the format is read by :mod:`~evalsite.core.importers.evalpin`,
    the one reader of it)."""
    try:
        rows = evalpin.parse_results(text, filename)
    except SuiteError as error:
        raise ResultsError(format_problems(error.problems)) from None
    return {row.case: Attempts(row.passed, row.total) for row in rows}


def read_results(data: bytes, *, filename: str) -> dict[str, Attempts]:
    """The rows of an evalpin results file's bytes (UTF-8, a leading BOM and CRLF line ends
    allowed); ResultsError naming the line at fault."""
    try:
        text = decode_text(data, filename=filename).replace("\r\n", "\n")
    except SuiteError as error:
        raise ResultsError(format_problems(error.problems)) from None
    return parse_results(text, filename=filename)


def read_baseline_json(data: bytes, *, filename: str) -> dict[str, Attempts] | None:
    """The rows of the baseline JSON `evalsite import` writes of a results file, by the case
    ids it gave them; None when `data` is not a JSON object (no such file); ResultsError
    naming the key at fault when it is one but not that file."""
    if not data.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"{"):
        return None
    try:
        document = load_json(decode_text(data, filename=filename))
    except SuiteError as error:
        raise ResultsError(format_problems(error.problems)) from None
    except JsonTextError as error:
        raise ResultsError(f"{filename}: {error}") from None
    if not isinstance(document, dict) or document.get("format") != "evalpin-results":
        raise ResultsError(
            f"{filename}: not the baseline JSON `evalsite import` writes (format: "
            "evalpin-results) nor an evalpin results file"
        )
    cases = document.get("cases")
    if not isinstance(cases, list):
        raise ResultsError(f"{filename}: cases: must be a list of {{case, passed, total}}")
    rows: dict[str, Attempts] = {}
    for index, row in enumerate(cases):
        where = f"{filename}: cases[{index}]"
        if not isinstance(row, dict):
            raise ResultsError(f"{where}: must be an object {{case, passed, total}}")
        case = row.get("case")
        if not isinstance(case, str) or not re.match(IDENTIFIER, case):
            raise ResultsError(
                f"{where}.case: must be a case id (lowercase letters, digits and '-'), "
                f"not {_shown(case)}"
            )
        if case in rows:
            raise ResultsError(f"{where}.case: {case!r} is listed twice")
        passed, total = _json_count(row, "passed", where), _json_count(row, "total", where)
        if passed > total:
            raise ResultsError(f"{where}: passed ({passed}) cannot exceed total ({total})")
        rows[case] = Attempts(passed, total)
    return rows


def _json_count(row: Mapping[str, Any], key: str, where: str) -> int:
    value, least = row.get(key), 1 if key == "total" else 0
    if type(value) is not int or not least <= value <= evalpin.MAX_COUNT:
        raise ResultsError(
            f"{where}.{key}: must be a whole number from {least} to {evalpin.MAX_COUNT:,}, "
            f"not {_shown(value)}"
        )
    return value


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:39] + "…"


def as_case_ids(rows: Mapping[str, Attempts]) -> dict[str, Attempts]:
    """Rows keyed by the case ids `evalsite import` gives evalpin's cases."""
    ids = evalpin.evalsite_ids(list(rows))
    return {ids[key]: attempts for key, attempts in rows.items()}


def looks_like_results(head: bytes) -> bool:
    """Whether a file starting with ``head`` is an evalpin results file (a leading BOM and a
    CRLF line end allowed)."""
    head = head.removeprefix(b"\xef\xbb\xbf")
    return head.rstrip(b"\r\n") == HEADER.encode() or head.startswith(
        (HEADER.encode() + b"\n", HEADER.encode() + b"\r\n")
    )
