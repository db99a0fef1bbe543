"""`evalsite prices [--for SUITE]`, `evalsite prices import FILE`, `evalsite prices export FILE`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from django.core.management.base import CommandParser

from evalsite.core.exitcodes import ExitCode
from evalsite.core.pricing import (
    PriceFileError,
    Resolution,
    parse_price_yaml,
    priced_as_notes,
    unknown_model_message,
)
from evalsite.core.suite_files import UnreadableFile, read_bounded
from evalsite.core.suites import SuiteError
from evalsite.core.yamlsafe import load_yaml
from evalsite.management import EvalsiteCommand
from runs.models import NoActivePriceTable, PriceTable
from runs.models.pricing import decimal_text


class Command(EvalsiteCommand):
    help = "Show the active price table, or import / export a price table in evalmine's YAML."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "action", nargs="?", choices=["show", "import", "export"], default="show"
        )
        parser.add_argument("file", nargs="?", help="The YAML file to import or export.")
        parser.add_argument("--for", dest="suite", help="Only the models a suite names.")
        parser.add_argument("--table", help="Export this table instead of the active one.")
        parser.add_argument("--name", help="Name for an imported table (default prices-<pinned>).")
        parser.add_argument("--activate", action="store_true", help="Make the import active.")
        parser.add_argument("--json", action="store_true", help="Print the table as JSON.")

    def handle(self, *args, action: str, file: str | None, **options):
        if action == "show":
            self._show(options["suite"], options["json"])
            return
        if not file:
            self.fail(f"`evalsite prices {action}` needs a FILE")
        if action == "import":
            self._import(Path(file), options["name"], options["activate"])
        else:
            self._export(Path(file), options["table"])

    def _import(self, path: Path, name: str | None, activate: bool) -> None:
        try:
            data = read_bounded(path)
            # The bounds every input file gets (size, UTF-8, aliases, nesting, integers
            # Python cannot read), each problem with its line, before the price rules.
            load_yaml(data, filename=str(path))
        except UnreadableFile as exc:
            self.fail(f"{path}: cannot read: {exc}")
        except SuiteError as exc:
            self.fail_all(exc.problems)
        if name and PriceTable.objects.filter(name=name).exists():
            self.fail(f"a price table named {name} already exists")
        try:
            sheet = parse_price_yaml(data.decode("utf-8"))
        except PriceFileError as exc:
            self.fail_all([f"{path}: {problem}" for problem in exc.problems])
        table = PriceTable.objects.import_sheet(sheet, name=name, activate=activate)
        for line in sheet.unused:
            self.stderr.write(f"note: {path}: {line}")
        state = "active" if table.active else "not active"
        self.stdout.write(f"imported {table.name}: {table.prices.count()} models ({state})")

    def _export(self, path: Path, name: str | None) -> None:
        table = (
            PriceTable.objects.filter(name=name).first() if name else PriceTable.objects.active()
        )
        if table is None:
            self.fail(f"no price table named {name}" if name else str(NoActivePriceTable()))
        self.write_or_exit(path, table.export_yaml())
        self.stdout.write(f"exported {table.name}: {table.prices.count()} models to {path}")

    def _show(self, suite_path: str | None, as_json: bool) -> None:
        try:
            table = PriceTable.objects.current()
        except NoActivePriceTable as exc:
            self.fail(str(exc))
        rows = list(table.prices.all())
        resolution = None
        if suite_path:
            resolution = self._resolve_suite(suite_path, table)
            used = {*resolution.priced, *resolution.aliases.values()}
            rows = [row for row in rows if row.model in used]
        unknown = dict(resolution.unknown) if resolution else {}
        not_priced = list(resolution.not_priced) if resolution else []
        aliases = dict(resolution.aliases) if resolution else {}
        if as_json:
            shown = _as_dict(table, rows, not_priced, unknown) | {"priced_as": aliases}
            self.stdout.write(json.dumps(shown, indent=2))
        else:
            self._print_table(table, rows, not_priced, unknown)
            for note in priced_as_notes(aliases):
                self.stdout.write(f"note: {note}")
        if unknown:
            sys.exit(ExitCode.INPUT_ERROR)

    def _resolve_suite(self, suite_path: str, table: PriceTable) -> Resolution:
        return table.resolve(self.suite_or_exit(suite_path).model_strings())

    def _print_table(self, table: PriceTable, rows, not_priced, unknown) -> None:
        flag = "verified" if table.verified else "UNVERIFIED"
        self.stdout.write(f"{table.name}  pinned {table.pinned}  {table.currency}  {flag}")
        self.stdout.write(f"  {'model':<44} {'input':>10} {'output':>10} {'cached in':>10}  $/Mtok")
        for row in rows:
            cached = decimal_text(row.cached_input_per_mtok) or "-"
            self.stdout.write(
                f"  {row.model:<44} {decimal_text(row.input_per_mtok):>10} "
                f"{decimal_text(row.output_per_mtok):>10} {cached:>10}"
            )
        for model in not_priced:
            self.stdout.write(f"  {model:<44} {'not priced':>10}")
        for model, hint in unknown.items():
            self.stderr.write(f"error: {unknown_model_message(model, hint, table.name)}")


def _as_dict(table: PriceTable, rows, not_priced, unknown) -> dict:
    return table.as_dict() | {
        "models": [{"model": row.model, **row.rates()} for row in rows],
        "not_priced": not_priced,
        "unknown": [{"model": m, "did_you_mean": h} for m, h in unknown.items()],
    }
