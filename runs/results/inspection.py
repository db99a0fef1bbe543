"""A stored run read in the terminal: its failures (`report RUN --failures`) and one case
across every contestant (`report RUN --case ID`).

Every string from a run (answers, error messages, check notes, judge rationales) passes
through :func:`~evalsite.core.report.text.visible` line by line, so nothing a model wrote
reaches the terminal as an escape code, a bidi override or a carriage return.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator

from django.db.models import Q

from evalsite.core.report import numbers as num
from evalsite.core.report.text import visible
from runs.models import Answer, Judgement, Pair, Run
from runs.results.exports import CHUNK, checks_note

FAILED = Q(status=Answer.Status.ERROR) | Q(passed=False)  # a failed grade fails the attempt
JUDGE_FAILED = Q(status=Judgement.Status.ERROR) | Q(parse_status=Judgement.Parse.UNPARSEABLE)
MESSAGE_CHARS = 300


def answer_reasons(answer: Answer) -> list[str]:
    """Why an answer did not pass, one reason a line."""
    reasons = []
    if answer.status == Answer.Status.ERROR:
        reasons.append(f"error {answer.error_kind or 'unknown'}: {answer.error_message}")
    if answer.schema_verdict in ("parse_fail", "schema_fail"):
        reasons.append(f"schema {answer.schema_verdict}: {answer.schema_error}")
    if answer.checks_passed is False:
        reasons.append(f"checks failed: {checks_note(answer.checks)}")
    if answer.exec_verdict in ("fail", "error"):
        run = answer.exec_check or {}
        tail = (run.get("output_tail") or "").strip().splitlines()[-1:]
        reasons.append(f"exec {answer.exec_verdict}: {run.get('note') or ''} {' '.join(tail)}")
    if answer.match_passed is False:
        reasons.append(f"weighted match {num.rate(answer.match_score)}: below its threshold")
    if answer.grade_passed is False:
        reasons.append(f"grade {num.count(answer.grade_score)}: below the pass mark")
    if answer.passed is False and not reasons:  # every other verdict passed: the grade is due
        reasons.append("grade: the judge gave no usable grade")
    return [visible(reason.strip(), MESSAGE_CHARS) for reason in reasons]


def failure_lines(run: Run) -> Generator[str]:
    """The answers that failed or errored with their reasons, then the judge calls that gave
    no verdict."""
    answers = Answer.objects.filter(run=run).filter(FAILED).defer("request", "text", "parsed_json")
    total = Answer.objects.filter(run=run).count()
    failed = answers.count()
    yield f"run {visible(run.id)}  ({visible(run.suite.name)}): {failed} of {total} answers failed"
    for answer in answers.order_by("task_id", "case_id", "repeat", "contestant").iterator(CHUNK):
        yield f"  {_where(answer)}  {visible(answer.contestant)}"
        for reason in answer_reasons(answer) or ["did not pass"]:
            yield f"    {reason}"
    calls = Judgement.objects.filter(run=run).filter(JUDGE_FAILED)
    if calls.exists():
        yield f"judge calls without a verdict: {calls.count()}"
        for call in calls.order_by("task_id", "case_id", "repeat", "order").iterator(CHUNK):
            what = f"order {call.order}" if call.kind == Judgement.Kind.PAIR else "grade"
            reason = (
                call.error_message if call.status == Judgement.Status.ERROR else call.parse_error
            )
            kind = call.error_kind or call.parse_status
            yield f"  {_where(call)}  {what}  {visible(kind)}: {visible(reason, MESSAGE_CHARS)}"


def _where(call) -> str:
    return f"{visible(call.task_id)}/{visible(call.case_id)} #{call.repeat}"


def case_keys(run: Run, reference: str) -> list[tuple[str, str]]:
    """The (task, case) pairs of `run` that `reference` names: ``TASK/CASE``, or a case id
    (every task that has a case of that id)."""
    task, _, case = reference.strip().rpartition("/")
    answers = Answer.objects.filter(run=run, case_id=case)
    if task:
        answers = answers.filter(task_id=task)
    return sorted(set(answers.values_list("task_id", "case_id")))


def case_keys_latest(run: Run, reference: str) -> tuple[Run, list[tuple[str, str]]]:
    """`latest` with a case: the keys `reference` names in `run` (the latest run), else in
    the latest run of its suite with a report that answered the case (the latest may be a
    partial run that left it out: `--tag`, `--only`, `--limit`); `run` when none has it."""
    keys = case_keys(run, reference)
    if keys:
        return run, keys
    task, _, case = reference.strip().rpartition("/")
    answered = Answer.objects.filter(case_id=case, **({"task_id": task} if task else {}))
    earlier = (
        Run.objects.for_suite(run.suite)
        .filter(report__isnull=False, pk__in=answered.values("run_id"))
        .order_by("-created_at")
        .first()
    )
    return (earlier, case_keys(earlier, reference)) if earlier else (run, [])


def known_cases(run: Run, limit: int = 10) -> list[str]:
    keys = Answer.objects.filter(run=run).values_list("task_id", "case_id").distinct()
    return [f"{t}/{c}" for t, c in keys.order_by("task_id", "case_id")[:limit]]


def case_lines(run: Run, task: str, case: str) -> Generator[str]:
    """Every contestant's answers to one case with their verdicts, then its pairs with both
    orders' verdicts, the combined one and the labellers' consensus."""
    yield f"case {visible(task)}/{visible(case)} of run {visible(run.id)}"
    answers = Answer.objects.filter(run=run, task_id=task, case_id=case).defer("request")
    for answer in answers.order_by("repeat", "contestant"):
        yield from _answer_block(answer)
    pairs = Pair.objects.filter(run=run, task_id=task, case_id=case).order_by("repeat", "pk")
    judgements = {
        (j.pair_id, j.order): j
        for j in Judgement.objects.filter(pair__in=pairs, kind=Judgement.Kind.PAIR)
    }
    for pair in pairs:
        yield _pair_line(pair, judgements.get((pair.pk, 1)), judgements.get((pair.pk, 2)))


def _answer_block(answer: Answer) -> Iterator[str]:
    schema = answer.schema_verdict if answer.schema_verdict != "not_applicable" else "n/a"
    checks = {True: "pass", False: "fail", None: "n/a"}[answer.checks_passed]
    cost = num.money(answer.cost_usd, digits=6) if answer.cost_usd is not None else "not priced"
    yield (
        f"  {visible(answer.contestant)} #{answer.repeat}: {answer.status} - schema {schema}"
        f" - checks {checks} - exec {answer.exec_verdict or 'n/a'}"
        f" - {num.count(answer.input_tokens)} in / {num.count(answer.output_tokens)} out"
        f" - {cost}{' (cached)' if answer.cached else ''}"
    )
    for reason in answer_reasons(answer):
        yield f"    ! {reason}"
    for line in (answer.text or "").splitlines() or [""]:
        yield f"    | {visible(line)}"


def _pair_line(pair: Pair, first: Judgement | None, second: Judgement | None) -> str:
    head = (
        f"  pair #{pair.repeat} {visible(pair.candidate_contestant)} vs "
        f"{visible(pair.baseline_contestant)}"
    )
    if pair.excluded_reason:
        return f"{head}: excluded ({visible(pair.excluded_reason)})"
    orders = f"order 1 {_reading(first)}, order 2 {_reading(second)}"
    verdict = f"{pair.category or 'not judged'}" + (
        f" (score {pair.score})" if pair.score is not None else ""
    )
    flip = " - flip" if pair.flip else ""
    human = f" - humans: {visible(pair.human)}" if pair.human else ""
    return f"{head}: {orders} -> {verdict}{flip}{human}"


def _reading(call: Judgement | None) -> str:
    if call is None or call.status not in Judgement.FINISHED:
        return "pending"
    if call.status == Judgement.Status.ERROR:
        return "error"
    if call.parse_status == Judgement.Parse.UNPARSEABLE:
        return "unparseable"
    return visible(call.side)
