"""`evalsite init [PATH] [--yes]`: three questions, then a starter suite and its scripted
replies, validated before they are written and never written over without asking."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import TypeVar

from evalsite.core import starter
from evalsite.core.output_files import OutputError, check_output
from evalsite.core.starter import Judging, Starter, StarterError
from evalsite.core.suites import load_suite
from evalsite.management import EvalsiteCommand
from runs.models import Endpoint, NoActivePriceTable, PriceTable
from runs.planning.planner import PlanError, RunOptions, make_plan, needed_keys
from runs.planning.validation import validate

T = TypeVar("T")


class Command(EvalsiteCommand):
    help = "Write a starter suite and its scripted replies, after three questions."

    def add_arguments(self, parser):
        parser.add_argument(
            "path",
            nargs="?",
            default=starter.SUITE_FILE,
            help="The suite file to write (default ./evalsite.yaml); in a folder, "
            "evalsite.yaml inside it. The replies go beside it as NAME.replies.yaml.",
        )
        parser.add_argument(
            "--yes",
            action="store_true",
            help="Take every default without asking, and refuse to overwrite a file.",
        )

    def handle(self, *args, path: str, yes: bool, **options):
        suite_path, replies_path = self._paths(path)
        self.ask = Questions(sys.stdin, self.stdout, fail=self.fail, defaults_only=yes)
        overwrite = self._may_overwrite([suite_path, replies_path], yes)
        try:
            rows = [price.to_row() for price in PriceTable.objects.current().prices.all()]
        except NoActivePriceTable as error:
            self.fail(str(error))
        self.stdout.write(f"evalsite init writes {suite_path} and {replies_path}.")
        name = self.ask("Suite name", starter.default_name(suite_path), starter.suite_name)
        mode = self.ask(
            "How are answers judged: checks, judge (pairwise) or both?", "both", starter.judging
        )
        models = ", ".join(starter.default_models(rows))
        question = "Models, comma-separated, baseline first"
        self.names = suite_path.name, replies_path.name
        files = self.ask(question, models, lambda text: self._files(text, name, mode, rows))
        for target, text in zip((suite_path, replies_path), files[:2], strict=True):
            target.parent.mkdir(parents=True, exist_ok=True)
            if not overwrite and os.path.lexists(target):  # made while the questions ran
                self.fail(f"{target} appeared meanwhile; nothing more written")
            self.write_or_exit(target, text)
        self.stdout.write(f"wrote {suite_path} and {replies_path}")
        self.stdout.write(files[2].replace(f"ok: {suite_path.name} ", f"ok: {suite_path} ", 1))
        self.stdout.write(_next_steps(suite_path, mode))

    def _paths(self, given: str) -> tuple[Path, Path]:
        path = Path(given)
        if path.is_dir() or given.endswith("/"):
            path = path / starter.SUITE_FILE
        if path.suffix not in {".yaml", ".yml"}:
            self.fail(f"{given}: a suite file's name ends in .yaml or .yml")
        return path, path.with_name(f"{path.stem}.replies.yaml")

    def _may_overwrite(self, paths: list[Path], yes: bool) -> bool:
        """True when a file is to be written over; exit 2 when it may not be (or is not a
        regular file: a symlink, FIFO, device or folder is never written over)."""
        for path in paths:
            try:
                check_output(path)
            except OutputError as error:
                self.fail(str(error))
        found = [str(path) for path in paths if os.path.lexists(path)]
        if not found:
            return False
        exists = f"{' and '.join(found)} already exist{'s' if len(found) == 1 else ''}"
        if yes:
            self.fail(f"{exists}; --yes never overwrites: remove {_it(found)} first")
        if not self.ask(f"{exists}. Overwrite {_it(found)}?", "no", _yes_or_no):
            self.fail(f"{exists}; nothing written, {_it(found)} left as before")
        return True

    def _files(self, text: str, name: str, mode: Judging, rows) -> tuple[str, str, str]:
        """The suite and replies texts for these models, validated as `evalsite validate`
        validates a suite, and its summary line; StarterError naming every problem."""
        models = starter.model_list(text, mode)
        judge_model, note = starter.default_judge(models, rows)
        contestants = [*models, judge_model] if mode.judge else list(models)
        try:
            keys = list(needed_keys(contestants, Endpoint.objects.configs()))
        except PlanError as error:
            raise StarterError(str(error)) from None
        chosen = Starter(name, mode, models, judge_model, note)
        suite_file, replies_file = self.names
        replies_text = starter.render_replies(chosen, suite_file)
        suite_text = starter.render_suite(chosen, suite_file, replies_file, keys)
        outcome = _validated(suite_file, suite_text, replies_file, replies_text)
        if outcome["ok"] and outcome["estimate"] > chosen.max_cost:
            chosen = starter.capped(chosen, outcome["estimate"])
            suite_text = starter.render_suite(chosen, suite_file, replies_file, keys)
            outcome = _validated(suite_file, suite_text, replies_file, replies_text)
        if not outcome["ok"]:
            raise StarterError("\n".join(outcome["errors"]))
        return suite_text, replies_text, outcome["summary"]


class Questions:
    """Asks on `output` and reads the answers from `input`, one line each. Enter takes the
    default; so does every question after the input ends (`--yes`: every question). A bad
    answer is asked again; a bad default, or input that ends on a bad answer, fails."""

    def __init__(self, input, output, *, fail: Callable[[str], None], defaults_only: bool):
        self.input, self.output, self.fail = input, output, fail
        self.ended = defaults_only

    def __call__(self, question: str, default: str, parse: Callable[[str], T]) -> T:
        rejected = None
        while True:
            answer = self._line(f"{question} [{default}]: ")
            try:
                if self.ended and rejected:  # the input ended on a bad answer
                    raise rejected
                return parse(answer or default)
            except StarterError as error:
                if self.ended:
                    self.fail(f"{question.rstrip('?:')}: {error}")
                self.output.write(f"  {error}".replace("\n", "\n  "))
                rejected = error

    def _line(self, prompt: str) -> str:
        if self.ended:
            return ""
        self.output.write(prompt, ending="")
        self.output.flush()
        line = self.input.readline()
        if not line:
            self.ended = True
            self.output.write("")
            return ""
        if not self.input.isatty():
            self.output.write(line.rstrip("\r\n"))  # a piped answer, shown as if typed
        return line.strip()


def _it(found: list[str]) -> str:
    return "it" if len(found) == 1 else "them"


def _yes_or_no(text: str) -> bool:
    word = text.strip().lower()
    if word in {"y", "yes"}:
        return True
    if word in {"n", "no"}:
        return False
    raise StarterError("answer yes or no")


def _validated(suite_file: str, suite_text: str, replies_file: str, replies_text: str) -> dict:
    """`evalsite validate`'s outcome for the two texts, written to a scratch folder, with
    the estimate of a run of them when they are valid; its lines name the suite by its file
    name rather than the scratch path."""
    with tempfile.TemporaryDirectory(prefix="evalsite-init-") as folder:
        (Path(folder) / replies_file).write_text(replies_text, encoding="utf-8")
        scratch = Path(folder) / suite_file
        scratch.write_text(suite_text, encoding="utf-8")
        outcome = validate(str(scratch))
        if outcome["ok"]:  # what a run of it would cost, priced as --fake prices it
            plan = make_plan(None, load_suite(scratch), RunOptions(fake=True, env={}))
            outcome["estimate"] = Decimal(plan.estimate["total_usd"])
    for key in ("errors", "warnings"):
        outcome[key] = [line.replace(str(scratch), suite_file) for line in outcome[key]]
    outcome["summary"] = outcome.get("summary", "").replace(str(scratch), suite_file)
    return outcome


def _next_steps(suite_path: Path, mode: Judging) -> str:
    judge = " --judge scripted/judge" if mode.judge else ""
    return (
        "next, with no key and no network:\n"
        f"  evalsite run {suite_path} --fake\n"
        f"  evalsite run {suite_path} --models scripted/sloppy,scripted/good{judge}"
    )
