"""`evalsite import FORMAT SOURCE`: another tool's suite in evalsite's format, with every part
that did not translate listed at its source line (docs/importing.md)."""

from __future__ import annotations

import sys
from pathlib import Path

from evalsite.core.exitcodes import ExitCode
from evalsite.management import EvalsiteCommand


class Command(EvalsiteCommand):
    help = (
        "Import an evalpin, evaling, evalblink or promptfoo suite as an evalsite suite, "
        "listing what did not translate."
    )
    requires_system_checks: list[str] = []  # files, and the price table for one note
    # Files only, a bad source refused without a database: the one note that reads the
    # price table prepares it (_unpriced).
    requires_migrations_checks = False

    def add_arguments(self, parser):
        parser.add_argument(
            "format", choices=["evalpin", "evaling", "evalblink", "promptfoo", "auto"]
        )
        parser.add_argument("source", help="The suite (or evalpin results file) to import.")
        parser.add_argument("--out", default=".", help="Folder to write to (default: here).")
        parser.add_argument("--force", action="store_true", help="Overwrite existing files.")
        parser.add_argument("--replies", help="evalpin: the replies file of the suite.")
        parser.add_argument("--repeats", type=int, help="evalpin: its -k N, as repeats: N.")

    def handle(self, *args, format: str, source: str, out: str, force: bool, **options):
        from evalsite.core.importers import check_translation, translate, write_translation
        from evalsite.core.importers.outputs import existing_outputs, output_problems
        from evalsite.core.output_files import OutputError
        from evalsite.core.problems import SuiteError

        repeats = options["repeats"]
        if repeats is not None and not 1 <= repeats <= 20:
            self.fail("--repeats takes 1 to 20")
        replies = Path(options["replies"]) if options["replies"] else None
        try:
            translation = translate(format, Path(source), replies=replies, repeats=repeats)
        except SuiteError as error:
            self._untranslated(getattr(error, "untranslated", ()))
            self.fail_all(error.problems)
        problems = check_translation(translation)
        if problems:
            self._untranslated(translation.untranslated)
            self.stderr.write(
                "the translated suite does not validate (a bug of the importer); nothing "
                "was written:"
            )
            self.fail_all(problems)
        out_dir = Path(out)
        unwritable = output_problems(translation, out_dir)
        if unwritable:
            self.fail_all(unwritable)
        existing = existing_outputs(translation, out_dir)
        if existing and not force:
            names = ", ".join(str(path) for path in existing)
            self.fail(f"{names} already exist; pass --force to overwrite")
        try:
            written = write_translation(translation, out_dir, force=force)
        except OutputError as error:
            self.fail(str(error))
        for path in written:
            self.stdout.write(f"wrote {path}")
        self._report(translation, out_dir)
        sys.exit(ExitCode.OK)

    def _untranslated(self, items) -> None:
        """Every part that did not translate, one line each: also when nothing is written."""
        for item in items:
            self.stdout.write(f"untranslated: {item}")

    def _report(self, translation, out_dir: Path) -> None:
        self._untranslated(translation.untranslated)
        for note in translation.notes:
            self.stdout.write(f"note: {note}")
        count = len(translation.untranslated)
        self.stdout.write(f"{count} part(s) not translated" if count else "everything translated")
        if translation.suite_file:
            suite = out_dir / translation.suite_file
            errors, unpriced = _unpriced(suite)
            for error in errors:  # each says how to add the row (core pricing)
                self.stdout.write(f"note: {error}")
            self.stdout.write(f"next: {next_steps(translation, suite, unpriced)}")


def next_steps(translation, suite: Path, unpriced: list[str]) -> str:
    """The commands that validate and run the written suite, exactly as they work: a
    scripted suite (evalpin's) with its replies, any other with --fake (and a fake model
    when no model was translated); after the price rows it still needs, named, and then a
    command that runs now, with the fake model in place of the unpriced ones."""
    models = translation.suite.get("models") or []
    scripted = bool(models) and all(str(m).startswith("scripted/") for m in models)
    if scripted and translation.suite.get("replies"):
        run = f"evalsite run {suite}"
    elif models:
        run = f"evalsite run {suite} --fake"
    else:
        run = f"evalsite run {suite} --models fake/small --fake"
    commands = f"evalsite validate {suite} && {run}"
    if not unpriced:
        return commands
    judge = (translation.suite.get("judge") or {}).get("model")
    now = f"evalsite run {suite} --models fake/small --fake"
    if judge in unpriced:
        now += " --judge fake/small"
    return (
        f"add price rows for {', '.join(unpriced)} (the admin's Prices, or `evalsite prices "
        "import FILE --activate`; `evalsite models --catalog` shows OpenRouter's prices), "
        f"then: {commands}; or now, the fake model in their place: {now}"
    )


def _unpriced(path: Path) -> tuple[list[str], list[str]]:
    """The errors for, and the model strings of, the written suite's models the active price
    table cannot resolve (an OpenRouter model of evalblink's, typically): the one check of
    `validate` that needs the database, which the pure importer cannot make."""
    from evalsite.core.suites import load_suite
    from runs.planning.validation import model_errors
    from runs.setup import prepare_database

    prepare_database()  # a first command on a new data dir: the price table is loaded here
    errors, details = model_errors(load_suite(path))
    return errors, list((details.get("models") or {}).get("unknown") or [])
