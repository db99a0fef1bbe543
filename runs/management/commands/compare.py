"""`evalsite compare A B [--fail-on-regression POINTS] [--cases [--show changes]]`: what moved
between two runs, and each case better, same, worse, new or gone. Either side may be an
evalpin results file (`evalpin-results 1`): the comparison is then the per-case diff."""

from __future__ import annotations

import json
import sys

from django.core.management.base import CommandParser

from evalsite.core.exitcodes import ExitCode
from evalsite.core.report.case_diff import counts, diff_cases, diff_lines
from evalsite.core.report.compare import compare_reports
from evalsite.core.report.text import visible
from evalsite.management import EvalsiteCommand
from runs.results.case_diff import SideError, results_file, run_attempts


class Command(EvalsiteCommand):
    help = "Compare two runs of a suite: movers by task, schema, checks and cost."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("a", help="The earlier run (id, prefix, label or 'latest').")
        parser.add_argument("b", help="The later run.")
        parser.add_argument(
            "--fail-on-regression",
            type=float,
            metavar="POINTS",
            help="Exit 1 when a measure regressed: a win-rate, score or pass rate fell by more "
            "than POINTS (0-100), or a cost per answer (if uncached) rose by more than POINTS "
            "percent (docs/ci.md).",
        )
        parser.add_argument(
            "--significance",
            type=float,
            metavar="ALPHA",
            help="With --fail-on-regression: only a drop whose paired 1-ALPHA interval lies "
            "below 0 fails (docs/ci.md).",
        )
        parser.add_argument("--threshold", type=float, help="Mover threshold (default: suite's).")
        parser.add_argument(
            "--cases",
            "--detailed",
            action="store_true",
            help="Also each case: better, same, worse, new or gone by passed attempts "
            "(exit 1 when a case is worse).",
        )
        parser.add_argument(
            "--show",
            choices=("all", "changes"),
            default="all",
            help="With --cases: every case (all) or the ones that changed.",
        )
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **opts):
        try:
            files = {side: results_file(opts[side]) for side in ("a", "b")}
        except SideError as error:
            self.fail(str(error))
        if any(rows is not None for rows in files.values()):
            self._case_diff_only(files, opts)
        points = opts["fail_on_regression"]
        if points is not None and not 0 <= points <= 100:
            self.fail("--fail-on-regression takes points from 0 to 100")
        alpha = opts["significance"]
        if alpha is not None and (points is None or not 0 < alpha <= 0.5):
            self.fail("--significance takes an ALPHA in (0, 0.5] beside --fail-on-regression")
        a, b = (self.run_or_exit(opts[k], with_report=True) for k in ("a", "b"))
        comparison = compare_reports(
            a.stored_report, b.stored_report, threshold=opts["threshold"], level=1 - (alpha or 0.05)
        )
        checked = comparison.regressions(points, alpha) if points is not None else []
        if opts["json"]:
            found = comparison.to_dict()
            if points is not None:
                found["regressions"] = [regression.to_dict() for regression in checked]
            self.stdout.write(json.dumps(found, indent=2, ensure_ascii=False))
        else:
            for line in comparison.lines():
                self.stdout.write(line)
        if not comparison.comparable:
            sys.exit(ExitCode.INPUT_ERROR)
        worse = False
        if opts["cases"]:
            changes = diff_cases(run_attempts(a), run_attempts(b))
            worse = self._print_cases(changes, opts, heading=not opts["json"])
        regressed = [regression for regression in checked if regression.regressed]
        for regression in regressed:
            self.stderr.write(f"regression: {visible(regression.text())}")
        if regressed:
            sys.exit(ExitCode.GATE_FAILED)
        if worse:
            sys.exit(ExitCode.GATE_FAILED)

    def _case_diff_only(self, files: dict, opts: dict) -> None:
        """A side that is a results file makes the comparison the per-case diff: a run on
        the other side is keyed by case id."""
        with_run = any(results is None for results in files.values())
        sides = []
        for side in ("a", "b"):
            results = files[side]
            if results is not None:
                sides.append(results.by_case_id() if with_run else results.rows)
                continue
            try:
                sides.append(run_attempts(self.run_or_exit(opts[side]), by_case_id=True))
            except SideError as error:
                self.fail(str(error))
        worse = self._print_cases(diff_cases(*sides), opts, heading=False)
        sys.exit(ExitCode.GATE_FAILED if worse else ExitCode.OK)

    def _print_cases(self, changes: list, opts: dict, *, heading: bool) -> bool:
        """Print the per-case diff (JSON with --json); whether a case is worse."""
        if opts["json"]:
            cases = [
                {"case": c.key, "before": str(c.before or ""), "after": str(c.after or ""),
                 "status": c.status}
                for c in changes
                if opts["show"] == "all" or c.status != "same"
            ]  # fmt: skip
            self.stdout.write(json.dumps({"cases": cases, "counts": counts(changes)}, indent=2))
        else:
            if heading:
                self.stdout.write("")
            for line in diff_lines(changes, show=opts["show"]):
                self.stdout.write(visible(line))
        return any(change.status == "worse" for change in changes)
