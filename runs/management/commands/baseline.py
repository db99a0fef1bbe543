"""`evalsite baseline set RUN | show SUITE | clear SUITE`: the pinned regression baseline."""

from __future__ import annotations

from django.core.management.base import CommandParser

from evalsite.management import EvalsiteCommand


class Command(EvalsiteCommand):
    help = "Pin the run that a suite's max_regression_points gate compares against."

    def add_arguments(self, parser: CommandParser) -> None:
        verbs = parser.add_subparsers(dest="verb", required=True)
        pin = verbs.add_parser("set", help="Pin a finished run as its suite's baseline.")
        pin.add_argument("run", help="Run id, unique prefix, label, or 'latest'.")
        for verb, text in (("show", "Print a suite's pinned run."), ("clear", "Unpin it.")):
            verbs.add_parser(verb, help=text).add_argument("suite", help="Suite name.")

    def handle(self, *args, **opts):
        if opts["verb"] == "set":
            run = self.run_or_exit(opts["run"], with_report=True)
            run.suite.pin_baseline(run)
            self.stdout.write(f"baseline of {run.suite.name}: {run.id}")
            return
        suite = self.suite_named_or_exit(opts["suite"])
        if opts["verb"] == "clear":
            suite.clear_baseline()
            self.stdout.write(f"baseline of {suite.name}: none")
        else:
            pinned = suite.baseline_run.id if suite.baseline_run else "none"
            self.stdout.write(f"baseline of {suite.name}: {pinned}")
