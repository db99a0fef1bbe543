"""The labels a run's calibration uses from this app: every content label of its suite."""

from __future__ import annotations

from evalsite.core.calibration import LabelView
from labels.models import Label
from runs.models import Run


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
