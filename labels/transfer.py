"""Labels in and out as the suite file's `labels:` YAML (SPEC §10.6).

Export writes every sample label of a suite as suite-file entries (task, case, the two
contestants, prefer, labeller, note), ready to paste into the suite file, where they bind
to task, case and models. Import reads the same YAML (a list, or a mapping with `labels:`)
and binds each entry to the answers of the suite's calibration run, as a label of source
"import"; every problem is reported with its entry and key, and nothing is stored unless
the whole file is usable.
"""

from __future__ import annotations

from typing import Any

import yaml
from django.db import transaction

from evalsite.core.suites import SuiteError
from evalsite.core.yamlsafe import load_yaml
from labels.queue import SAMPLE
from runs.calibration import refresh_human
from runs.models import Label, Pair, Run, Suite

PREFERS = ("baseline", "candidate", "tie")
KEYS = {"task", "case", "baseline", "candidate", "prefer", "note", "labeller"}


class LabelImportError(ValueError):
    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


def export_yaml(suite: Suite) -> str:
    labels = Label.objects.filter(suite=suite, mode=SAMPLE).order_by("task_id", "case_id", "pk")
    entries = []
    for label in labels:
        entry = {
            "task": label.task_id,
            "case": label.case_id,
            "baseline": label.baseline,
            "candidate": label.candidate,
            "prefer": label.prefer,
            "labeller": label.labeller_name,
        }
        if label.note:
            entry["note"] = label.note
        entries.append(entry)
    return yaml.safe_dump(
        {"labels": entries}, sort_keys=False, allow_unicode=True, default_flow_style=False
    )


def import_yaml(suite: Suite, text: str, *, user, filename: str) -> int:
    """Store the labels in `text`; LabelImportError with every problem (nothing stored)."""
    entries = _entries(text, filename)
    run = Run.objects.calibration_run(suite)
    if run is None:
        raise LabelImportError(
            [f"{filename}: suite {suite.name} has no judged run to bind labels to"]
        )
    problems, bound = [], []
    for index, entry in enumerate(entries):
        where = f"{filename}: labels[{index}]"
        problem = _entry_problem(entry)
        if problem:
            problems.append(f"{where}: {problem}")
            continue
        pairs = Pair.objects.filter(
            run=run,
            task_id=entry["task"],
            case_id=entry["case"],
            baseline_contestant=entry["baseline"],
            candidate_contestant=entry["candidate"],
        ).exclude(baseline_sha="")
        pair = pairs.order_by("repeat").first()
        if pair is None:
            problems.append(
                f"{where}: run {run.id} has no pair {entry['task']}/{entry['case']} of "
                f"{entry['baseline']} vs {entry['candidate']}"
            )
            continue
        bound.append((entry, pair))
    if problems:
        raise LabelImportError(problems)
    with transaction.atomic():
        for entry, pair in bound:
            content = {
                "task_id": pair.task_id,
                "case_id": pair.case_id,
                "baseline": pair.baseline_contestant,
                "candidate": pair.candidate_contestant,
                "baseline_sha": pair.baseline_sha,
                "candidate_sha": pair.candidate_sha,
            }
            Label.objects.update_or_create(
                suite=suite,
                labeller_name=entry.get("labeller") or _importer(user),
                **content,
                defaults={
                    "labeller": None if entry.get("labeller") or user is None else user,
                    "prefer": entry["prefer"],
                    "note": str(entry.get("note") or ""),
                    "source": Label.Source.IMPORT,
                    "mode": SAMPLE,
                },
            )
            refresh_human(suite, content)
    return len(bound)


def _importer(user) -> str:
    return f"imported by {user.get_username()}" if user is not None else "imported"


def _entries(text: str, filename: str) -> list[Any]:
    try:
        data = load_yaml(text.encode("utf-8", "surrogatepass"), filename=filename).data
    except SuiteError as error:
        raise LabelImportError([str(problem) for problem in error.problems]) from None
    if isinstance(data, dict) and set(data) == {"labels"}:
        data = data["labels"]
    if not isinstance(data, list) or not data:
        raise LabelImportError(
            [f"{filename}: expected a list of labels, or a mapping with labels:"]
        )
    return data


def _entry_problem(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return "expected a mapping {task, case, baseline, candidate, prefer}"
    unknown = sorted(set(entry) - KEYS)
    if unknown:
        return f"unknown key {unknown[0]!r} (known: {', '.join(sorted(KEYS))})"
    for key in ("task", "case", "baseline", "candidate", "prefer"):
        if not isinstance(entry.get(key), str) or not entry[key]:
            return f"{key!r} is missing or not text"
    if entry["prefer"] not in PREFERS:
        return f"prefer must be baseline, candidate or tie, not {entry['prefer']!r}"
    if entry["baseline"] == entry["candidate"]:
        return "baseline and candidate are the same contestant"
    return None
