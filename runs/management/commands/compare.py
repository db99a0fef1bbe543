"""`evalsite compare A B [--fail-on-regression POINTS]`: what moved between two runs."""

from __future__ import annotations

import json
import sys

from django.core.management.base import CommandParser

from evalsite.core.exitcodes import ExitCode
from evalsite.core.report.compare import compare_reports
from evalsite.management import EvalsiteCommand
from runs.setup import prepare_database


class Command(EvalsiteCommand):
    help = "Compare two runs of a suite: movers by task, schema, checks and cost."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("a", help="The earlier run (id, prefix, label or 'latest').")
        parser.add_argument("b", help="The later run.")
        parser.add_argument(
            "--fail-on-regression",
            type=float,
            metavar="POINTS",
            help="Exit 1 when a candidate's win-rate fell by more than POINTS (0-100).",
        )
        parser.add_argument("--threshold", type=float, help="Mover threshold (default: suite's).")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **opts):
        prepare_database()
        points = opts["fail_on_regression"]
        if points is not None and not 0 <= points <= 100:
            self.fail("--fail-on-regression takes points from 0 to 100")
        a, b = (self.run_or_exit(opts[k], with_report=True) for k in ("a", "b"))
        comparison = compare_reports(a.report, b.report, threshold=opts["threshold"])
        if opts["json"]:
            self.stdout.write(json.dumps(comparison.to_dict(), indent=2, ensure_ascii=False))
        else:
            for line in comparison.lines():
                self.stdout.write(line)
        if not comparison.comparable:
            sys.exit(ExitCode.INPUT_ERROR)
        if points is not None:
            regressed = set(comparison.regression(points))
            for change in comparison.win_rates:
                if change.name in regressed:
                    self.stderr.write(
                        f"regression: {change.name} win-rate {change.before:.3f} -> "
                        f"{change.after:.3f}, down {-change.delta * 100:.1f} points "
                        f"(more than {points:g})"
                    )
            if regressed:
                sys.exit(ExitCode.GATE_FAILED)
