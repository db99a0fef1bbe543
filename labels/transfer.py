"""Labels in and out as the suite file's `labels:` YAML (SPEC §10.6).

Export writes every sample label of a suite as suite-file entries (task, case, the two
contestants, prefer, labeller, note, and the probability the queue asked with), ready to
paste into the suite file, where they bind to task, case and models. Import reads the same
YAML (a list, or a mapping with `labels:`) and binds each entry to the answers of the
suite's calibration run, as a label of source "import"; every problem is reported with its
entry and key, and nothing is stored unless the whole file is usable.

An imported label belongs to a user of the site, never to a name made up in the file
(docs/labelling.md): a member's import is all their own, and an entry naming anyone else is
refused; staff (and the command line, an operator on the machine) may name an existing
user in ``labeller:``; and an import never replaces someone else's label from the browser,
nor lands on a row that belongs to another account.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import yaml
from django.contrib.auth import get_user_model
from django.db import transaction

from evalsite.core.suites import SuiteError
from evalsite.core.yamlsafe import load_yaml
from labels.queue import SAMPLE, content_of
from runs.models import Label, Pair, Run, Suite
from runs.results.calibration import refresh_human

PREFERS = ("baseline", "candidate", "tie")
KEYS = {"task", "case", "baseline", "candidate", "prefer", "note", "labeller", "probability"}


class LabelImportError(ValueError):
    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


def export_yaml(suite: Suite, *, viewer=None, hidden: Collection[tuple[str, ...]] = ()) -> str:
    """The suite's sample labels as `labels:` YAML; with `viewer`, other people's labels of
    the content keys in `hidden` (pairs still waiting for the viewer) are left out."""
    labels = Label.objects.filter(suite=suite, mode=SAMPLE).order_by("task_id", "case_id", "pk")
    entries = []
    for label in labels:
        key = tuple(content_of(label).values())
        if viewer is not None and label.labeller_id != viewer.pk and key in hidden:
            continue
        entry: dict[str, str | float] = {
            "task": label.task_id,
            "case": label.case_id,
            "baseline": label.baseline,
            "candidate": label.candidate,
            "prefer": label.prefer,
            "labeller": label.labeller_name,
        }
        if label.note:
            entry["note"] = label.note
        if label.probability is not None:  # its weight in the corrected win-rate and kappa
            entry["probability"] = label.probability
        entries.append(entry)
    return yaml.safe_dump(
        {"labels": entries}, sort_keys=False, allow_unicode=True, default_flow_style=False
    )


def import_yaml(suite: Suite, text: str, *, user, filename: str) -> int:
    """Store the labels in `text` as `user`'s import (None: the command line's operator);
    LabelImportError with every problem (nothing stored). Returns how many were stored."""
    entries = _entries(text, filename)
    run = Run.objects.calibration_run(suite)
    if run is None:
        raise LabelImportError(
            [f"{filename}: suite {suite.name} has no judged run to bind labels to"]
        )
    users = _named_users(entries)
    problems, bound = [], []
    for index, entry in enumerate(entries):
        try:
            item = _bind(suite, run, entry, user, users)
        except _EntryProblem as problem:
            problems.append(f"{filename}: labels[{index}]: {problem}")
            continue
        if item is not None:  # None: someone's browser label it repeats, left as it is
            bound.append(item)
    if problems:
        raise LabelImportError(problems)
    _store(suite, bound)
    return len(bound)


class _EntryProblem(Exception):
    """Why one entry of the file cannot be stored."""


def _bind(suite: Suite, run: Run, entry: Any, user, users: dict) -> tuple | None:
    """(entry, owner, pair, the label it replaces) to store; None to leave as it is;
    _EntryProblem to refuse."""
    problem = _entry_problem(entry)
    if problem:
        raise _EntryProblem(problem)
    owner = _owner(entry.get("labeller"), user, users)
    pair = _pair(run, entry)
    if pair is None:
        raise _EntryProblem(
            f"run {run.id} has no pair {entry['task']}/{entry['case']} of "
            f"{entry['baseline']} vs {entry['candidate']}"
        )
    name = owner.get_username()
    existing = Label.objects.filter(suite=suite, labeller_name=name, **pair.content).first()
    if existing is None:
        return entry, owner, pair, None
    if existing.labeller_id != owner.pk:  # a deleted or renamed account's row
        raise _EntryProblem(
            f"the label under the name {name!r} on this pair belongs to another account; "
            "an import does not replace it"
        )
    theirs = existing.source == Label.Source.BROWSER and (
        user is None or existing.labeller_id != user.pk
    )
    if not theirs:
        return entry, owner, pair, existing
    if existing.prefer == entry["prefer"] and existing.note == str(entry.get("note") or ""):
        return None
    raise _EntryProblem(
        f"{name} labelled this pair in the browser ({existing.prefer}); an import never "
        "replaces someone else's own label"
    )


def _named_users(entries: list[Any]) -> dict[str, Any]:
    """The active users the entries' `labeller:` names, by user name."""
    names = {e.get("labeller") for e in entries if isinstance(e, dict)}
    User = get_user_model()
    found = User.objects.filter(
        **{f"{User.USERNAME_FIELD}__in": [name for name in names if isinstance(name, str)]},
        is_active=True,
    )
    return {account.get_username(): account for account in found}


def _owner(named: Any, user, users: dict[str, Any]):
    """The user an entry's label belongs to: a member's own, whatever it names; for staff
    and the command line (`user` None), the existing user it names (staff: else their own)."""
    if named is not None and (not isinstance(named, str) or not named):
        raise _EntryProblem("'labeller' must be a user name")
    if user is not None and not user.is_staff:
        me = user.get_username()
        if named not in (None, me):
            raise _EntryProblem(
                f"labeller {named!r} is not you ({me}): you can import only your own labels; "
                f"leave labeller out or write labeller: {me}"
            )
        return user
    if named is None:
        if user is None:
            raise _EntryProblem(
                "no labeller: name the user the label belongs to, or import with --as USER"
            )
        return user
    if named not in users:
        raise _EntryProblem(
            f"labeller {named!r} is not a user of this site: an imported label belongs to an "
            "existing user"
        )
    return users[named]


def _pair(run: Run, entry: dict) -> Pair | None:
    pairs = Pair.objects.filter(
        run=run,
        task_id=entry["task"],
        case_id=entry["case"],
        baseline_contestant=entry["baseline"],
        candidate_contestant=entry["candidate"],
    ).exclude(baseline_sha="")
    return pairs.order_by("repeat").first()


def _store(suite: Suite, bound: list[tuple[dict, Any, Pair, Label | None]]) -> None:
    """Each label as a sample label with the file's probability, a new one or one an
    earlier import stored; over the owner's own browser label, its choice and note only: it
    keeps the queue it was given in (:meth:`LabelQuerySet.give`)."""
    with transaction.atomic():
        for entry, owner, pair, existing in bound:
            content = pair.content
            values = {
                "labeller": owner,
                "prefer": entry["prefer"],
                "note": str(entry.get("note") or ""),
                "source": Label.Source.IMPORT,
            }
            picked = {"mode": SAMPLE, "probability": entry.get("probability")}
            from_a_file = existing is None or existing.source == Label.Source.IMPORT
            Label.objects.give(suite, owner, content, values, picked, repick=from_a_file)
            refresh_human(suite, content)


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
    chance = entry.get("probability")
    if chance is not None and (
        isinstance(chance, bool) or not isinstance(chance, int | float) or not 0 < chance <= 1
    ):
        return f"probability must be a number above 0 and at most 1, not {chance!r}"
    return None
