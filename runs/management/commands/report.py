"""`evalsite report RUN [--format md|json|html]`: print a finished run's report."""

from __future__ import annotations

import json

from django.core.management.base import CommandParser

from evalsite.core.report.html import render_html
from evalsite.core.report.markdown import render_markdown
from evalsite.management import EvalsiteCommand
from runs.setup import prepare_database


class Command(EvalsiteCommand):
    help = "Print a run's report (Markdown by default)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", help="Run id, unique id prefix, label, or 'latest'.")
        parser.add_argument("--format", choices=("md", "json", "html"), default="md")
        parser.add_argument("--json", action="store_true", help="The same as --format json.")

    def handle(self, *args, **opts):
        prepare_database()
        run = self.run_or_exit(opts["run"], with_report=True)
        fmt = "json" if opts["json"] else opts["format"]
        if fmt == "json":
            self.stdout.write(json.dumps(run.report, indent=2, ensure_ascii=False))
        elif fmt == "html":
            self.stdout.write(render_html(run.report))
        else:
            self.stdout.write(render_markdown(run.report))
