"""`evalsite baseline set RUN | show SUITE | clear SUITE`: the pinned regression baseline."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandParser

from evalsite.core.exitcodes import ExitCode
from runs.management.commands import MODEL_CHECKS
from runs.management.commands.report import find_run
from runs.models import Suite
from runs.setup import prepare_database


class Command(BaseCommand):
    help = "Pin the run that a suite's max_regression_points gate compares against."
    requires_system_checks = MODEL_CHECKS

    def add_arguments(self, parser: CommandParser) -> None:
        verbs = parser.add_subparsers(dest="verb", required=True)
        pin = verbs.add_parser("set", help="Pin a finished run as its suite's baseline.")
        pin.add_argument("run", help="Run id, unique prefix, label, or 'latest'.")
        for verb, text in (("show", "Print a suite's pinned run."), ("clear", "Unpin it.")):
            verbs.add_parser(verb, help=text).add_argument("suite", help="Suite name.")

    def handle(self, *args, **opts):
        prepare_database()
        if opts["verb"] == "set":
            run = find_run(self, opts["run"])
            run.suite.pin_baseline(run)
            self.stdout.write(f"baseline of {run.suite.name}: {run.id}")
            return
        suite = Suite.objects.select_related("baseline_run").filter(name=opts["suite"]).first()
        if suite is None:
            self.stderr.write(f"error: no suite named {opts['suite']!r}")
            sys.exit(ExitCode.INPUT_ERROR)
        if opts["verb"] == "clear":
            Suite.objects.filter(pk=suite.pk).update(baseline_run=None)
            self.stdout.write(f"baseline of {suite.name}: none")
        else:
            pinned = suite.baseline_run.id if suite.baseline_run else "none"
            self.stdout.write(f"baseline of {suite.name}: {pinned}")
