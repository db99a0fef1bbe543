"""`evalsite pairs import|judge|report|list`: the judge lab from the command line (SPEC §10.5).

evalsite pairs import FILE [--name NAME]
evalsite pairs judge NAME --judge MODEL [--rubric FILE] [--fake] [--replies FILE]
                     [--max-cost USD]
evalsite pairs report NAME [--json]
evalsite pairs list
"""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from pathlib import Path
from typing import NoReturn

from django.core.management.base import CommandParser

from evalsite.core.input_limits import MAX_BYTES, size_message
from evalsite.core.pairsets import judge_lines, report_lines
from evalsite.management import EvalsiteCommand
from lab.judges import JudgeConfig, LabError, lab_report, plan_judge_run, start_judge_run
from lab.models import PairSet
from lab.transfer import import_pairset, import_suite_pairs
from runs.engine.local import execute_here


class Command(EvalsiteCommand):
    help = "The judge lab: import pair sets, run judges over them, compare the judges."

    def add_arguments(self, parser: CommandParser) -> None:
        verbs = parser.add_subparsers(dest="verb", required=True)
        into = verbs.add_parser("import", help="Import a pair set (JSONL, SPEC §10.5).")
        into.add_argument("file", help="The JSONL file, one pair a line.")
        into.add_argument("--name", help="The pair set's name (default: the file's stem).")
        judge = verbs.add_parser("judge", help="Run a judge over a pair set, in this process.")
        judge.add_argument("name", help="The pair set.")
        judge.add_argument("--judge", required=True, help="The judge model, provider/model.")
        judge.add_argument("--rubric", help="A text file with the rubric the judge is given.")
        judge.add_argument("--fake", action="store_true", help="Judge with the fake adapter.")
        judge.add_argument("--replies", help="Scripted replies file for a scripted/… judge.")
        judge.add_argument("--max-cost", help="Cap in USD (default $2.00).")
        report = verbs.add_parser("report", help="Every judge side by side against the humans.")
        report.add_argument("name", help="The pair set.")
        report.add_argument("--json", action="store_true", help="Print the figures as JSON.")
        verbs.add_parser("list", help="The pair sets.")
        suite = verbs.add_parser(
            "from-suite", help="A pair set of a suite's labelled pairs (its latest judged run)."
        )
        suite.add_argument("suite", help="The suite's name.")
        suite.add_argument("--name", help="The pair set's name (default: <suite>-labelled).")

    def handle(self, *args, **opts):
        getattr(self, "_" + opts["verb"].replace("-", "_"))(opts)

    def _from_suite(self, opts) -> None:
        suite = self.suite_named_or_exit(opts["suite"])
        try:
            pairset = import_suite_pairs(suite, name=opts.get("name"))
        except LabError as error:
            self._fail_with(error)
        self.stdout.write(
            f"pair set {pairset.name}: {pairset.items.count()} labelled pairs of {suite.name}"
        )

    def _import(self, opts) -> None:
        path = Path(opts["file"])
        data = self._read(path)
        try:
            pairset, warnings = import_pairset(data, filename=str(path), name=opts.get("name"))
        except LabError as error:
            self._fail_with(error)
        for warning in warnings:
            self.stderr.write(str(warning))
        count = pairset.items.count()
        self.stdout.write(f"imported {count} pair{'s' if count != 1 else ''} as {pairset.name}")

    def _judge(self, opts) -> None:
        pairset = self._pairset(opts["name"])
        rubric = ""
        if opts["rubric"]:
            rubric = self._read(Path(opts["rubric"])).decode("utf-8", "replace")
        config = JudgeConfig(
            model=opts["judge"],
            rubric=rubric,
            fake=opts["fake"],
            replies=opts["replies"],
            max_cost=self.cap_or_exit(opts["max_cost"]),
        )
        try:
            plan = plan_judge_run(pairset, config)
            self._print_estimate(plan)
            run = start_judge_run(plan)
        except LabError as error:
            self._fail_with(error)
        self.stderr.write(f"run {run.id}: judging {pairset.name} with {plan.name}")
        run = execute_here(run)
        if run.status != run.Status.DONE:
            self.stderr.write(f"run {run.id} {run.status}: {run.detail}")
            sys.exit(run.exit_code)
        judge = lab_report(pairset)["judges"][plan.name]
        self.stdout.write(f"run {run.id} done; {plan.name} against the human consensus:")
        for line in judge_lines(plan.name, judge)[1:]:
            self.stdout.write(line)

    def _report(self, opts) -> None:
        report = lab_report(self._pairset(opts["name"]))
        if opts["json"]:
            self.stdout.write(json.dumps(report, indent=2, ensure_ascii=False))
            return
        for line in report_lines(report):
            self.stdout.write(line)

    def _list(self, opts) -> None:
        pairsets = PairSet.objects.with_counts().order_by("name")
        if not pairsets:
            self.stdout.write("no pair sets yet: evalsite pairs import FILE")
        for pairset in pairsets:
            self.stdout.write(
                f"{pairset.name}  {pairset.pair_count} pairs · {pairset.run_count} lab runs · "
                f"imported {pairset.created_at:%Y-%m-%d %H:%M} from {pairset.source_name}"
            )

    # --- helpers ------------------------------------------------------------------------------

    def _print_estimate(self, lab) -> None:
        estimate, line = lab.plan.estimate, lab.plan.estimate["judge"]
        tag = " (simulated: --fake)" if lab.config.fake else ""
        priced = "" if line["priced"] else " (not priced)"
        self.stderr.write(
            f"estimate{tag}: ${Decimal(estimate['total_usd']):.4f} against a cap of "
            f"${lab.plan.cap:.4f} - {line['calls']} judge calls ({line['cached_calls']} cached)"
            f"{priced}"
        )

    def _pairset(self, name: str) -> PairSet:
        pairset = PairSet.objects.filter(name=name).first()
        if pairset is None:
            known = ", ".join(PairSet.objects.order_by("name").values_list("name", flat=True))
            self.fail(f"no pair set named {name!r}" + (f" (known: {known})" if known else ""))
        return pairset

    def _read(self, path: Path) -> bytes:
        try:
            size = path.stat().st_size
            if size > MAX_BYTES:
                self.fail(f"{path}: {size_message(size)}")
            return path.read_bytes()
        except OSError as error:
            self.fail(f"{path}: {error.strerror or 'cannot be read'}")

    def _fail_with(self, error: LabError) -> NoReturn:
        self.fail_all(error.problems, error.code)
