"""Pair sets in (SPEC §10.5): a JSONL file of pairs, or a suite's own labelled pairs, stored
as a pair set with its votes and verdicts exactly as given."""

from __future__ import annotations

import json
import re

from django.db import IntegrityError, transaction

from evalsite.core.judging import task_text
from evalsite.core.pairsets import LabCase, PairSetError, lab_cases, pairset_name, parse_pairset
from evalsite.core.problems import Problem
from lab.judges import LabError
from lab.models import PairSet, PairSetItem
from runs.models import Judgement, Pair, Run
from runs.results.calibration import run_calibration

_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,59}$")


# --- importing ----------------------------------------------------------------------------


def import_pairset(
    data: bytes, *, filename: str, name: str | None = None, user=None
) -> tuple[PairSet, tuple[Problem, ...]]:
    """Store the pairs of a JSONL file as a pair set named ``name`` (default: the file's
    stem); returns it and the file's warnings. LabError with every problem, nothing stored."""
    chosen = name if name is not None else pairset_name(filename)
    if not _NAME.match(chosen):
        raise LabError([f"the name {chosen!r} is not usable: use lowercase letters, digits "
                        "and '-', at most 60 characters"])  # fmt: skip
    try:
        parsed = parse_pairset(data, filename=filename)
    except PairSetError as error:
        raise LabError(error.problems) from None
    cases = lab_cases(parsed.pairs)
    try:
        with transaction.atomic():
            pairset = PairSet.objects.create(
                name=chosen,
                source_name=filename[-255:],
                sha256=parsed.sha256,
                created_by=user if user is not None and user.is_authenticated else None,
            )
            PairSetItem.objects.bulk_create(
                (
                    _item(pairset, pair, case)
                    for pair, case in zip(parsed.pairs, cases, strict=True)
                ),
                batch_size=500,
            )
    except IntegrityError:
        message = f"a pair set named {chosen!r} exists already: choose another name"
        raise LabError([message]) from None
    return pairset, parsed.warnings


def _item(pairset: PairSet, pair, case: LabCase) -> PairSetItem:
    return PairSetItem(
        pairset=pairset,
        line=pair.line,
        pair_id=pair.id,
        task=pair.task or "",
        task_id=case.task_id,
        case_id=case.case_id,
        question=pair.question,
        answer_a=pair.answer_a,
        answer_b=pair.answer_b,
        model_a=pair.model_a,
        model_b=pair.model_b,
        votes=[{"labeller": v.labeller, "prefer": v.prefer} for v in pair.votes],
        verdicts=[{"judge": v.judge, "order": v.order, "prefer": v.prefer} for v in pair.verdicts],
    )


# --- a suite's labelled pairs as a pair set -----------------------------------------------------


_SIDE_TO_PAIRSET = {"baseline": "a", "candidate": "b", "tie": "tie"}


def suite_pairs_jsonl(suite) -> bytes:
    """The labelled, judged pairs of the suite's calibration run in the pair-set format
    (SPEC §10.5): answer_a is the baseline's answer, the votes are the labels that apply to
    the pair (the same matching as the run's calibration: one entry per judged item, at its
    first pair), and the run's judge verdicts are kept as given, in both orders. LabError
    when there is nothing labelled to take."""
    run = Run.objects.calibration_run(suite)
    if run is None:
        raise LabError([f"suite {suite.name} has no judged run"])
    core = run.suite_version.core_suite()
    votes = {item.pair: item.votes for item in run_calibration(run, core).judged}
    if not votes:
        raise LabError(
            [f"no labelled, judged pair in the calibration run {run.id} of {suite.name}"]
        )
    pairs = Pair.objects.filter(pk__in=list(votes)).select_related("baseline", "candidate")
    verdicts: dict[int | None, list[dict]] = {}
    for call in Judgement.objects.filter(pair__in=list(votes), kind=Judgement.Kind.PAIR):
        if call.side:
            verdicts.setdefault(call.pair_id, []).append(
                {
                    "judge": call.judge_model,
                    "order": call.order,
                    "prefer": _SIDE_TO_PAIRSET[call.side],
                }  # fmt: skip
            )
    lines = []
    for pair in pairs.order_by("pk"):
        row = {
            "id": f"{pair.task_id}/{pair.case_id}/{pair.repeat}",
            "task": pair.task_id,
            "question": task_text(core, pair.task_id, pair.case_id),
            "answer_a": pair.baseline.text,
            "answer_b": pair.candidate.text,
            "model_a": pair.baseline_contestant,
            "model_b": pair.candidate_contestant,
            "votes": [
                {"labeller": who, "prefer": _SIDE_TO_PAIRSET[prefer]}
                for who, prefer in sorted(votes[pair.pk].items())
            ],
            "judge": sorted(verdicts.get(pair.pk, []), key=lambda v: v["order"]),
        }
        lines.append(json.dumps(row, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode()


def import_suite_pairs(suite, *, name: str | None = None, user=None) -> PairSet:
    """A pair set of the suite's labelled pairs, to compare judges on the team's own labels."""
    data = suite_pairs_jsonl(suite)
    pairset, _ = import_pairset(data, filename=f"{suite.name}-labelled.jsonl", name=name, user=user)
    return pairset
