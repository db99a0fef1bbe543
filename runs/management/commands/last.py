"""`evalsite last SUITE`: the summary of a suite's latest finished run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandParser

from evalsite.core.exitcodes import ExitCode
from evalsite.core.report.summary import summary_lines
from evalsite.core.suites import SuiteError, load_suite
from runs.management.commands import MODEL_CHECKS
from runs.models import Run, Suite
from runs.setup import prepare_database


class Command(BaseCommand):
    help = "Print the summary of the latest finished run of a suite (by name or file)."
    requires_system_checks = MODEL_CHECKS

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("suite", help="Suite name, or the path to its YAML file.")
        parser.add_argument("--json", action="store_true", help="Print report.json instead.")

    def handle(self, *args, **opts):
        prepare_database()
        name = self._suite_name(opts["suite"])
        suite = Suite.objects.filter(name=name).first()
        run = (
            Run.objects.for_suite(suite)
            .filter(report__isnull=False)
            .order_by("-created_at")
            .first()
            if suite
            else None
        )
        if run is None:
            self.stderr.write(f"error: suite {name!r} has no finished run with a report")
            sys.exit(ExitCode.INPUT_ERROR)
        if opts["json"]:
            self.stdout.write(json.dumps(run.report, indent=2, ensure_ascii=False))
        else:
            for line in summary_lines(run.report):
                self.stdout.write(line)

    def _suite_name(self, reference: str) -> str:
        if not Path(reference).is_file():
            return reference
        try:
            return load_suite(reference).name
        except SuiteError as error:
            for problem in error.problems:
                self.stderr.write(f"error: {problem}")
            sys.exit(ExitCode.INPUT_ERROR)
