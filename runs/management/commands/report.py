"""`evalsite report RUN`: a run's report (md, json, html), its rows as CSV, its failures,
or one case across every contestant."""

from __future__ import annotations

import json
from contextlib import closing

from django.core.management.base import CommandParser

from evalsite.core.report.html import render_html
from evalsite.core.report.markdown import render_markdown
from evalsite.management import EvalsiteCommand
from runs.results.exports import ANSWER_COLUMNS, PAIR_COLUMNS, answer_rows, pair_rows, write_csv
from runs.results.inspection import (
    case_keys,
    case_keys_latest,
    case_lines,
    failure_lines,
    known_cases,
)
from runs.results.media import report_attachments
from runs.results.summary import run_summary


class Command(EvalsiteCommand):
    help = "Print a run's report (Markdown by default), its rows as CSV, failures or a case."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", help="Run id, unique id prefix, label, or 'latest'.")
        parser.add_argument("--format", choices=("md", "json", "html", "csv"), default="md")
        parser.add_argument("--json", action="store_true", help="The same as --format json.")
        parser.add_argument(
            "--pairs", action="store_true", help="With --format csv: one row per pair."
        )
        views = parser.add_mutually_exclusive_group()
        views.add_argument(
            "--failures", action="store_true", help="The failed and errored answers, and why."
        )
        views.add_argument(
            "--case", metavar="[TASK/]CASE", help="Every contestant's answers to one case."
        )

    def handle(self, *args, **opts):
        fmt = "json" if opts["json"] else opts["format"]
        if opts["pairs"] and fmt != "csv":
            self.fail("--pairs goes with --format csv")
        if (opts["failures"] or opts["case"]) and fmt != "md":
            self.fail("--failures and --case print to the terminal: leave out --format/--json")
        if opts["failures"] or opts["case"] or fmt == "csv":
            self._rows(self.run_or_exit(opts["run"]), fmt, opts)
            return
        run = self.run_or_exit(opts["run"], with_report=True)
        if fmt == "json":
            self.stdout.write(json.dumps(run_summary(run), indent=2, ensure_ascii=False))
        elif fmt == "html":
            self.stdout.write(render_html(run.stored_report, report_attachments(run)))
        else:
            self.stdout.write(render_markdown(run.stored_report))

    def _rows(self, run, fmt: str, opts) -> None:
        """The views read from the run's rows: they need no report (a partial or failed run
        has its rows too)."""
        if fmt == "csv":
            head, rows = (PAIR_COLUMNS, pair_rows(run)) if opts["pairs"] else (
                ANSWER_COLUMNS, answer_rows(run))  # fmt: skip
            with closing(rows):  # a reader that stops early (| head) ends the query here
                write_csv(self.stdout, head, rows)
            return
        if opts["failures"]:
            lines = failure_lines(run)
        else:
            if opts["run"].strip() == "latest":
                latest = run
                run, keys = case_keys_latest(run, opts["case"])
                if run != latest:
                    self.stderr.write(
                        f"note: the latest run, {latest.id}, has no case {opts['case']!r}: "
                        f"showing run {run.id}, the latest that answered it"
                    )
            else:
                keys = case_keys(run, opts["case"])
            if not keys:
                known = ", ".join(known_cases(run))
                self.fail(f"run {run.id} has no case {opts['case']!r} (cases: {known}, …)")
            lines = (line for task, case in keys for line in case_lines(run, task, case))
        with closing(lines):
            for line in lines:
                self.stdout.write(line)
