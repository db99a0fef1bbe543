"""A run's calibration where the ORM meets the core (SPEC §9, §10.1, §19): the labels that
apply to a run, matched once to its pairs, the pairs' human consensus (written here and
nowhere else), the suite's calibration run and whether its kappa is stale.

The labels come from two places: the suite file's ``labels:`` (in the stored suite version)
and the :class:`~runs.models.Label` rows members give in the browser or import.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction

from evalsite.core.calibration import (
    SUITE_FILE,
    UNNAMED,
    Calibration,
    LabelView,
    PairIndex,
    PairView,
    calibration_summary,
    match_labels,
)
from evalsite.core.judging import judge_config
from evalsite.core.report.build import PairRow
from evalsite.core.report.corrections import corrected_figures
from evalsite.core.stats.bootstrap import seed_from
from evalsite.core.stats.record import jsonable
from evalsite.core.suite_parts import NO_JUDGE
from evalsite.core.suites import Suite as CoreSuite
from runs.models import Label, Pair, Run, Suite
from runs.results.memo import FinishedRunMemo

PAIR_FIELDS = (
    "pk", "task_id", "case_id", "repeat", "baseline_contestant", "candidate_contestant",
    "baseline_sha", "candidate_sha", "excluded_reason", "score", "flip", "category",
)  # fmt: skip

_ROWS: FinishedRunMemo[list[dict]] = FinishedRunMemo()
_INDEXES: FinishedRunMemo[PairIndex] = FinishedRunMemo()
_MATCHED: FinishedRunMemo[dict[str, tuple]] = FinishedRunMemo()


def pair_rows(run: Run) -> list[dict]:
    """PAIR_FIELDS of every pair of `run`; a finished run's read once per process (the
    labellers' consensus, which still changes, is not among them)."""
    return _ROWS.get(
        run,
        lambda: list(Pair.objects.filter(run=run).values(*PAIR_FIELDS).iterator(chunk_size=2000)),
    )


def pair_view(row: dict) -> PairView:
    judged = not row["excluded_reason"] and row["score"] is not None
    return PairView(
        key=row["pk"],
        task=row["task_id"],
        case=row["case_id"],
        repeat=row["repeat"],
        baseline=row["baseline_contestant"],
        candidate=row["candidate_contestant"],
        baseline_sha=row["baseline_sha"],
        candidate_sha=row["candidate_sha"],
        judge=row["category"] if judged else None,
        score=row["score"] if judged else None,
    )


def run_calibration(
    run: Run,
    suite: CoreSuite | None = None,
    *,
    keep: Callable[[LabelView], bool] | None = None,
    rows: list[dict] | None = None,
) -> Calibration:
    """The labels that apply to `run`'s pairs, matched (SPEC §10.1): each judgement once;
    with `keep`, only the labels it keeps (what one member may see). The one builder of a
    run's calibration set: the report (which passes the pair `rows` it has just read), the
    pages, the queue and MCP all call it.

    A done run's matching of every label is kept until its labels change: a label submit
    reads it twice (for the pairs' consensus, then for the live panel), each a match of
    every label against a big run's pairs."""
    suite = suite or run.suite_version.core_suite()
    if rows is not None:
        index = PairIndex(pair_view(row) for row in rows)
    else:
        index = _INDEXES.get(run, lambda: PairIndex(pair_view(row) for row in pair_rows(run)))
    labels = tuple(run_labels(run, suite))
    if keep is not None or rows is not None:
        return match_labels(index, labels if keep is None else filter(keep, labels))
    last = _MATCHED.get(run, dict)  # a done run's: its last labels and their matching
    seen, matched = last.get("labels_matched", (None, None))
    if seen != labels or matched is None:
        matched = match_labels(index, labels)
        last["labels_matched"] = (labels, matched)  # one assignment: threads read it whole
    return matched


def run_labels(run: Run, suite: CoreSuite) -> list[LabelView]:
    """The suite file's labels, then the members' labels of the run's contestants."""
    labels = [
        LabelView(
            source=SUITE_FILE,
            labeller=label.labeller or UNNAMED,
            task=label.task,
            case=label.case,
            baseline=label.baseline,
            candidate=label.candidate,
            prefer=label.prefer,
            probability=label.probability,
        )
        for label in suite.labels
    ]
    contestants = set(run.contestants)
    rows = Label.objects.filter(
        suite=run.suite, baseline__in=contestants, candidate__in=contestants
    ).values(
        "source", "labeller_name", "task_id", "case_id", "baseline", "candidate", "prefer",
        "baseline_sha", "candidate_sha", "mode", "created_at", "probability",
    )  # fmt: skip
    labels.extend(
        LabelView(
            source=row["source"],
            labeller=row["labeller_name"],
            task=row["task_id"],
            case=row["case_id"],
            baseline=row["baseline"],
            candidate=row["candidate"],
            prefer=row["prefer"],
            baseline_sha=row["baseline_sha"],
            candidate_sha=row["candidate_sha"],
            mode=row["mode"],
            at=row["created_at"].isoformat(),
            probability=row["probability"],
        )
        for row in rows.iterator(chunk_size=2000)
    )
    return labels


# --- the pairs' human consensus: written here only ----------------------------------------


def store_human(run: Run, calibration: Calibration | None = None) -> None:
    """Set each pair's `human` to its item's consensus (and clear it where there is none
    now), for the pages' disagreement filter and the targeted queue. Only the pairs whose
    consensus changed are written: a label moves a few pairs of a big run, not all."""
    wanted = (calibration or run_calibration(run)).human_by_pair
    stored = dict(Pair.objects.filter(run=run).with_consensus().values_list("pk", "human"))
    cleared = [pk for pk in stored if pk not in wanted]
    changed = [Pair(pk=pk, human=human) for pk, human in wanted.items() if stored.get(pk) != human]
    with transaction.atomic():
        if cleared:
            Pair.objects.filter(pk__in=cleared).update(human="")
        Pair.objects.bulk_update(changed, ["human"], batch_size=500)


def refresh_human(suite: Suite, content: dict[str, str]) -> None:
    """After a label of `content` changed: the consensus of every finished run of the suite
    that has a pair with that content."""
    runs = (
        Run.objects.filter(
            pk__in=Pair.objects.filter(run__suite_version__suite=suite)
            .with_content_either_way(content)
            .values("run_id"),
            status=Run.Status.DONE,
        )
        .select_related("suite_version__suite")
        .defer("estimate", *Run.BULKY)
    )  # without the report and the suite's document: megabytes of JSON on a big run
    for run in runs:
        store_human(run)


# --- the suite's calibration ----------------------------------------------------------------


def current_judge_config(suite: Suite) -> dict[str, str] | None:
    """The judge configuration the suite's latest version asks for (None: no judge)."""
    version = suite.latest_version()
    if version is None:
        return None
    core = version.core_suite()
    return judge_config(core, core.judge_model) if core.judge_model else None


def is_stale(run: Run, current: dict[str, str] | None) -> bool:
    """Whether `run`'s kappa measured another judge than the suite's current one."""
    return current is not None and run.judge_config != current


def calibration_of(
    run: Run, *, brief: bool = False, keep: Callable[[LabelView], bool] | None = None
) -> dict[str, Any]:
    """The calibration section of `run` with every label given so far (the report's own,
    recomputed), with the judge configuration it measures."""
    core = run.suite_version.core_suite()
    matched = run_calibration(run, core, keep=keep)
    summary = calibration_summary(
        matched, **calibration_gate(core), seed=seed_from(run.suite_version.sha256), brief=brief
    )
    extra: dict[str, Any] = {"judge_config": run.judge_config}
    if not brief:
        extra["corrected"] = corrected_of(run, matched)
    return jsonable(summary) | extra


def corrected_of(run: Run, matched: Calibration) -> dict[str, dict[str, Any]]:
    """Each candidate's label-corrected win-rate against the run's baseline, as the report
    has it, from the labels given so far: for the calibration page and MCP, where a team
    reads how many more labels it needs."""
    pairs = [pair_row(row) for row in pair_rows(run)]
    return jsonable(corrected_figures(run.contestants, pairs, matched.judged))


def pair_row(row: dict) -> PairRow:
    """A row of PAIR_FIELDS as the report builder reads a pair."""
    return PairRow(
        key=row["pk"],
        task=row["task_id"],
        case=row["case_id"],
        repeat=row["repeat"],
        baseline=row["baseline_contestant"],
        candidate=row["candidate_contestant"],
        excluded_reason=row["excluded_reason"],
        score=row["score"],
        flip=row["flip"],
        category=row["category"],
    )


def calibration_gate(suite: CoreSuite) -> dict[str, Any]:
    """What the calibration gate of a run of `suite` reads (core.calibration_summary's
    thresholds): the report and the pages take them from here, so both build the same
    section."""
    judge = suite.judge or NO_JUDGE
    return {
        "min_kappa": judge.min_kappa,
        "min_labels": judge.min_labels,
        "min_lower_bound": judge.min_kappa_lower_bound,
    }


def suite_calibration(
    suite: Suite, run: Run | None = None, *, brief: bool = False
) -> dict[str, Any] | None:
    """What the labelling panel, the calibration page, the dashboard badge and MCP show:
    the calibration of the suite's calibration run (or the chosen `run`), naming the run and
    whether its kappa is stale. None before the suite has a judged run."""
    run = run or Run.objects.calibration_run(suite)
    if run is None:
        return None
    current = current_judge_config(suite)
    stale = is_stale(run, current)
    return calibration_of(run, brief=brief) | {
        "run_id": run.id,
        "judge": run.judge.get("model"),
        "pinned": run.pk == suite.baseline_run_id,
        "stale": stale,
        "current_judge_config": current,
    }
