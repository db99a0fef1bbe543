"""`evalsite report RUN [--format md|json|html]`: print a finished run's report."""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand, CommandParser

from evalsite.core.exitcodes import ExitCode
from evalsite.core.report.html import render_html
from evalsite.core.report.markdown import render_markdown
from runs.management.commands import MODEL_CHECKS
from runs.models import Run
from runs.setup import prepare_database


class Command(BaseCommand):
    help = "Print a run's report (Markdown by default)."
    requires_system_checks = MODEL_CHECKS

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", help="Run id, unique id prefix, label, or 'latest'.")
        parser.add_argument("--format", choices=("md", "json", "html"), default="md")
        parser.add_argument("--json", action="store_true", help="The same as --format json.")

    def handle(self, *args, **opts):
        prepare_database()
        run = find_run(self, opts["run"])
        fmt = "json" if opts["json"] else opts["format"]
        if fmt == "json":
            self.stdout.write(json.dumps(run.report, indent=2, ensure_ascii=False))
        elif fmt == "html":
            self.stdout.write(render_html(run.report))
        else:
            self.stdout.write(render_markdown(run.report))


def find_run(command: BaseCommand, reference: str) -> Run:
    """The run `reference` names, with its report; exit 2 with the reason otherwise."""
    try:
        run = Run.objects.select_related("suite_version__suite").resolve(reference)
    except Run.DoesNotExist as error:
        command.stderr.write(f"error: {error}")
        sys.exit(ExitCode.INPUT_ERROR)
    if run.report is None:
        state = f"it is {run.status}" + (f": {run.detail}" if run.detail else "")
        command.stderr.write(f"error: run {run.id} has no report ({state})")
        sys.exit(ExitCode.INPUT_ERROR)
    return run
