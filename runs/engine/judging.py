"""Judging a run (SPEC §7.6, §8): scoring its answers, forming pairs, the judge calls as rows,
reading the replies, combining the two orders of each pair, and the judge self-consistency
rechecks (`judge.consistency`) queued with the pair calls.

Every step is idempotent, so a shard resuming a run that stopped half-way through judging
completes it: scoring touches unscored answers only, pairs and judge calls are created under
unique constraints, and combining touches pairs without a score.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import defaultdict
from collections.abc import Iterable
from itertools import combinations, groupby
from typing import Any

from django.db import transaction

from evalsite.core.case_texts import grade_rubric, judge_text
from evalsite.core.judging import (
    PairSide,
    VerdictUnparseable,
    exclusion_reason,
    judge_call_params,
    pair_requests,
    parse_verdict,
    prompt_media,
    prompt_text,
    retry_messages,
    sent_messages,
    shown_to_side,
    with_media,
)
from evalsite.core.plan import call_hash
from evalsite.core.providers import Provider
from evalsite.core.providers.base import Request
from evalsite.core.scoring.grading import (
    DEFAULT_GRADE_THRESHOLD,
    GradeUnusable,
    grade_messages,
    graded,
    parse_grade,
)
from evalsite.core.suites import Suite
from runs import sealed
from runs.engine.scoring import score_run
from runs.models import Answer, Call, Judgement, Pair, Run, text_sha
from runs.models.rows import insert_each, update_each

RATIONALE_CHARS = 4000


def prepare_judging(run: Run, judge: Provider | None) -> None:
    """Score the answers, form the pairs and queue the judge calls of `run`."""
    score_run(run)
    suite = run.suite_version.core_suite()
    judge_model = run.judge.get("model")
    if not judge_model or judge is None:
        return
    _form_pairs(run, suite)
    with transaction.atomic():
        _queue_pair_calls(run, suite, judge, judge_model)
        _queue_grades(run, suite, judge, judge_model)
        queue_rechecks(run, suite, judge, judge_model)


# What pairing and grading read of an answer: never its request (a run of 100,000 answers
# is read in chunks, a cell at a time, so memory does not grow with the run).
_SIDE_FIELDS = ("id", "run", "task_id", "case_id", "repeat", "contestant", "status", "text",
                "schema_verdict", "exec_verdict", "exec_check")  # fmt: skip
BATCH = 500


def _contestant_pairs(run: Run, suite: Suite) -> list[tuple[str, str]]:
    """(baseline side, candidate side): the baseline against each candidate, or with
    ``pairing: all`` every two contestants, the earlier one on the baseline side."""
    contestants = list(run.contestants)
    if suite.judge is not None and suite.judge.pairing == "all":
        return list(combinations(contestants, 2))
    return [(contestants[0], candidate) for candidate in contestants[1:]]


def _form_pairs(run: Run, suite: Suite) -> None:
    judged_tasks = [task.id for task in suite.tasks if task.judge]
    answers = (
        Answer.objects.filter(run=run, task_id__in=judged_tasks)
        .only(*_SIDE_FIELDS)
        .order_by("task_id", "case_id", "repeat")
    )
    cells = groupby(
        answers.iterator(chunk_size=2000), key=lambda a: (a.task_id, a.case_id, a.repeat)
    )
    pairs = (
        pair
        for key, answers in cells
        for pair in _cell_pairs(run, suite, key, {a.contestant: a for a in answers})
    )
    _insert_new(Pair, pairs)


def _cell_pairs(run: Run, suite: Suite, key: tuple[str, str, int], sides: dict[str, Answer]):
    task_id, case_id, repeat = key
    for base, cand in _contestant_pairs(run, suite):
        if base not in sides or cand not in sides:
            continue
        baseline, candidate = sides[base], sides[cand]
        excluded = exclusion_reason(_verdicts(baseline), _verdicts(candidate))
        yield {
            "run_id": run.pk,
            "task_id": task_id,
            "case_id": case_id,
            "repeat": repeat,
            "baseline_id": baseline.pk,
            "candidate_id": candidate.pk,
            "baseline_contestant": base,
            "candidate_contestant": cand,
            "baseline_sha": _content_sha(baseline),
            "candidate_sha": _content_sha(candidate),
            "excluded_reason": excluded[0] if excluded else "",
            "excluded_side": excluded[1] if excluded else "",
        }


def _verdicts(answer: Answer) -> dict:
    return {
        "status": answer.status,
        "schema_verdict": answer.schema_verdict,
        "exec_verdict": answer.exec_verdict or None,
    }


def _queue_pair_calls(run: Run, suite: Suite, judge: Provider, judge_model: str) -> None:
    pending = (
        Pair.objects.included()
        .filter(run=run, judgements__isnull=True)
        .select_related("baseline", "candidate")
        .only(
            "pk",
            "task_id",
            "case_id",
            "repeat",
            "baseline_contestant",
            "candidate_contestant",
            *(f"{side}__{name}" for side in ("baseline", "candidate") for name in _SIDE_FIELDS),
        )
    )
    calls = (
        _judgement(run, request, judge, judge_model, pair_id=pair.pk, order=order)
        for pair in pending.iterator(chunk_size=BATCH)
        for order, request in pair_requests(
            suite,
            judge_model,
            (pair.task_id, pair.case_id, pair.repeat),
            _side(pair.baseline),
            _side(pair.candidate),
            contestants=(pair.baseline_contestant, pair.candidate_contestant),
        )
    )
    _insert_new(Judgement, calls)


def queue_rechecks(run: Run, suite: Suite, judge: Provider, judge_model: str) -> None:
    """Judge self-consistency (``judge.consistency: k``, docs/judging.md): a seeded sample of
    the run's judged pairs asked again k times in each order, each ask a ``recheck`` judge
    call whose request carries its attempt number, so it misses the response cache. Queued
    once: a run that already has any has them all (they are queued in one transaction with
    the pair calls)."""
    k = suite.judge.consistency if suite.judge else 0
    if not k or Judgement.objects.filter(run=run, kind=Judgement.Kind.RECHECK).exists():
        return
    from runs.engine.later import sample_pairs  # not at start-up: runs.engine.later

    included = Pair.objects.included().filter(run=run)
    chosen = sample_pairs(
        list(included.values_list("pk", flat=True)), f"{run.suite_version.sha256}:{run.id}"
    )
    calls = []
    for pair in included.filter(pk__in=chosen).select_related("baseline", "candidate"):
        key = (pair.task_id, pair.case_id, pair.repeat)
        requests = pair_requests(
            suite,
            judge_model,
            key,
            _side(pair.baseline),
            _side(pair.candidate),
            contestants=(pair.baseline_contestant, pair.candidate_contestant),
        )
        for attempt in range(1, k + 1):
            for order, request in requests:
                again = dataclasses.replace(request, attempt=attempt)
                calls.append(
                    _judgement(  # the pair calls' own row builder
                        run,
                        again,
                        judge,
                        judge_model,
                        pair_id=pair.pk,
                        order=order,
                        kind=Judgement.Kind.RECHECK,
                    )
                )
    _insert_new(Judgement, calls)


def _side(answer: Answer) -> PairSide:
    check = answer.exec_check or {}
    return PairSide(
        answer_text(answer), answer.exec_verdict or None, check.get("output_tail") or ""
    )


def _content_sha(answer: Answer) -> str:
    """What binds a label to an answer's content: its text's sha; none for an answer with
    no text, or in a no-look run (never labelled; a digest of a short answer could be
    matched against guesses)."""
    if answer.status != "done" or sealed.held(answer.run_id) is not None:
        return ""
    return text_sha(answer.text)


def answer_text(answer: Answer) -> str:
    """An answer's text: from its row, or in a no-look run from this process's memory."""
    held = sealed.held(answer.run_id)
    return held.text(answer) if held is not None else answer.text


def _queue_grades(run: Run, suite: Suite, judge: Provider, judge_model: str) -> None:
    graded = {task.id: task for task in suite.tasks if task.graded}
    if not graded:
        return
    cases = suite.graded_cases()
    answers = (
        Answer.objects.filter(run=run, task_id__in=graded, status=Call.Status.DONE)
        .exclude(grades__kind=Judgement.Kind.GRADE)
        .only(*_SIDE_FIELDS)
    )
    params = judge_call_params(suite)
    calls = (
        _judgement(
            run,
            grade_request(suite, answer, judge_model, params),
            judge,
            judge_model,
            answer_id=answer.pk,
            kind=Judgement.Kind.GRADE,
        )
        for answer in answers.iterator(chunk_size=BATCH)
        if (answer.task_id, answer.case_id) in cases
    )
    _insert_new(Judgement, calls)


def grade_request(
    suite: Suite,
    answer: Answer,
    judge_model: str,
    params: tuple[dict, frozenset[str]] | None = None,
) -> Request:
    """The grade call of one answer: the prompt its contestant was sent (its variant's),
    the task's rubric (its grade's, else the task's, else the judge's), followed by the
    case's own criteria and reference when it has them, each rendered with the case's vars
    (core.case_texts). ``params``: the judge's
    (:func:`judge_call_params`), read once by a caller that grades many answers."""
    task = suite.task(answer.task_id)
    case = task.case(answer.case_id)
    own = case.grade or {}
    reference = own["reference"] if isinstance(own.get("reference"), str) else None
    sent = sent_messages(suite, task.id, answer.case_id, answer.contestant)
    messages = grade_messages(
        prompt_text(sent),
        answer_text(answer),
        judge_text(suite, grade_rubric(suite, task), case),
        criteria=judge_text(suite, str(own.get("criteria") or ""), case),
        reference=None if reference is None else judge_text(suite, reference, case),
    )
    media = prompt_media(sent)
    params = params or judge_call_params(suite)
    return Request.from_params(
        judge_model,
        with_media(messages, media, judge_model),
        params[0],
        explicit=params[1],
        purpose="judge",
        task_id=answer.task_id,
        case_id=answer.case_id,
        repeat=answer.repeat,
    )


def _judgement(run, request: Request, judge: Provider, judge_model: str, **fields) -> dict:
    """The row of a pending judge call, for :func:`_insert_new` (``fields`` by attribute
    name: ``pair_id``, ``answer_id``, ``order``, ``kind``); a no-look run's row keeps its
    request without the messages (they quote the case and the answers), this process the
    request itself."""
    digest = call_hash(request, judge)
    held = sealed.held(run.pk)
    return {
        "run_id": run.pk,
        "judge_model": judge_model,
        "task_id": request.task_id,
        "case_id": request.case_id,
        "repeat": request.repeat,
        "request": held.row_request(request, digest) if held else request.to_json(),
        "request_hash": digest,
        **fields,
    }


def _insert_new(model: type[Pair | Judgement], rows: Iterable[dict]) -> None:
    """Pairs or judge calls, a batch at a time; one formed or queued already (a resumed
    preparation) is left as it is. Prepared INSERTs (insert_each): bulk_create spent most
    of queueing 4,000 judge calls building their SQL (docs/performance.md)."""
    for batch in itertools.batched(rows, BATCH):
        insert_each(model, batch, ignore_conflicts=True)


# --- reading a reply ----------------------------------------------------------------------


def read_judgement(call: Judgement, text: str, request: dict | None = None) -> dict:
    """The fields a judge reply sets on its row. A first unreadable reply sends the call
    back to pending with the retry request (the engine hashes it); a second one is
    recorded as unparseable. `request` is the call's request when its row does not hold
    it whole (a no-look run)."""
    request = request or call.request
    try:
        if call.kind == Judgement.Kind.GRADE:
            fields = _read_grade(call, text)
        else:
            winner, reason = parse_verdict(text)
            fields = {"winner": winner, "side": shown_to_side(winner, call.order)}
            fields["rationale"] = reason[:RATIONALE_CHARS]
    except (VerdictUnparseable, GradeUnusable) as error:
        if not call.retried:
            messages = retry_messages(request["messages"], text)
            return {
                "status": Call.Status.PENDING,
                "retried": True,
                "parse_error": str(error),
                "request": request | {"messages": messages},
            }
        return {"parse_status": Judgement.Parse.UNPARSEABLE, "parse_error": str(error)}
    return fields | {"parse_status": Judgement.Parse.OK, "parse_error": ""}


def _read_grade(call: Judgement, text: str) -> dict:
    grade = parse_grade(text)  # the pass at the task's threshold is decided when combining
    return {"grade_score": grade.score, "rationale": grade.reasoning[:RATIONALE_CHARS]}


# --- combining ------------------------------------------------------------------------------


@transaction.atomic
def finish_judging(run: Run) -> None:
    """Combine the two orders of every pair not yet combined, and copy grades to answers."""
    from runs.engine.later import pair_score  # not at start-up: runs.engine.later

    open_pairs = Pair.objects.included().filter(run=run, score__isnull=True)
    calls: defaultdict[int | None, dict[int, Judgement]] = defaultdict(dict)
    pair_calls = Judgement.objects.filter(pair__in=open_pairs, kind=Judgement.Kind.PAIR)
    for call in pair_calls.only("pair_id", "order", "status", "parse_status", "side").iterator():
        calls[call.pair_id][call.order] = call
    changes: dict[int, dict[str, Any]] = {}
    for pk in open_pairs.values_list("pk", flat=True):
        orders = calls.get(pk, {})
        first, second = orders.get(1), orders.get(2)
        if first is None or second is None or Call.Status.ERROR in (first.status, second.status):
            changes[pk] = {"excluded_reason": "judge_error"}
        elif Judgement.Parse.UNPARSEABLE in (first.parse_status, second.parse_status):
            changes[pk] = {"excluded_reason": "judge_unparseable"}
        else:
            combined = pair_score(first.side, second.side)
            changes[pk] = {
                "score": combined.score, "flip": combined.flip, "category": combined.category
            }  # fmt: skip
    update_each(Pair, changes)
    _copy_grades(run)


def _copy_grades(run: Run) -> None:
    grades = Judgement.objects.filter(
        run=run, kind=Judgement.Kind.GRADE, answer__grade_score__isnull=True
    ).select_related("answer")
    suite = run.suite_version.core_suite()
    answers = []
    for grade in grades:
        if grade.grade_score is None:
            continue  # unusable after its retry: an error, never a score
        task = suite.task(grade.task_id)
        threshold = (task.case_grade(task.case(grade.case_id)) or {}).get("threshold")
        if not isinstance(threshold, int | float):
            threshold = DEFAULT_GRADE_THRESHOLD
        result = graded(grade.grade_score, float(threshold))
        answer = grade.graded_answer
        answer.take_grade(result.score, result.passed)
        answers.append(answer)
    Answer.objects.bulk_update(answers, ["grade_score", "grade_passed", "passed"], batch_size=500)
