"""`evalsite run SUITE`: plan, estimate and execute a run in this process."""

from __future__ import annotations

import json
import os
import sys
import time
from decimal import Decimal

from django.core.management.base import CommandParser

from evalsite.core.exitcodes import ExitCode
from evalsite.core.pricing import priced_as, priced_as_notes
from evalsite.core.report.case_diff import CaseBaseline, case_lines, diff_lines
from evalsite.core.report.summary import gate_lines, terminal_summary, wants_colour
from evalsite.core.report.text import visible
from evalsite.core.suites import select_contestants
from evalsite.management import EvalsiteCommand
from runs.engine.local import execute_here
from runs.engine.resume import ResumeRefused, resume_run
from runs.engine.sandbox import one_sandbox_probe, probe_soon
from runs.management.interrupts import Interrupts
from runs.models import Run
from runs.planning.planner import RunOptions, execution_checked, keys_line
from runs.planning.start import PlanRest, Refused, plan_file, start_plan
from runs.planning.validation import judge_lines
from runs.results.case_diff import SideError, baseline_changes, load_baseline, run_attempts
from runs.results.progress import answer_totals, progress
from runs.results.summary import run_summary

MAX_CONCURRENCY = 1024  # calls in flight per model


class Command(EvalsiteCommand):
    help = "Run a suite: answer every case with each contestant and price it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("suite", help="Path to the suite YAML file.")
        parser.add_argument("--models", help="Contestants, baseline first: a,b[@variant],…")
        parser.add_argument(
            "--model",
            action="append",
            default=[],
            metavar="MODEL",
            help="Only the contestants of this model (repeat for several; evaling's filter).",
        )
        parser.add_argument(
            "--variant",
            action="append",
            default=[],
            metavar="VARIANT",
            help="Only the contestants of this variant, `base` for none (repeatable).",
        )
        parser.add_argument("--fake", action="store_true", help="Answer with the fake adapter.")
        parser.add_argument("--replies", help="Scripted replies file for scripted/… models.")
        parser.add_argument(
            "--judge", help="Judge model instead of the suite's (e.g. scripted/judge offline)."
        )
        parser.add_argument("--max-cost", help="Cap in USD (default: the suite's, else $2.00).")
        parser.add_argument("--no-cache", action="store_true", help="Skip cache reads.")
        parser.add_argument("--repeats", type=int, help="Answers per case and contestant.")
        parser.add_argument(
            "--only",
            action="append",
            default=[],
            metavar="TASK[/CASE]",
            help="Only this task, or task/case (repeat it for several).",
        )
        parser.add_argument(
            "--tag",
            action="append",
            default=[],
            metavar="TAG",
            help="Only cases with this tag, theirs or their task's (repeat: any of them).",
        )
        parser.add_argument(
            "--limit", type=int, metavar="N", help="Only the first N cases of each task."
        )
        parser.add_argument("--label", default="", help="A name to refer to this run by.")
        parser.add_argument("--concurrency", type=int, help="Calls in flight per model.")
        parser.add_argument("--dry-run", action="store_true", help="Estimate only; no calls.")
        parser.add_argument("--json", action="store_true", help="Print the run as JSON.")
        parser.add_argument(
            "--no-look",
            action="store_true",
            help="Write no case data anywhere (docs/no-look.md); as `privacy: {no_look: true}`.",
        )
        parser.add_argument(
            "--baseline",
            metavar="FILE|RUN",
            help="Hold each case against a run or an evalpin results file: exit 1 when one "
            "is worse, or new and not fully passing.",
        )
        parser.add_argument(
            "--strict-gates",
            action="store_true",
            help="Fail (exit 1) a gate naming a contestant that is not in the run.",
        )
        parser.add_argument(
            "--cases",
            action="store_true",
            help="Print each case's passed attempts (CASE PASSED RATE ALL), as a run with "
            "repeats does.",
        )
        parser.add_argument(
            "--resume",
            metavar="RUN",
            help="Continue RUN, whose process died, from this unchanged suite file.",
        )

    def handle(self, *args, **opts):
        self.baseline: CaseBaseline | None = None  # --baseline, read before anything is spent
        self.show_cases = opts["cases"]
        self.interrupts = Interrupts(self.stderr)  # SIGINT and SIGTERM, from the start
        try:
            with one_sandbox_probe():  # planning asks for it, then scoring (the shard's thread)
                self._handle(opts)
        except KeyboardInterrupt:
            self.stderr.write("interrupted before the run started; nothing was spent")
            sys.exit(ExitCode.RUNTIME_ERROR)
        finally:
            self.interrupts.restore()

    def _handle(self, opts) -> None:
        loaded = self.suite_or_exit(opts["suite"])
        if execution_checked(loaded):
            probe_soon()  # beside planning, which asks for it (40 ms, most of it waiting)
        if opts["resume"]:
            return self._resume(opts, loaded)
        self.baseline = self._baseline_or_exit(opts["baseline"])
        options = self._options(opts)
        options.no_look = opts["no_look"]
        options.baseline = self.baseline
        try:
            plan = plan_file(opts["suite"], loaded, options)
        except Refused as refused:
            self.fail_all(refused.problems, refused.code)
        judge_tokens = plan.suite.judge.max_tokens if plan.suite.judge else None
        for line in judge_lines(plan.contestants, plan.judge_model, judge_tokens):
            self.stderr.write(f"warning: {line}")
        for note in [*plan.notes, *priced_as_notes(plan.aliases)]:  # a dry run's on stdout,
            (self.stdout if opts["dry_run"] else self.stderr).write(f"note: {note}")  # to read
        if opts["dry_run"]:
            self._print_estimate(plan.estimate, plan.cap, plan.options.fake)
            self.stdout.write(budget_line(plan))
            self.stdout.write(keys_line(plan.keys, plan.options.env))
            if plan.no_sandbox:
                self.stdout.write(f"note: {plan.no_sandbox}")
            sys.exit(ExitCode.REFUSED if plan.over_cap else ExitCode.OK)
        with self.interrupts.holding():  # a signal now cancels the stored run
            run, rest = start_plan(plan)
            self.interrupts.watch(run)
        if run.status == Run.Status.REFUSED:
            self._print_estimate(plan.estimate, plan.cap, plan.options.fake, out=self.stderr)
            self._finish(run, opts["json"])
        del plan  # the rest holds its cells until they are stored: then their memory is reused
        run = self._execute(run, quiet=opts["json"], rest=rest)
        self._finish(run, opts["json"])

    def _resume(self, opts, loaded) -> None:
        with self.interrupts.holding():
            try:
                run = resume_run(opts["resume"], loaded)
            except ResumeRefused as error:
                self.fail(str(error))
            self.interrupts.watch(run)
        self.stderr.write(f"resuming run {run.id}")
        run = self._execute(run, quiet=opts["json"])
        self._finish(run, opts["json"])

    def _options(self, opts) -> RunOptions:
        max_cost = self.cap_or_exit(opts["max_cost"])
        if opts["repeats"] is not None and not 1 <= opts["repeats"] <= 20:
            self.fail("--repeats must be between 1 and 20")
        if opts["limit"] is not None and opts["limit"] < 1:
            self.fail(f"--limit must be 1 or more (got {opts['limit']})")
        if opts["concurrency"] is not None and not 1 <= opts["concurrency"] <= MAX_CONCURRENCY:
            self.fail(f"--concurrency must be between 1 and {MAX_CONCURRENCY}")
        models = (
            [m.strip() for m in opts["models"].split(",") if m.strip()] if opts["models"] else None
        )
        return RunOptions(
            models=self._sub_matrix(models, opts),
            fake=opts["fake"],
            replies=opts["replies"],
            max_cost=max_cost,
            no_cache=opts["no_cache"],
            repeats=opts["repeats"],
            only=[selector.strip() for selector in opts["only"] if selector.strip()],
            tags=[tag.strip() for tag in opts["tag"] if tag.strip()],
            limit=opts["limit"],
            label=opts["label"],
            concurrency=opts["concurrency"],
            judge=opts["judge"],
            dry_run=opts["dry_run"],
            strict_gates=opts["strict_gates"],
        )

    def _sub_matrix(self, models: list[str] | None, opts) -> list[str] | None:
        """--models (or the suite's), narrowed by --model and --variant (evaling's filters)."""
        if not opts["model"] and not opts["variant"]:
            return models
        texts = models or self.suite_or_exit(opts["suite"]).models
        try:
            return select_contestants(list(texts), opts["model"], opts["variant"])
        except ValueError as error:
            self.fail(str(error))

    def _execute(self, run: Run, *, quiet: bool, rest: PlanRest | None = None) -> Run:
        """The run executed here (execute_here), its progress on stderr. SIGINT or SIGTERM
        asks the run to cancel (the shard stops between calls and writes a partial report);
        a second one leaves at once once the cancel is written, and a worker closes the run
        when its lease is out (runs.management.interrupts)."""
        interrupts = self.interrupts
        bar = ProgressPrinter(self.stderr, quiet=quiet or interrupts.asked.is_set())
        try:
            run = execute_here(run, on_progress=bar.poll, stop=interrupts, rest=rest)
        except BaseException:
            if bar.tty:
                self.stderr.write("")
            raise  # the console says it in one line and exits 3
        if interrupts.asked.is_set():
            bar.quiet = True
        if not bar.quiet:
            bar.show(progress(run), final=True)
        if interrupts.asked.is_set():
            if bar.tty:
                self.stderr.write("")  # end the bar's line
            self._print_interrupted(run)
        return run

    def _against_baseline(self, run: Run, *, quiet: bool) -> None:
        """evalpin's --baseline: each case against the baseline's, after the summary of any
        run that ended done (its gates failed or not). The verdict is the report's `baseline`
        gate (a case worse, or new and not fully passing), read here like every gate; the
        table is what the command shows beside it."""
        baseline = self.baseline
        if baseline is None or run.status != Run.Status.DONE:
            return
        try:
            changes = [] if quiet else baseline_changes(baseline, run)
        except SideError:
            changes = []  # the report's baseline gate failed and says why
        if changes:
            self.stdout.write(f"vs baseline ({visible(baseline.name)}):")
            for line in diff_lines(changes):
                self.stdout.write("  " + visible(line))
        for gate in (run.report or {}).get("gates") or []:
            if gate.get("gate") == "baseline" and gate.get("status") == "failed":
                self.stderr.write(f"baseline: {visible(gate.get('message', ''))}")

    def _print_cases(self, run: Run) -> None:
        """evalpin's per-case table: after a run with repeats, or with --cases."""
        if self.show_cases or (run.report or {}).get("repeats", 1) > 1:
            for line in case_lines(run_attempts(run)):
                self.stdout.write(visible(line))

    def _print_interrupted(self, run: Run) -> None:
        totals = answer_totals(run)
        where = f"partial report: {run.report_dir / 'report.md'}" if run.report else "no report"
        self.stderr.write(
            f"{run.status}: run {run.id} - {totals['answers']} answers kept - {where}"
        )
        sys.exit(run.exit_code)

    def _print_estimate(self, estimate: dict, cap: Decimal, fake: bool, out=None) -> None:
        out = out or self.stdout
        tag = " (simulated: --fake)" if fake else ""
        out.write(
            f"estimate{tag}: ${Decimal(estimate['total_usd']):.4f} against a cap of ${cap:.4f}"
        )
        lines = [*estimate["contestants"], *([estimate["judge"]] if estimate["judge"] else [])]
        for line in lines:
            priced = "" if line["priced"] else " (not priced)"
            out.write(
                f"  {line['name']}: {line['calls']} calls ({line['cached_calls']} cached), "
                f"~{line['input_tokens']} in / ~{line['output_tokens']} out tokens "
                f"(output from {', '.join(line['output_tokens_from']) or 'cache'}), "
                f"${Decimal(line['cost_usd']):.4f}{priced}"
            )

    def _baseline_or_exit(self, ref: str | None) -> CaseBaseline | None:
        """The --baseline, read before anything is spent."""
        if not ref:
            return None
        try:
            return load_baseline(ref)
        except (SideError, Run.DoesNotExist) as error:
            self.fail(f"--baseline: {error}")

    def _finish(self, run: Run, as_json: bool) -> None:
        if run.report is not None:
            report = run_summary(run)
            if as_json:
                self.stdout.write(json.dumps(report, indent=2, ensure_ascii=False))
                # why it exits non-zero, on stderr: stdout is the JSON
                if run.status != Run.Status.DONE and run.detail:
                    self.stderr.write(f"{run.status}: {run.detail}")
                for line in gate_lines(report.get("gates") or [], verdicts_only=True):
                    self.stderr.write(line.strip())
            else:
                colour = wants_colour(self.stdout, os.environ)
                for line in terminal_summary(report, colour=colour):
                    self.stdout.write(line)
                self._print_cases(run)
            self._against_baseline(run, quiet=as_json)
            sys.exit(run.exit_code)
        summary = run_summary(run)
        if as_json:
            self.stdout.write(json.dumps(summary, indent=2))
        else:
            for line in summary_lines(run, summary["totals"]):
                self.stdout.write(line)
        if run.detail:  # why it did not finish (exit 3, 4 or 5)
            self.stderr.write(run.detail)
        sys.exit(run.exit_code)


def budget_line(plan) -> str:
    """A dry run's verdict on its estimate, as evalblink's --dry-run gives one: within the
    budget, or over it (the run is refused, exit 4, before anything is spent)."""
    estimate = f"estimate ${Decimal(plan.estimate['total_usd']):.4f}"
    if plan.over_cap:
        return (
            f"over the budget: {estimate} > cap ${plan.cap:.4f}; the run would be refused "
            f"(exit {ExitCode.REFUSED.value}), nothing is spent"
        )
    return f"within the budget: {estimate} <= cap ${plan.cap:.4f}"


def summary_lines(run: Run, totals: dict) -> list[str]:
    run.report_dir.mkdir(parents=True, exist_ok=True)
    priced = set(run.price_table.prices.values_list("model", flat=True))
    unpriced = [c for c in run.contestants if priced_as(c.partition("@")[0], priced) is None]
    simulated = " - simulated (--fake)" if totals["simulated"] else ""
    if unpriced:
        simulated += f" - not priced: {', '.join(unpriced)}"
    incomplete = " - incomplete: some calls reported no usage" if totals["cost_incomplete"] else ""
    return [
        f"run {run.id}  ({run.suite_version.suite.name})  {run.status}",
        f"  report: {run.report_dir}",
        f"  answers: {totals['answers']} done, {totals['answer_errors']} errors, "
        f"{totals['cache_hits']} cache hits; {totals['passed']} passed every check",
        f"  cost: ${Decimal(totals['cost_usd']):.4f} this run (answers "
        f"${Decimal(totals['cost_answers_usd']):.4f}, judge not run yet); if uncached "
        f"${Decimal(totals['cost_if_uncached_usd']):.4f}{simulated}{incomplete}",
    ]


# How often the run's calls are counted for the progress: for a bar on a terminal at most
# five times a second, for plain lines (every 10% or 10 s) at most once a second, and never
# more than a twentieth of the time: counting a big run's calls takes long enough to slow
# the run it counts (the shard shares this process).
BAR_EVERY_S, LINES_EVERY_S, COUNTING_SHARE = 0.2, 1.0, 20


class ProgressPrinter:
    """A bar on a terminal; a plain line every 10% (or 10 s) otherwise."""

    def __init__(self, out, *, quiet: bool):
        self.out = out
        self.quiet = quiet
        self.tty = hasattr(out, "isatty") and out.isatty()
        self.last_step = -1
        self.last_time = 0.0
        self.next_count = 0.0

    def poll(self, run: Run) -> None:
        """Count the run's calls and show them, when a count is due."""
        now = time.monotonic()
        if self.quiet or now < self.next_count:
            return
        snap = progress(run)
        took = time.monotonic() - now
        every = BAR_EVERY_S if self.tty else LINES_EVERY_S
        self.next_count = now + max(every, COUNTING_SHARE * took)
        self.show(snap)

    def show(self, snap, final: bool = False) -> None:
        if self.quiet or snap.total == 0:
            return
        if snap.phase != getattr(self, "phase", snap.phase):
            self.last_step = -1  # a new phase starts its own bar
            if self.tty:
                self.out.write("")
        self.phase = snap.phase
        eta = f" · ETA {snap.eta_s:.0f}s" if snap.eta_s is not None else ""
        text = (
            f"{snap.finished}/{snap.total} {snap.phase} · {snap.errors} errors · "
            f"${snap.spent_usd:.4f} of ${snap.cap_usd:.2f}{eta}"
        )
        if self.tty:
            filled = int(snap.fraction * 24)
            self.out.write(f"\r[{'#' * filled}{'-' * (24 - filled)}] {text}", ending="")
            if final:
                self.out.write("")
            self.out.flush()
            return
        step = int(snap.fraction * 10)
        if final or step > self.last_step or time.monotonic() - self.last_time > 10:
            self.last_step, self.last_time = step, time.monotonic()
            self.out.write(text)
