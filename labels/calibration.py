"""Calibration from this app's labels: the source a run's report asks for, and the live
calibration of a suite that the labelling page and the calibration page show."""

from __future__ import annotations

from evalsite.core.calibration import LabelView
from evalsite.core.report.build import calibration_summary
from evalsite.core.stats import seed_from
from evalsite.core.stats.record import jsonable
from labels.models import Label
from labels.queue import latest_labelled_run
from runs.models import Run, Suite
from runs.reporting import run_calibration
from runs.scoring import stored_suite


def suite_labels(run: Run) -> list[LabelView]:
    """Browser and imported labels of the run's suite, for matching against its pairs."""
    contestants = set(run.contestants)
    rows = Label.objects.filter(
        suite=run.suite, baseline__in=contestants, candidate__in=contestants
    ).values(
        "source", "labeller_name", "task_id", "case_id", "baseline", "candidate", "prefer",
        "baseline_sha", "candidate_sha", "mode", "created_at",
    )  # fmt: skip
    return [
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
        )
        for row in rows.iterator(chunk_size=2000)
    ]


def live_calibration(suite: Suite, run: Run | None = None, *, brief: bool = False) -> dict | None:
    """The calibration of the suite's latest judged run with every label given so far: what
    the labelling page's live panel (`brief`) and the calibration page show (None before
    any run)."""
    run = run or latest_labelled_run(suite)
    if run is None:
        return None
    core = stored_suite(run.suite_version)
    judge = core.judge
    summary = calibration_summary(
        run_calibration(run, core),
        min_kappa=judge.min_kappa if judge else 0.40,
        min_labels=judge.min_labels if judge else 10,
        seed=seed_from(run.suite_version.sha256),
        brief=brief,
    )
    return jsonable(summary) | {"run_id": run.id, "judge": run.judge.get("model")}
