"""A run's moves from phase to phase, as the shards make them (runs.engine.runner).

Each move is conditional (``Run.advance`` and ``Run.finish`` change a row only from the
status they expect), so when every shard tries it, one makes it and the others learn where
the run went. Every step is idempotent, so a resumed shard completes a half-made one.
"""

from __future__ import annotations

from typing import Any

from evalsite.core.plan import WorstCase
from evalsite.core.providers import Provider
from runs.engine.judging import finish_judging, prepare_judging
from runs.engine.scoring import score_run
from runs.models import Answer, Call, Judgement, Run

PREPARING = "preparing"  # judging_state: the judge calls are not queued yet


def phase_over(run_id: str, calls: type[Call]) -> Run | None:
    """The run, when the phase's calls are all finished and the run goes on; None when it
    was cancelled, stopped, a shard is still working, or its plan is still being stored."""
    run = Run.objects.get(pk=run_id)
    if not run.is_active or run.cancel_requested or not run.plan_whole:
        return None
    if calls.objects.filter(run=run).unfinished().exists():
        return None
    return run


def answers_over(run_id: str, judge: Provider | None) -> str | None:
    """JUDGING for the shard that wins the move there (it prepares judging); None else.
    A run whose every answer failed fails."""
    run = phase_over(run_id, Answer)
    if run is None or run.status != Run.Status.RUNNING:
        return None
    answers = Answer.objects.filter(run=run)
    if not answers.filter(status=Call.Status.DONE).exists() and answers.exists():
        first = answers.filter(status=Call.Status.ERROR).first()
        why = first.error_message if first is not None else ""  # never None: all finished
        run.finish(Run.Status.FAILED, f"every answer failed; first error: {why}")
        return None
    if not run.advance(Run.Status.RUNNING, Run.Status.JUDGING):
        return None
    prepare_judging(run, judge)
    return Run.Status.JUDGING


def judging_state(run_id: str) -> str | None:
    """JUDGING when the run's judge calls are queued, PREPARING while the shard that moved
    it there is still queueing them (in one transaction, so all appear at once), None when
    the run is anywhere else."""
    run = Run.objects.filter(pk=run_id).values("status", "cancel_requested").first()
    if run is None or run["status"] != Run.Status.JUDGING or run["cancel_requested"]:
        return None
    if Judgement.objects.filter(run_id=run_id).unfinished().exists():
        return Run.Status.JUDGING
    return PREPARING


def judging_over(run_id: str) -> str | None:
    """REPORTING for the shard that wins the move there; None else."""
    run = phase_over(run_id, Judgement)
    if run is None or run.status != Run.Status.JUDGING:
        return None
    return Run.Status.REPORTING if run.advance(run.status, Run.Status.REPORTING) else None


def report(run_id: str) -> None:
    from runs.engine.later import write_report  # not at start-up: runs.engine.later

    run = Run.objects.get(pk=run_id)
    if run.status != Run.Status.REPORTING:
        return
    finish_judging(run)  # idempotent: a resumed run may have stopped half-way through
    write_report(run)
    run.finish(Run.Status.DONE)


def close_stopped(run_id: str, calls: type[Call]) -> None:
    """A run asked to cancel is closed once no shard holds a claim on it; a run that
    stopped (cancelled, aborted over budget) gets a partial report of what it kept."""
    run = Run.objects.get(pk=run_id)
    if run.is_active and run.cancel_requested:
        if calls.objects.filter(run=run, status=Call.Status.CLAIMED).exists():
            return  # another shard is finishing its calls in flight; it closes the run
        # the report first, so a cancelled run always has one
        write_partial_report(run, status=Run.Status.CANCELLED)
        run.finish(Run.Status.CANCELLED, "cancelled; finished answers are kept")
    elif run.status in Run.STOPPED and run.report is None:
        write_partial_report(run)


def abort_over_budget(run_id: str, worst: WorstCase, model: str) -> None:
    """Stop the run: the next call's worst case no longer fits under its cap."""
    run = Run.objects.get(pk=run_id)
    amount, cap = worst.cost_usd, run.cap_usd
    if amount > cap:
        detail = (
            f"stopped: a call to {model} may cost up to ${amount:.6f} "
            f"({worst.input_tokens} input and {worst.output_tokens} output tokens at "
            f"most), more than the whole cap ${cap:.4f}; finished answers are kept"
        )
    else:
        detail = (
            f"stopped: the next call (up to ${amount:.6f}) no longer fit under the cap "
            f"${cap:.4f} (spent ${run.spent_usd:.6f}); finished answers are kept"
        )
    run.finish(Run.Status.ABORTED_OVER_BUDGET, detail)


def write_partial_report(run: Run, *, status: str | None = None) -> dict[str, Any]:
    """The report of a run that stops early (cancelled, aborted over budget): its finished
    answers scored, and whatever pairs were judged."""
    from runs.engine.later import write_report  # not at start-up: runs.engine.later

    score_run(run)
    return write_report(run, status=status)
