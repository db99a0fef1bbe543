"""A stored run's rows as CSV (`evalsite report RUN --format csv [--pairs]`), streamed.

Two tables, documented in docs/reports.md:

- :data:`ANSWER_COLUMNS`, one row per answer with its verdicts;
- :data:`PAIR_COLUMNS`, one row per pair: both orders' verdicts, the combined one, the flip,
  and the labellers' consensus as the pair pages show it (never who labelled, never a vote).

Rows are read with ``values()`` and ``iterator(chunk_size=…)``, so a run of any size is
written without holding its rows. Cells are plain values: ``true`` / ``false`` for a
verdict, empty for none. Text from answers, suites and judges is untrusted: a text cell
that a spreadsheet would read as a formula (it starts with ``=``, ``+``, ``-``, ``@``, a
tab or a carriage return) is written with a leading ``'`` (:func:`cell`).
"""

from __future__ import annotations

import csv
from collections.abc import Generator, Iterable, Sequence
from decimal import Decimal
from typing import Any, Protocol

from django.db.models import Case, CharField, F, OuterRef, Q, QuerySet, Subquery, Value, When

from runs.models import Answer, Judgement, Pair, Run

CHUNK = 2000
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

ANSWER_COLUMNS = (
    "task", "case", "contestant", "repeat", "status", "schema", "schema_pass", "checks_pass",
    "exec", "exec_pass", "grade", "grade_pass", "passed", "error_kind", "error",
    "input_tokens", "output_tokens", "cached_input_tokens", "cost_usd",
    "cost_if_uncached_usd", "latency_ms", "cached", "schema_error", "checks_note", "text",
)  # fmt: skip
PAIR_COLUMNS = (
    "task", "case", "repeat", "baseline", "candidate", "order_1", "order_2", "verdict",
    "score", "flip", "excluded", "human",
)  # fmt: skip

_ANSWER_FIELDS = (
    "task_id", "case_id", "contestant", "repeat", "status", "schema_verdict", "checks_passed",
    "exec_verdict", "grade_score", "grade_passed", "passed", "error_kind", "error_message",
    "input_tokens", "output_tokens", "cached_input_tokens", "cost_usd", "cost_if_uncached_usd",
    "latency_ms", "cached", "schema_error", "checks", "text",
)  # fmt: skip
SCHEMA_PASS = {"pass": True, "parse_fail": False, "schema_fail": False}
EXEC_PASS = {"pass": True, "fail": False, "error": False}


class Writable(Protocol):
    def write(self, text: str, /) -> Any: ...


def cell(value: object) -> str | int | float:
    """One CSV cell: numbers as they are, verdicts as true / false, None as empty, and text
    that could run as a spreadsheet formula behind a quote."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return value
    if isinstance(value, Decimal):
        return f"{value:f}"
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def write_csv(out: Writable, head: Sequence[str], rows: Iterable[Sequence[object]]) -> int:
    """`head` and `rows` to `out` as CSV, a row at a time; how many rows."""
    count = -1  # the head is a line, not a row
    for line in csv_lines(head, rows):
        out.write(line)
        count += 1
    return count


class _Line:
    """What csv.writer writes to when each line is wanted as a string (a streamed reply)."""

    def write(self, text: str) -> str:
        return text


def csv_lines(head: Sequence[str], rows: Iterable[Sequence[object]]) -> Generator[str]:
    """`head` and then each of `rows` as a line of CSV, one at a time (:func:`cell`)."""
    writer = csv.writer(_Line())
    yield writer.writerow(head)
    for row in rows:
        yield writer.writerow([cell(value) for value in row])


def answer_rows(run: Run, answers: QuerySet[Answer] | None = None) -> Generator[tuple[Any, ...]]:
    """Each answer of `run` as a row of :data:`ANSWER_COLUMNS`, in plan order; or those of
    `answers` (a filtered view of them, the web's download) in its own order."""
    if answers is None:
        answers = Answer.objects.filter(run=run).order_by(
            "task_id", "case_id", "repeat", "contestant"
        )
    for row in answers.values(*_ANSWER_FIELDS).iterator(chunk_size=CHUNK):
        yield (
            row["task_id"], row["case_id"], row["contestant"], row["repeat"], row["status"],
            row["schema_verdict"], SCHEMA_PASS.get(row["schema_verdict"]), row["checks_passed"],
            row["exec_verdict"], EXEC_PASS.get(row["exec_verdict"]), row["grade_score"],
            row["grade_passed"], row["passed"], row["error_kind"], row["error_message"],
            row["input_tokens"], row["output_tokens"], row["cached_input_tokens"],
            row["cost_usd"], row["cost_if_uncached_usd"], row["latency_ms"], row["cached"],
            row["schema_error"], checks_note(row["checks"]), row["text"],
        )  # fmt: skip


def checks_note(checks: dict | None) -> str:
    """What the failed deterministic checks say, joined; "" when none failed."""
    results = (checks or {}).get("results") or []
    return "; ".join(str(r.get("note") or r.get("kind")) for r in results if not r.get("passed"))


def pair_rows(run: Run) -> Generator[tuple[Any, ...]]:
    """Each pair of `run` as a row of :data:`PAIR_COLUMNS`, in the pairs page's order."""
    pairs = Pair.objects.filter(run=run).order_by("task_id", "case_id", "repeat", "pk")
    pairs = pairs.annotate(order_1=order_verdict(1), order_2=order_verdict(2))
    fields = (
        "task_id", "case_id", "repeat", "baseline_contestant", "candidate_contestant",
        "order_1", "order_2", "category", "score", "flip", "excluded_reason", "human",
    )  # fmt: skip
    for row in pairs.values(*fields).iterator(chunk_size=CHUNK):
        yield tuple(row[name] for name in fields)


def order_verdict(order: int) -> Subquery:
    """The judge's verdict on a pair in one order, in baseline / candidate / tie terms;
    ``error`` or ``unparseable`` when the call gave none; empty when not judged (yet)."""
    reading = Case(
        When(status=Judgement.Status.ERROR, then=Value("error")),
        When(parse_status=Judgement.Parse.UNPARSEABLE, then=Value("unparseable")),
        default=F("side"),
        output_field=CharField(),
    )
    calls = Judgement.objects.filter(
        Q(kind=Judgement.Kind.PAIR), pair=OuterRef("pk"), order=order
    ).annotate(reading=reading)
    return Subquery(calls.values("reading")[:1], output_field=CharField())
