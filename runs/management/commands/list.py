"""`evalsite list` (also `evalsite history`): the runs, newest first, one line each."""

from __future__ import annotations

import json

from django.core.management.base import CommandParser

from evalsite.management import EvalsiteCommand
from runs.models import Run
from runs.results.listing import START_HINT, listing_lines, run_row

DEFAULT_LIMIT = 20


class Command(EvalsiteCommand):
    help = "List runs, newest first: suite, status, contestants, cost and headline."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--suite", help="Only runs of this suite (its name or its file).")
        parser.add_argument("--status", choices=Run.Status.values, help="Only runs in this status.")
        parser.add_argument(
            "--limit", type=int, default=DEFAULT_LIMIT, metavar="N",
            help=f"At most N runs (default {DEFAULT_LIMIT}).",
        )  # fmt: skip
        parser.add_argument("--json", action="store_true", help="Print the runs as JSON.")

    def handle(self, *args, **opts):
        if opts["limit"] < 1:
            self.fail(f"--limit must be 1 or more (got {opts['limit']})")
        suite = self.suite_named_or_exit(opts["suite"]) if opts["suite"] else None
        runs = Run.objects.listing(suite=suite, status=opts["status"])[: opts["limit"]]
        rows = [run_row(run) for run in runs]
        if opts["json"]:
            self.stdout.write(json.dumps(rows, indent=2, ensure_ascii=False))
        elif rows:
            for line in listing_lines(rows):
                self.stdout.write(line)
        elif suite is None and opts["status"] is None and not Run.objects.not_lab().exists():
            self.stdout.write(START_HINT)
        else:
            self.stdout.write("no run matches " + _filters(opts))


def _filters(opts) -> str:
    given = [f"--{name} {opts[name]}" for name in ("suite", "status") if opts[name]]
    return " ".join(given)
