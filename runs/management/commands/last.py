"""`evalsite last SUITE`: the summary of a suite's latest finished run."""

from __future__ import annotations

import json
import os

from django.core.management.base import CommandParser

from evalsite.core.report.summary import terminal_summary, wants_colour
from evalsite.management import EvalsiteCommand
from runs.results.summary import run_summary


class Command(EvalsiteCommand):
    help = "Print the summary of the latest finished run of a suite (by name or file)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("suite", help="Suite name, or the path to its YAML file.")
        parser.add_argument("--json", action="store_true", help="Print report.json instead.")

    def handle(self, *args, **opts):
        suite = self.suite_named_or_exit(opts["suite"])
        run = self.run_or_exit("latest", suite=suite)
        if opts["json"]:
            self.stdout.write(json.dumps(run_summary(run), indent=2, ensure_ascii=False))
        else:
            colour = wants_colour(self.stdout, os.environ)
            for line in terminal_summary(run.stored_report, colour=colour):
                self.stdout.write(line)
