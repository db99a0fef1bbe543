"""The base every evalsite verb is written on (`EvalsiteCommand`), and the verbs that are the
project's rather than an app's: `serve`, `worker` and `mcp`."""

from __future__ import annotations

import argparse
import sys
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NoReturn

from django.core.management.base import BaseCommand

from evalsite.core.exitcodes import ExitCode

if TYPE_CHECKING:
    from evalsite.core.suites import Suite as LoadedSuite
    from runs.models import Run, Suite

# Django's own options, accepted by every verb but not evalsite's to explain: a verb's
# --help lists what that verb does.
DJANGO_OPTIONS = {
    "--version",
    "--verbosity",
    "--settings",
    "--pythonpath",
    "--traceback",
    "--no-color",
    "--force-color",
    "--skip-checks",
}


class EvalsiteCommand(BaseCommand):
    """A verb of evalsite's: a ready database before `handle` runs, its own options in
    --help, failures as one `error:` line and an exit code (never a traceback), and the
    lookups every verb shares."""

    # The system checks of a verb that serves no pages: none. Django's checks look at the
    # project's own code (its models, URLs and settings), not at what a verb is given:
    # every check is `serve`'s and `worker`'s, and `evalsite manage check`'s, which the test
    # suite runs. The model checks alone took 8 to 12 ms of every `validate` and `run`; the
    # URL checks import the URLconf and with it every view, numpy and the report builder.
    requires_system_checks: list[str] | Literal["__all__"] = []  # or every check
    # Every verb gets its database migrated and its default price table loaded before
    # `handle` (check_migrations below), so none can forget it, as `import` once did. A verb
    # that must not touch the database says False and prepares it where it first needs it:
    # `validate` and `import` (fast on a broken file), `mcp` (stdout is the protocol's).
    requires_migrations_checks = True
    suppressed_base_arguments = DJANGO_OPTIONS

    def create_parser(self, prog_name: str, subcommand: str, **kwargs):
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        for action in parser._actions:  # Django adds --skip-checks outside the base arguments
            if "--skip-checks" in action.option_strings:
                action.help = argparse.SUPPRESS
        return parser

    def check_migrations(self) -> None:
        """Django's step just before `handle`: here the pending migrations are applied, not
        only reported (runs.setup.prepare_database)."""
        from runs.setup import prepare_database

        prepare_database()

    def get_version(self) -> str:
        from evalsite.management.verbs import version

        return version()

    def fail(self, message: str, code: ExitCode = ExitCode.INPUT_ERROR) -> NoReturn:
        self.stderr.write(f"error: {message}")
        sys.exit(code)

    def fail_all(self, problems, code: ExitCode = ExitCode.INPUT_ERROR) -> NoReturn:
        """Every problem on its own `error:` line, then exit."""
        for problem in problems:
            self.stderr.write(f"error: {problem}")
        sys.exit(code)

    def suite_or_exit(self, path: str | Path) -> LoadedSuite:
        """The suite file at `path`, loaded and checked; its problems and exit 2 otherwise."""
        from evalsite.core.suites import SuiteError, load_suite

        try:
            return load_suite(path)
        except SuiteError as error:
            self._other_format_hint(path)
            self.fail_all(error.problems)

    def _other_format_hint(self, path: str | Path) -> None:
        """Say so when a refused suite file is another tool's, and what reads it."""
        from evalsite.core.importers import detect
        from evalsite.core.importers.evalpin import kind_of
        from evalsite.core.problems import SuiteError

        try:
            found = detect(Path(path))
            kind = kind_of(Path(path).read_text("utf-8")) if found == "evalpin" else "suite"
        except (SuiteError, OSError, UnicodeDecodeError):
            return
        hints: dict[str | None, str] = {
            "suite": f"evalsite import {found} {path} --out DIR"
            + (" (--replies FILE for its replies)" if found == "evalpin" else ""),
            "replies": f"evalsite import evalpin SUITE --replies {path} --out DIR",
            "results": f"evalsite compare {path} RUN, or evalsite run SUITE --baseline {path}",
        }
        what = f"{found} {'suite' if kind == 'suite' else kind}"
        self.stderr.write(
            f"note: {path} looks like {'a' if found == 'promptfoo' else 'an'} {what} file, "
            f"not an evalsite suite: {hints[kind]}"
        )

    def suite_named_or_exit(self, reference: str) -> Suite:
        """The registered suite `reference` names, by name or by the path of its file."""
        from runs.models import Suite

        name = self.suite_or_exit(reference).name if Path(reference).is_file() else reference
        suite = Suite.objects.filter(name=name).first()
        if suite is None:
            self.fail(f"no suite named {name!r}")
        return suite

    def run_or_exit(
        self, reference: str, *, with_report: bool = False, suite: Suite | None = None
    ) -> Run:
        """The run `reference` names (id, unique prefix, label, ``latest``, ``baseline``, the
        path of its report.json or report folder); the reason and exit 2 when there is none,
        or none with a report when one is needed."""
        from runs.models import Run

        try:
            return Run.objects.resolve(reference, suite, with_report=with_report, paths=True)
        except (Run.DoesNotExist, Run.NoReport) as error:
            self.fail(str(error))

    def write_or_exit(self, path: Path, text: str) -> None:
        """Write `text` to the file `path` names (new, or a regular file); its reason and
        exit 2 otherwise (a symlink, FIFO, device or folder, a missing folder, a full disk)."""
        from evalsite.core.output_files import OutputError, write_output

        try:
            write_output(path, text)
        except OutputError as error:
            self.fail(str(error))

    def cap_or_exit(self, value: str | None, *, what: str = "--max-cost") -> Decimal | None:
        """A spending cap given on the command line, in USD; None when not given."""
        from evalsite.core.money import MoneyError, parse_cap

        if not value:
            return None
        try:
            return parse_cap(value, what=what)
        except MoneyError as error:
            self.fail(str(error))
