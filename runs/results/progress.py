"""A run's progress from its rows: counts by status, spend against the cap, errors, ETA."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from decimal import Decimal

from django.db.models import Count, Q, Sum
from django.utils import timezone

from runs.models import Answer, Call, Judgement, Run


@dataclass(frozen=True)
class Progress:
    status: str
    phase: str  # what is counted: "answers" while running, "judge calls" while judging
    activity: str  # what the run is doing now, in words: "preparing judge calls", …
    total: int
    pending: int
    claimed: int
    done: int
    errors: int
    cache_hits: int
    spent_usd: Decimal
    reserved_usd: Decimal
    cap_usd: Decimal
    elapsed_s: float | None
    eta_s: float | None

    @property
    def finished(self) -> int:
        return self.done + self.errors

    @property
    def fraction(self) -> float:
        return self.finished / self.total if self.total else 1.0

    def as_dict(self) -> dict:
        data = asdict(self)
        for key in ("spent_usd", "reserved_usd", "cap_usd"):
            data[key] = str(data[key])
        return data


def progress(run: Run) -> Progress:
    """One aggregate query over the calls of the run's current phase; cheap enough to poll."""
    run.refresh_from_db()
    # A finished run counts the last phase it had calls in: its judge calls once it judged.
    judging = run.status in (Run.Status.JUDGING, Run.Status.REPORTING) or (
        not run.is_active and run.judgements.exists()
    )
    calls = Judgement if judging else Answer
    counts = calls.objects.filter(run=run).aggregate(
        total=Count("pk"),
        pending=Count("pk", filter=Q(status=Call.Status.PENDING)),
        claimed=Count("pk", filter=Q(status=Call.Status.CLAIMED)),
        done=Count("pk", filter=Q(status=Call.Status.DONE)),
        errors=Count("pk", filter=Q(status=Call.Status.ERROR)),
        cache_hits=Count("pk", filter=Q(cached=True)),
    )
    if not run.plan_whole:  # the rest of its answers are being stored: they are pending
        unstored = max(0, run.planned_answers - counts["total"])
        counts["total"] += unstored
        counts["pending"] += unstored
    elapsed = eta = None
    if run.started_at:
        end = run.finished_at or timezone.now()
        elapsed = (
            end - (run.phase_at if judging and run.phase_at else run.started_at)
        ).total_seconds()
        remaining = counts["pending"] + counts["claimed"]
        rate = counts["done"] + counts["errors"]
        if run.is_active and rate and remaining:
            eta = elapsed / rate * remaining
    return Progress(
        status=run.status,
        phase="judge calls" if judging else "answers",
        activity=_activity(run, counts["total"]),
        total=counts["total"],
        pending=counts["pending"],
        claimed=counts["claimed"],
        done=counts["done"],
        errors=counts["errors"],
        cache_hits=counts["cache_hits"],
        spent_usd=run.spent_usd,
        reserved_usd=run.reserved_usd,
        cap_usd=run.cap_usd,
        elapsed_s=elapsed,
        eta_s=eta,
    )


def _activity(run: Run, calls: int) -> str:
    """Between the answers and the judge calls the run scores the answers, forms the pairs
    and queues the judge calls in one transaction: no judge call is counted yet."""
    if run.cancel_requested and run.is_active:
        return "cancelling: calls in flight finish"
    if run.status == Run.Status.QUEUED:
        return "waiting for a worker"
    if run.status == Run.Status.RUNNING:
        return "answering"
    if run.status == Run.Status.JUDGING and not calls:
        return "preparing judge calls" if run.judge.get("model") else "scoring the answers"
    if run.status == Run.Status.JUDGING:
        return "judging"
    if run.status == Run.Status.REPORTING:
        return "writing the report"
    return run.get_status_display().lower()


def answer_totals(run: Run) -> dict:
    """SPEC §11's `totals` for a run that has answers only (judging comes later)."""
    answers = Answer.objects.filter(run=run)
    sums = answers.aggregate(
        count=Count("pk", filter=Q(status=Answer.Status.DONE)),
        errors=Count("pk", filter=Q(status=Answer.Status.ERROR)),
        hits=Count("pk", filter=Q(cached=True)),
        passed=Count("pk", filter=Q(passed=True)),
        uncached=Sum("cost_if_uncached_usd"),
    )
    cost_answers = run.spent_answers_usd
    return {
        "answers": sums["count"],
        "answer_errors": sums["errors"],
        "pairs": 0,
        "judge_calls": 0,
        "cache_hits": sums["hits"],
        "passed": sums["passed"],
        "cost_usd": _money(run.spent_usd),
        "cost_answers_usd": _money(cost_answers),
        "cost_judge_usd": _money(run.spent_judge_usd),
        "cost_if_uncached_usd": _money(sums["uncached"] or Decimal(0)),
        "cost_incomplete": run.cost_incomplete,
        "simulated": run.simulated,
    }


def _money(value: Decimal) -> str:
    return f"{value:.6f}"
