"""`evalsite validate SUITE`: parse, check and render a suite without any network call."""

from __future__ import annotations

import json
import sys

from evalsite.core.exitcodes import ExitCode
from evalsite.management import EvalsiteCommand
from runs.planning.validation import validate


class Command(EvalsiteCommand):
    help = "Validate a suite file: schema, templates, schemas and model strings (exit 2 on errors)."
    # Fast on a broken file: the database is prepared only once the suite reads (validation).
    requires_migrations_checks = False

    def add_arguments(self, parser):
        parser.add_argument("suite", help="Path to the suite YAML file.")
        parser.add_argument("--json", action="store_true", help="Print the result as JSON.")

    def handle(self, *args, suite: str, **options):
        outcome = validate(suite)
        if options["json"]:
            self.stdout.write(_dumps(outcome))
        else:
            for line in outcome["warnings"]:
                self.stderr.write(f"warning: {line}")
            for line in outcome["errors"]:
                self.stderr.write(f"error: {line}")
            for line in outcome["notes"]:
                self.stdout.write(f"note: {line}")
            if outcome["ok"]:
                self.stdout.write(outcome["keys_line"])
                self.stdout.write(outcome["summary"])
            else:
                self._other_format_hint(suite)
                self.stderr.write(f"{suite}: {len(outcome['errors'])} error(s)")
        sys.exit(ExitCode.OK if outcome["ok"] else ExitCode.INPUT_ERROR)


def _dumps(data: dict) -> str:
    return json.dumps(data, indent=2, sort_keys=True)
