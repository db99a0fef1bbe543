"""Writing a run's report (SPEC §11): rows in, the pure core builds the dict once, the dict is
stored on the run and rendered to files under ``REPORTS_DIR/<suite>/<run-id>/``. The
calibration section comes from :func:`runs.results.calibration.run_calibration`, the one builder
of a run's calibration set (the suite file's labels and the members' labels matched to the
run's pairs), summed up by :func:`evalsite.core.calibration.calibration_summary` at the
thresholds of :func:`runs.results.calibration.calibration_gate`, as the pages and MCP have it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any, TextIO

from django.db.models import Count, Q, Sum
from django.utils import timezone

from evalsite.core.judge_warnings import CUT_OFF_REASONS
from evalsite.core.pricing import resolve_models
from evalsite.core.providers.base import ErrorKind
from evalsite.core.report.build import AnswerRow, ReportInput, build_report
from evalsite.core.report.case_diff import CaseBaseline, CaseChange
from evalsite.core.report.html import render_html
from evalsite.core.report.markdown import render_markdown
from evalsite.core.report.sent import SENT_FIELDS, sent_sets
from evalsite.core.scoring.aggregate import answer_tags
from evalsite.core.scoring.scorecard import CaseScore, json_valid_of, score_answer
from evalsite.core.suite_parts import NO_JUDGE
from evalsite.core.suites import Suite
from runs.models import Answer, Call, Judgement, Pair, Run
from runs.models.run import MoneyField
from runs.results.calibration import (
    PAIR_FIELDS,
    calibration_gate,
    pair_row,
    run_calibration,
    store_human,
)
from runs.results.case_diff import SideError, baseline_changes
from runs.results.media import report_attachments

REPORT_FILES = ("report.json", "report.md", "report.html", "answers.jsonl", "pairs.jsonl")


def write_report(run: Run, *, status: str | None = None) -> dict[str, Any]:
    """Build the report of `run` from its rows, store it on the run and write its files
    (`status`: the one the run is about to end with, when it is written first)."""
    directory = run.report_dir
    directory.mkdir(parents=True, exist_ok=True)
    # The answers are read once: the report's rows, and answers.jsonl written as they are read
    # (in place once the report is built).
    with _replacing(directory / "answers.jsonl") as jsonl:
        cards: list[CaseScore] = []  # each answer's scorecard, worked out once for all three
        answers = list(_answer_rows(run, run.suite_version.core_suite(), lines=jsonl, cards=cards))
        report = compute_report(
            run, store_consensus=True, status=status, answers=answers, scorecards=cards
        )
    report["report_path"] = str(directory)
    _write(directory / "pairs.jsonl", _jsonl(_pair_lines(run)))
    _write(directory / "report.md", render_markdown(report))
    _write(directory / "report.html", render_html(report, report_attachments(run)))
    _write(directory / "report.json", json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    Run.objects.filter(pk=run.pk).update(report=report)
    run.report = report
    return report


def compute_report(
    run: Run,
    *,
    store_consensus: bool = False,
    status: str | None = None,
    answers: list[AnswerRow] | None = None,
    scorecards: Sequence[CaseScore] = (),
) -> dict[str, Any]:
    """The report of `run` from its rows; with `store_consensus`, each pair's labellers'
    consensus is also kept on the pair (for the disagreement filter of the pairs page).
    `answers`: the run's answer rows, when the caller has read them already, and
    `scorecards`: theirs, when it has worked them out."""
    suite = run.suite_version.core_suite()
    if answers is None:
        answers = list(_answer_rows(run, suite))
    rows = list(Pair.objects.filter(run=run).values(*PAIR_FIELDS).iterator(chunk_size=2000))
    pairs = [pair_row(row) for row in rows]
    judge = suite.judge or NO_JUDGE
    calibration = run_calibration(run, suite, rows=rows)
    thresholds = calibration_gate(suite)
    baseline = run.stored_options.case_baseline  # `run --baseline`: its verdict is a gate
    if store_consensus:
        store_human(run, calibration)
    judge_calls = Judgement.objects.filter(run=run).aggregate(
        calls=Count("pk"),
        retries=Count("pk", filter=Q(retried=True)),
        cached=Count("pk", filter=Q(cached=True)),
        first_cached=Count("pk", filter=Q(first_cached=True)),
        cost=Sum("cost_usd"),
        uncached=Sum("cost_if_uncached_usd"),
    )
    table = run.price_table
    return build_report(
        ReportInput(
            run_id=run.id,
            status=status
            or (run.status if run.status != Run.Status.REPORTING else Run.Status.DONE),
            detail=run.detail,
            suite_name=run.suite.name,
            suite_hash=run.suite_version.sha256,
            contestants=run.contestants,
            answers=answers,
            pairs=pairs,
            calibration=calibration,
            created_at=run.created_at.isoformat(),
            finished_at=(run.finished_at or timezone.now()).isoformat(),
            judge_model=run.judge.get("model"),
            judge_config=run.judge_config,
            min_kappa=thresholds["min_kappa"],
            min_labels=thresholds["min_labels"],
            min_kappa_lower_bound=thresholds["min_lower_bound"],
            mover_threshold=suite.mover_threshold,
            frontier_points=suite.frontier_points,
            task_kinds={task.id: task.kind or "" for task in suite.tasks},
            price_table={
                "name": table.name,
                "pinned": table.pinned.isoformat(),
                "verified": table.verified,
                "priced_as": _priced_as(run),
            },
            repeats=run.repeats,
            pairing=judge.pairing,
            judge_calls=judge_calls["calls"] + judge_calls["retries"],
            judge_cache_hits=judge_calls["cached"] + judge_calls["first_cached"],
            judge_cost_usd=float(judge_calls["cost"] or 0),
            judge_uncached_usd=float(judge_calls["uncached"] or 0),
            judge_errors=_judge_failures(run),
            judge_max_tokens=judge.max_tokens,
            judge_cut_off=_judge_cut_off(run),
            simulated=run.simulated,
            no_look=run.no_look,
            cost_incomplete=run.cost_incomplete,
            command=reproduce_command(run),
            cache_state=_cache_state(answers, judge_calls),
            previous=previous_report(run),
            gate=dict(suite.gate),
            pinned=_pinned(run),
            strict_gates=run.stored_options.strict_gates,
            on_below_floor=judge.on_below_floor,
            case_baseline=baseline.name if baseline else "",
            baseline_changes=_against(baseline, run),
            scorecard=suite.scorecard,
            scorecards=scorecards,
            judge_consistency=judge.consistency,
            rechecks=recheck_rows(run) if judge.consistency else (),
            sent=sent_params(run),
        )
    )


def _against(baseline: CaseBaseline | None, run: Run) -> Sequence[CaseChange] | str:
    """The run's cases against its `--baseline`, or why they cannot be (a results file
    holds one contestant's cases): the report's `baseline` gate reads either."""
    if baseline is None:
        return ()
    try:
        return baseline_changes(baseline, run)
    except SideError as error:
        return str(error)


def sent_params(run: Run) -> dict[str, list[dict[str, Any]]]:
    """What each contestant and the judge was sent: its calls' stored requests' parameters,
    each distinct set once (the database picks them out; the messages are not read)."""
    keys = [f"request__{name}" for name in SENT_FIELDS]
    answers = Answer.objects.filter(run=run).values_list("contestant", "task_id", *keys)
    judged = Judgement.objects.filter(run=run).values_list("judge_model", "task_id", *keys)
    order = {name: index for index, name in enumerate(run.contestants)}
    rows = sorted(answers.distinct().order_by(), key=lambda row: (order.get(row[0], 0), row[1]))
    rows += [(f"the judge {model}", *rest) for model, *rest in judged.distinct().order_by()]
    return sent_sets(rows)


# --- rows ------------------------------------------------------------------------------------


_ROW_FIELDS = (
    "task_id", "case_id", "contestant", "repeat", "status", "schema_verdict", "schema_mode",
    "checks", "checks_passed", "exec_verdict", "exec_check", "grade_score", "grade_passed",
    "passed", "latency_ms", "input_tokens", "output_tokens", "cost_usd",
    "cost_if_uncached_usd", "cached", "error_kind", "error_message", "match_score",
    "match_passed", "finish_reason",
)  # fmt: skip
# An answer's line in answers.jsonl: these values, then its scorecard.
_LINE_FIELDS = (
    "task_id", "case_id", "contestant", "repeat", "status", "text", "schema_verdict",
    "schema_mode", "schema_error", "checks_passed", "checks", "exec_verdict", "exec_check",
    "grade_score", "grade_passed", "match_score", "match_passed", "match_detail", "passed",
    "latency_ms", "input_tokens", "output_tokens", "cost_usd", "cost_if_uncached_usd",
    "cached", "error_kind", "error_message",
)  # fmt: skip


_LINE_MONEY = tuple(
    name for name in _LINE_FIELDS if isinstance(Answer._meta.get_field(name), MoneyField)
)


def _reads_text(suite: Suite) -> bool:
    """Whether the answer rows need the text: a json_valid criterion parses it."""
    return any(criterion.scorer == "json_valid" for criterion in suite.scorecard)


def _answer_rows(
    run: Run, suite: Suite, *, lines: TextIO | None = None, cards: list[CaseScore] | None = None
) -> Iterator[AnswerRow]:
    """The report's row of each finished answer (a stopped run's pending are not among
    them); with `lines`, each answer's line of answers.jsonl is written there as it is read:
    its values, then its scorecard (score, pass and each criterion's, or the error that
    excludes it), which is also put on `cards` for the report."""
    fields = _ROW_FIELDS + (("text",) if _reads_text(suite) else ())
    if lines is not None:
        fields = tuple(dict.fromkeys(_LINE_FIELDS + fields))
    to_row = _row_maker(suite)
    finished = Answer.objects.filter(run=run).finished()
    for values in finished.values(*fields).iterator(chunk_size=2000):
        row = to_row(values)
        if lines is not None:
            card = score_answer(suite.scorecard, row)
            if cards is not None:
                cards.append(card)
            line = {key: values[key] for key in _LINE_FIELDS}
            for key in _LINE_MONEY:  # Decimal USD, which JSON has no type for
                line[key] = _plain(line[key])
            line["scorecard"] = card.to_dict()
            lines.write(_json_line(line))
        yield row


def _row_maker(suite: Suite) -> Callable[[dict], AnswerRow]:
    """The report's row of an answer from its values (with ``text`` when the scorecard has
    a json_valid criterion)."""
    schemas = {task.id: task.answer_schema is not None for task in suite.tasks}
    graded = suite.graded_cases()
    tags = {
        (task.id, case.id): answer_tags(task.tags, case.tags)
        for task in suite.tasks
        for case in task.cases
    }
    wants_json = _reads_text(suite)
    # The database gives each row its own copy of the texts many rows share (task, case,
    # contestant, verdicts): the rows keep one each, about 25 MB of 100,000 answers.
    shared: dict[str, str] = {}
    one = shared.setdefault

    def to_row(row: dict) -> AnswerRow:
        has_schema = schemas.get(row["task_id"])  # None: a task the suite no longer has
        return AnswerRow(
            task=one(row["task_id"], row["task_id"]),
            case=one(row["case_id"], row["case_id"]),
            contestant=one(row["contestant"], row["contestant"]),
            repeat=row["repeat"],
            status=one(row["status"], row["status"]),
            tags=tags.get((row["task_id"], row["case_id"]), ()),
            schema_verdict=one(row["schema_verdict"], row["schema_verdict"]),
            schema_mode=one(row["schema_mode"], row["schema_mode"]),
            has_schema=bool(has_schema),
            has_checks=bool((row["checks"] or {}).get("results")),
            checks_passed=row["checks_passed"],
            exec_verdict=one(row["exec_verdict"], row["exec_verdict"]),
            isolation=(row["exec_check"] or {}).get("isolation", ""),
            graded=has_schema is not None and (row["task_id"], row["case_id"]) in graded,
            grade_score=row["grade_score"],
            grade_passed=row["grade_passed"],
            match_score=row["match_score"],
            match_passed=row["match_passed"],
            json_valid=(
                json_valid_of(row["schema_verdict"], row["text"] or "")
                if wants_json and row["status"] == "done"
                else None
            ),
            passed=row["passed"],
            latency_ms=row["latency_ms"],
            input_tokens=row["input_tokens"],
            output_tokens=row["output_tokens"],
            cost_usd=_float(row["cost_usd"]),
            cost_if_uncached_usd=_float(row["cost_if_uncached_usd"]),
            cached=row["cached"],
            error_kind=one(row["error_kind"], row["error_kind"]),
            error_message=row["error_message"],
            finish_reason=row.get("finish_reason") or "",
        )

    return to_row


def _float(value) -> float | None:
    return None if value is None else float(value)


def _judge_failures(run: Run) -> list[dict]:
    failed = Judgement.objects.filter(run=run).filter(
        Q(status=Judgement.Status.ERROR) | Q(parse_status=Judgement.Parse.UNPARSEABLE)
    )
    return [
        {
            "task": call.task_id,
            "case": call.case_id,
            "repeat": call.repeat,
            "contestant": f"judge {call.judge_model}",
            "kind": call.error_kind or "judge_unparseable",
            "message": (call.error_message or call.parse_error)[:500],
        }
        for call in failed[:200]
    ]


def _judge_cut_off(run: Run) -> int:
    """Judge calls stopped by max_tokens that left no verdict: an unreadable reply that
    stopped there, or an empty one (an error whose message gives the stop reason)."""
    stopped = Q(finish_reason__in=CUT_OFF_REASONS) & (
        Q(status=Judgement.Status.ERROR) | Q(parse_status=Judgement.Parse.UNPARSEABLE)
    )
    reasons = "|".join(CUT_OFF_REASONS)
    empty = Q(status=Judgement.Status.ERROR, error_kind=ErrorKind.EMPTY.value) & Q(
        error_message__iregex=rf"finish reason: ({reasons})\)"
    )
    return Judgement.objects.filter(run=run).filter(stopped | empty).count()


def _cache_state(answers: list[AnswerRow], judge_calls: dict) -> str:
    hits = sum(1 for a in answers if a.cached) + judge_calls["cached"] + judge_calls["first_cached"]
    total = len(answers) + judge_calls["calls"] + judge_calls["retries"]
    return f"{hits} of {total} calls answered from the response cache"


def reproduce_command(run: Run) -> str:
    version = run.suite_version
    options = run.stored_options
    parts = ["evalsite", "run", version.source_path or version.suite.name]
    parts += ["--models", ",".join(run.contestants)]
    if options.fake:
        parts.append("--fake")
    if options.replies:
        parts += ["--replies", options.replies]
    if run.repeats != 1:
        parts += ["--repeats", str(run.repeats)]
    for selector in options.only:
        parts += ["--only", selector]
    for tag in options.tags:
        parts += ["--tag", tag]
    if options.limit:
        parts += ["--limit", str(options.limit)]
    if options.no_cache:
        parts.append("--no-cache")
    parts += ["--max-cost", f"{run.cap_usd:f}"]
    return shlex.join(parts)


def _priced_as(run: Run) -> dict[str, str]:
    """The run's models priced by another model's row (a dated snapshot's), each with it."""
    models = [c.partition("@")[0] for c in run.contestants] + [run.judge.get("model") or ""]
    rows = run.price_table.prices.values_list("model", flat=True)
    return dict(resolve_models(filter(None, models), rows).aliases)


def _pinned(run: Run) -> dict | None:
    baseline = run.suite.baseline_run
    return baseline.report if baseline is not None else None


def previous_report(run: Run) -> dict | None:
    """The report of the latest earlier finished run of the same suite with the same
    baseline and at least one candidate in common."""
    earlier = (
        Run.objects.for_suite(run.suite)
        .filter(status=Run.Status.DONE, created_at__lt=run.created_at, report__isnull=False)
        .exclude(pk=run.pk)
        .order_by("-created_at")
    )
    candidates = set(run.contestants[1:])
    # The contestants of each: a report is a large JSON value, read only for the one found.
    for pk, contestants in earlier.values_list("pk", "contestants")[:50]:
        if contestants[0] == run.contestants[0] and candidates & set(contestants[1:]):
            return Run.objects.filter(pk=pk).values_list("report", flat=True).first()
    return None


# --- files -----------------------------------------------------------------------------------


def _pair_lines(run: Run) -> Iterator[dict]:
    verdicts: dict[int, dict] = {}
    calls = Judgement.objects.filter(run=run, kind=Judgement.Kind.PAIR).values(
        "pair_id", "order", "winner", "side", "rationale", "parse_status", "status", "cached"
    )
    for call in calls.iterator(chunk_size=2000):
        verdicts.setdefault(call["pair_id"], {})[f"order{call['order']}"] = {
            key: call[key] for key in ("winner", "side", "rationale", "parse_status", "status")
        }
    fields = (
        "pk", "task_id", "case_id", "repeat", "baseline_contestant", "candidate_contestant",
        "excluded_reason", "excluded_side", "score", "category", "flip",
    )  # fmt: skip
    for row in Pair.objects.filter(run=run).values(*fields).iterator(chunk_size=2000):
        yield {
            "pair": row["pk"],
            "task": row["task_id"],
            "case": row["case_id"],
            "repeat": row["repeat"],
            "baseline": row["baseline_contestant"],
            "candidate": row["candidate_contestant"],
            "excluded": row["excluded_reason"] or None,
            "excluded_side": row["excluded_side"] or None,
            "score": row["score"],
            "category": row["category"] or None,
            "flip": row["flip"],
            "judge": verdicts.get(row["pk"], {}),
        }


def _plain(value):
    return float(value) if isinstance(value, Decimal) else value


def _jsonl(rows: Iterable[dict]) -> str:
    return "".join(_json_line(row) for row in rows)


def _json_line(row: dict) -> str:
    return _LINE_ENCODER.encode(row) + "\n"


# What json.dumps(row, ensure_ascii=False) uses, made once: json.dumps builds an encoder for
# every call given an option, and answers.jsonl is one call an answer.
_LINE_ENCODER = json.JSONEncoder(ensure_ascii=False)


def _write(path: Path, text: str) -> None:
    with _replacing(path) as out:
        out.write(text)


@contextlib.contextmanager
def _replacing(path: Path) -> Iterator[TextIO]:
    """A temp file in the same directory, renamed over `path` when the block ends without an
    error (and removed when it does not): readers never see half a file."""
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as out:
            yield out
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def recheck_rows(run: Run) -> list[tuple[str, int, str, str]]:
    """Judge self-consistency's rows (``judge.consistency: k``): (candidate, pair, first
    verdict, extra verdict) for every extra verdict read whose
    order's first verdict was read too, in baseline / candidate / tie terms; pairs against
    the baseline only (with ``pairing: all`` the sample holds others too)."""
    read = {"status": Call.Status.DONE, "parse_status": Judgement.Parse.OK}
    first = {
        (row["pair_id"], row["order"]): row["side"]
        for row in Judgement.objects.filter(run=run, kind=Judgement.Kind.PAIR, **read).values(
            "pair_id", "order", "side"
        )
    }
    again = Judgement.objects.filter(
        run=run,
        kind=Judgement.Kind.RECHECK,
        pair__baseline_contestant=run.contestants[0],  # the pairs a win-rate is over
        **read,
    ).values("pair_id", "order", "side", "pair__candidate_contestant")
    return [
        (row["pair__candidate_contestant"], row["pair_id"], first[key], row["side"])
        for row in again.order_by("pk")
        if (key := (row["pair_id"], row["order"])) in first
    ]
