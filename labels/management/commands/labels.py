"""`evalsite labels export SUITE [--out FILE]` and
`evalsite labels import SUITE FILE [--as USER]`.

The command line is an operator on the machine: it imports as staff do, each entry's
`labeller:` naming an existing user whose label it becomes; with `--as USER` the whole file
is that user's import, under the rules for that user (docs/labelling.md).
"""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import CommandParser

from evalsite.management import EvalsiteCommand
from labels.transfer import LabelImportError, export_yaml, import_yaml


class Command(EvalsiteCommand):
    help = "Labels in and out as the suite file's labels: YAML."

    def add_arguments(self, parser: CommandParser) -> None:
        verbs = parser.add_subparsers(dest="verb", required=True)
        out = verbs.add_parser("export", help="Print (or write) a suite's labels as YAML.")
        out.add_argument("suite", help="Suite name.")
        out.add_argument("--out", help="Write to this file instead of printing.")
        into = verbs.add_parser("import", help="Bind labels from YAML to the latest judged run.")
        into.add_argument("suite", help="Suite name.")
        into.add_argument("file", help="YAML: a list of labels, or a mapping with labels:.")
        into.add_argument(
            "--as",
            dest="as_user",
            metavar="USER",
            help="Import as this user (their labels); without it, each entry's labeller: "
            "must name an existing user.",
        )

    def handle(self, *args, **opts):
        suite = self.suite_named_or_exit(opts["suite"])
        if opts["verb"] == "export":
            text = export_yaml(suite)
            if opts.get("out"):
                self.write_or_exit(Path(opts["out"]), text)
                self.stderr.write(f"wrote {opts['out']}")
            else:
                self.stdout.write(text, ending="")
            return
        path = Path(opts["file"])
        if not path.is_file():
            self.fail(f"{path}: no such file")
        user = self._user(opts["as_user"]) if opts.get("as_user") else None
        try:
            count = import_yaml(suite, path.read_text("utf-8", "replace"), user=user,
                                filename=str(path))  # fmt: skip
        except LabelImportError as error:
            self.fail_all(error.problems)
        self.stdout.write(f"imported {count} label{'s' if count != 1 else ''} into {suite.name}")

    def _user(self, name: str):
        User = get_user_model()
        user = User.objects.filter(**{User.USERNAME_FIELD: name}, is_active=True).first()
        if user is None:
            self.fail(f"--as {name}: no active user of that name")
        return user
