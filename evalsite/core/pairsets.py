"""Pair sets for the judge lab (SPEC §10.5): reading the JSONL file, the suite a lab run
judges, and the lab's figures, all from plain values.

The file holds one JSON object a line::

    {"id": "17", "task": "billing", "question": "…", "answer_a": "…", "answer_b": "…",
     "model_a": "m1", "model_b": "m2",
     "votes": [{"labeller": "ada", "prefer": "a"}],
     "judge": [{"judge": "gpt-4", "order": 1, "prefer": "b"}]}

``task`` and ``judge`` may be left out; every other key is required and no other key is
allowed. ``prefer`` is ``a``, ``b`` or ``tie`` in terms of ``answer_a`` / ``answer_b`` as
stored, also for order 2 (the judge was shown the answers swapped; its verdict is already
mapped back). :func:`parse_pairset` reports every problem at once, each with its line and
key, never a traceback. Votes and verdicts are kept exactly as given.

For the statistics ``answer_a`` is the baseline side: ``a`` → "baseline", ``b`` →
"candidate", ``tie`` → "tie" (:data:`CATEGORY`). A pair's human consensus is the strict
majority of its votes (more than half); a pair without one is left out and counted.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import yaml

from evalsite.core.input_limits import MAX_BYTES, size_message, text_problem
from evalsite.core.json_text import JsonTextError, load_json
from evalsite.core.problems import Problem, format_problems
from evalsite.core.stats.agreement import (
    fleiss_kappa,
    krippendorff_alpha,
    pairwise_cohen,
    strict_majority,
)
from evalsite.core.stats.kappa import Kappa, cohen_kappa
from evalsite.core.stats.pairs import pair_score
from evalsite.core.stats.record import jsonable

__all__ = [
    "CATEGORY", "MAX_PAIRS", "PREFER", "PREFERS", "LabCase", "LabVerdict", "PairEntry",
    "PairSetError", "PairSetFile", "Verdict", "Vote", "human_figures",
    "judge_figures", "judge_lines", "kappa_figures", "lab_cases", "lab_figures",
    "lab_suite_yaml", "pairset_name", "parse_pairset", "report_lines", "slug",
]  # fmt: skip

MAX_PAIRS = 20_000
MAX_PROBLEMS = 200
MAX_NAME_CHARS = 60  # "lab-" + name stays a suite identifier (64)
PREFERS = ("a", "b", "tie")
CATEGORY = {"a": "baseline", "b": "candidate", "tie": "tie"}
PREFER = {category: prefer for prefer, category in CATEGORY.items()}
ORDERS = (1, 2)
DEFAULT_TASK = "pairs"

_REQUIRED = ("id", "question", "answer_a", "answer_b", "model_a", "model_b", "votes")
_KEYS = (*_REQUIRED, "task", "judge")
_VOTE_KEYS = ("labeller", "prefer")
_VERDICT_KEYS = ("judge", "order", "prefer")
_UNREADABLE = object()
_LIMITS = {"id": 200, "task": 200, "model_a": 300, "model_b": 300, "labeller": 150, "judge": 300}


@dataclass(frozen=True)
class Vote:
    labeller: str
    prefer: str


@dataclass(frozen=True)
class Verdict:
    judge: str
    order: int
    prefer: str


@dataclass(frozen=True)
class PairEntry:
    """One line of the file, as given (``task`` None when the line names none)."""

    line: int
    id: str
    task: str | None
    question: str
    answer_a: str
    answer_b: str
    model_a: str
    model_b: str
    votes: tuple[Vote, ...]
    verdicts: tuple[Verdict, ...]


@dataclass(frozen=True)
class PairSetFile:
    filename: str
    sha256: str
    pairs: tuple[PairEntry, ...]
    warnings: tuple[Problem, ...] = ()


class PairSetError(ValueError):
    """A pair-set file that cannot be imported; ``problems`` names the line and key of each."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__(format_problems(self.problems))


# --- reading the file ----------------------------------------------------------------------


def parse_pairset(data: bytes, *, filename: str) -> PairSetFile:
    """Parse and check a pair-set file; PairSetError with every problem found (at most
    :data:`MAX_PROBLEMS` of them, then a count of the rest)."""
    if len(data) > MAX_BYTES:
        raise PairSetError([Problem(filename, None, "", size_message(len(data)))])
    problems: list[Problem] = []
    warnings: list[Problem] = []
    pairs: list[PairEntry] = []
    first_line: dict[str, int] = {}
    for number, raw in enumerate(data.removeprefix(b"\xef\xbb\xbf").split(b"\n"), start=1):
        if not raw.strip():
            continue
        reader = _Line(filename, number, problems, warnings)
        entry = reader.entry(raw)
        if entry is None:
            continue
        if entry.id in first_line:
            reader.error("id", f"duplicate id {entry.id!r} (first on line {first_line[entry.id]})")
            continue
        first_line[entry.id] = number
        pairs.append(entry)
    if not pairs and not problems:
        problems.append(
            Problem(filename, None, "", "the file holds no pairs: expected one JSON object a line")
        )
    if len(pairs) > MAX_PAIRS:
        problems.append(
            Problem(filename, None, "", f"{len(pairs):,} pairs; a pair set holds {MAX_PAIRS:,}")
        )
    if problems:
        raise PairSetError(_capped(problems, filename))
    digest = hashlib.sha256(data).hexdigest()
    return PairSetFile(filename, digest, tuple(pairs), tuple(_capped(warnings, filename)))


def _capped(problems: list[Problem], filename: str) -> list[Problem]:
    if len(problems) <= MAX_PROBLEMS:
        return problems
    rest = len(problems) - MAX_PROBLEMS
    return [*problems[:MAX_PROBLEMS], Problem(filename, None, "", f"… and {rest} more problems")]


class _Line:
    """Checks one line, adding its problems (file, line, key path) to the shared lists."""

    def __init__(
        self, filename: str, number: int, problems: list[Any], warnings: list[Any]
    ) -> None:
        self.filename, self.number = filename, number
        self.problems, self.warnings = problems, warnings
        self.found = 0

    def error(self, path: str, message: str) -> None:
        self.found += 1
        self.problems.append(Problem(self.filename, self.number, path, message))

    def entry(self, raw: bytes) -> PairEntry | None:
        data = self._json(raw)
        if data is _UNREADABLE:
            return None
        if not isinstance(data, dict):
            self.error("", f"expected a JSON object, not {_kind(data)}")
            return None
        self._keys(data, _KEYS, "")
        for key in _REQUIRED:
            if key not in data:
                self.error(key, f"missing required key {key!r}")
        values: dict[str, Any] = {
            "id": self._id(data),
            "task": self._task(data.get("task")),
            "question": self._text(data, "question", blank=False),
            "answer_a": self._answer(data, "answer_a"),
            "answer_b": self._answer(data, "answer_b"),
            "model_a": self._text(data, "model_a"),
            "model_b": self._text(data, "model_b"),
            "votes": self._votes(data.get("votes", [])),
            "verdicts": self._verdicts(data.get("judge", [])),
        }
        if self.found:
            return None
        return PairEntry(line=self.number, **values)

    def _json(self, raw: bytes) -> Any:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            self.error("", f"not valid UTF-8: byte 0x{raw[error.start]:02x} at column "
                           f"{error.start + 1}")  # fmt: skip
            return _UNREADABLE
        try:
            return load_json(text, object_pairs_hook=_no_duplicates)
        except JsonTextError as error:
            self.error("", str(error))
        return _UNREADABLE

    def _keys(self, data: dict[str, Any], known: Sequence[str], where: str) -> None:
        for key in data:
            if key not in known:
                close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
                hint = f" - did you mean {close[0]!r}?" if close else ""
                listed = ", ".join(known)
                self.error(_join(where, key), f"unknown key {key!r}{hint} (known: {listed})")

    def _string(self, value: Any, path: str, *, blank: bool = True, limit: int = 0) -> str | None:
        if not isinstance(value, str):
            self.error(path, f"must be text, not {_kind(value)}")
            return None
        problem = text_problem(value)
        if problem:
            self.error(path, problem)
        elif not blank and not value.strip():
            self.error(path, "must not be empty")
        elif limit and len(value) > limit:
            self.error(path, f"is longer than {limit} characters")
        else:
            return value
        return None

    def _text(self, data: dict[str, Any], key: str, *, blank: bool = True) -> str:
        if key not in data:
            return ""  # missing: reported with the required keys
        return self._string(data[key], key, blank=blank, limit=_LIMITS.get(key, 0)) or ""

    def _id(self, data: dict[str, Any]) -> str:
        value = data.get("id")
        if type(value) is int:
            return str(value)
        if "id" not in data:
            return ""
        return self._string(value, "id", blank=False, limit=_LIMITS["id"]) or ""

    def _task(self, value: Any) -> str | None:
        if value is None:
            return None
        return self._string(value, "task", blank=False, limit=_LIMITS["task"])

    def _answer(self, data: dict[str, Any], key: str) -> str:
        value = data.get(key, "")
        if isinstance(value, bool | int | float):
            text = json.dumps(value)
            self.warnings.append(
                Problem(
                    self.filename, self.number, key,
                    f"{_kind(value)} {text} is not text; stored as the text {text!r}",
                    "warning",
                )
            )  # fmt: skip
            return text
        return self._string(value, key) or ""

    def _votes(self, value: Any) -> tuple[Vote, ...]:
        votes: list[Vote] = []
        for index, item in self._items(value, "votes", _VOTE_KEYS):
            labeller = self._string(
                item["labeller"], f"votes[{index}].labeller", blank=False, limit=_LIMITS["labeller"]
            )
            prefer = self._prefer(item["prefer"], f"votes[{index}].prefer")
            if labeller is not None and any(v.labeller == labeller for v in votes):
                self.error(f"votes[{index}].labeller", f"{labeller!r} voted twice on this pair")
            elif labeller is not None and prefer is not None:
                votes.append(Vote(labeller, prefer))
        return tuple(votes)

    def _verdicts(self, value: Any) -> tuple[Verdict, ...]:
        verdicts: list[Verdict] = []
        for index, item in self._items(value, "judge", _VERDICT_KEYS):
            where = f"judge[{index}]"
            judge = self._string(
                item["judge"], f"{where}.judge", blank=False, limit=_LIMITS["judge"]
            )
            order = item["order"]
            if type(order) is not int or order not in ORDERS:
                self.error(f"{where}.order", f"order must be 1 or 2, not {_shown(order)}")
                order = None
            prefer = self._prefer(item["prefer"], f"{where}.prefer")
            if any((v.judge, v.order) == (judge, order) for v in verdicts):
                self.error(where, f"a second order-{order} verdict of {judge!r} on this pair")
            elif judge is not None and order is not None and prefer is not None:
                verdicts.append(Verdict(judge, int(order), prefer))
        return tuple(verdicts)

    def _items(
        self, value: Any, key: str, known: Sequence[str]
    ) -> list[tuple[int, dict[str, Any]]]:
        if not isinstance(value, list):
            self.error(key, f"must be a list, not {_kind(value)}")
            return []
        items = []
        for index, item in enumerate(value):
            where = f"{key}[{index}]"
            if not isinstance(item, dict):
                self.error(where, f"expected an object {{{', '.join(known)}}}, not {_kind(item)}")
                continue
            self._keys(item, known, where)
            missing = [name for name in known if name not in item]
            for name in missing:
                self.error(f"{where}.{name}", f"missing required key {name!r}")
            if not missing:
                items.append((index, item))
        return items

    def _prefer(self, value: Any, path: str) -> str | None:
        if value in PREFERS and isinstance(value, str):
            return value
        self.error(path, f"prefer must be a, b or tie, not {_shown(value)}")
        return None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"duplicate key {key!r}")
        seen[key] = value
    return seen


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "text", bool: "a boolean", int: "a number",
             float: "a number", type(None): "null"}  # fmt: skip
    return names.get(type(value), type(value).__name__)


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if value is not None else "null"
    return text if len(text) <= 40 else text[:39] + "…"


# --- names and the suite a lab run judges ------------------------------------------------


def slug(text: str, *, limit: int = 64, fallback: str = "pair") -> str:
    """``text`` as an identifier (``^[a-z0-9][a-z0-9-]{0,63}$``): ASCII-folded, lower case,
    every run of other characters one ``-``, at most ``limit`` characters."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    cleaned = re.sub(r"[^a-z0-9]+", "-", folded.lower()).strip("-")
    return cleaned[:limit].strip("-") or fallback


def pairset_name(filename: str) -> str:
    """The default name of a pair set imported from ``filename``: its stem as an identifier."""
    stem = re.split(r"[\\/]", filename)[-1]
    stem = re.sub(r"\.(jsonl|ndjson|json|txt)$", "", stem, flags=re.IGNORECASE)
    return slug(stem, limit=MAX_NAME_CHARS, fallback="pairs")


@dataclass(frozen=True)
class LabCase:
    """A pair as the lab suite has it: its task and case ids and the question."""

    task_id: str
    case_id: str
    question: str


def lab_cases(pairs: Sequence[PairEntry]) -> list[LabCase]:
    """Task and case ids for each pair: the slug of its task (``pairs`` when it names none;
    two task names with one slug get ``-2``…) and the slug of its id, unique across the
    set, so a case id alone finds its pair."""
    task_ids: dict[str | None, str] = {}
    used_tasks: set[str] = set()
    used_cases: set[str] = set()
    cases = []
    for pair in pairs:
        if pair.task not in task_ids:
            base = slug(pair.task or DEFAULT_TASK, fallback=DEFAULT_TASK)
            task_ids[pair.task] = _unique(base, used_tasks)
        cases.append(
            LabCase(task_ids[pair.task], _unique(slug(pair.id), used_cases), pair.question)
        )
    return cases


def _unique(base: str, used: set[str]) -> str:
    candidate, n = base, 1
    while candidate in used:
        n += 1
        suffix = f"-{n}"
        candidate = base[: 64 - len(suffix)].rstrip("-") + suffix
    used.add(candidate)
    return candidate


def lab_suite_yaml(
    name: str, cases: Sequence[LabCase], *, judge: str, rubric: str = "", max_tokens: int = 400
) -> str:
    """The suite a lab run of pair set ``name`` judges: one task per task id with prompt
    ``{{question}}``, one case per pair, the given answers as contestants ``given/a`` and
    ``given/b``, and ``judge``. ``rubric`` is left out when blank."""
    tasks: dict[str, list[dict[str, Any]]] = {}
    for case in cases:
        tasks.setdefault(case.task_id, []).append(
            {"id": case.case_id, "vars": {"question": case.question}}
        )
    judge_block: dict[str, Any] = {"model": judge}
    if rubric.strip():
        judge_block["rubric"] = rubric
    judge_block |= {"temperature": 0, "max_tokens": max_tokens}
    document = {
        "suite": f"lab-{name}",
        "version": 1,
        "description": f"Judge lab: the pairs of pair set {name}, answers given.",
        "models": ["given/a", "given/b"],
        "judge": judge_block,
        "tasks": [
            {"id": task_id, "prompt": "{{question}}", "cases": task_cases}
            for task_id, task_cases in tasks.items()
        ],
    }
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=10_000)


# --- the figures ------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabVerdict:
    """One verdict of a judge on a pair, ``prefer`` in a / b / tie terms."""

    judge: str
    pair: str
    order: int
    prefer: str


def lab_figures(
    votes: Mapping[str, Mapping[str, str]],
    verdicts: Iterable[LabVerdict],
    *,
    judges: Sequence[str] = (),
) -> dict[str, Any]:
    """Every figure of the lab from plain rows.

    ``votes`` maps each pair id of the set to ``{labeller: prefer}`` (empty when nobody
    voted); ``verdicts`` are the judges' verdicts. ``judges`` names judges to show in that
    order even without a verdict; the others follow in the order their verdicts come.
    Returns ``{"pairs", "humans", "judges"}`` as plain JSON (see :func:`human_figures` and
    :func:`judge_figures`).
    """
    humans = {pair: strict_majority(given.values()) for pair, given in votes.items()}
    agreed = {pair: prefer for pair, prefer in humans.items() if prefer is not None}
    by_judge: dict[str, list[tuple[str, int, str]]] = {name: [] for name in judges}
    for verdict in verdicts:
        by_judge.setdefault(verdict.judge, []).append((verdict.pair, verdict.order, verdict.prefer))
    return {
        "pairs": len(votes),
        "humans": human_figures(votes),
        "judges": {name: judge_figures(agreed, rows) for name, rows in by_judge.items()},
    }


def human_figures(votes: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    """Agreement among the labellers: Cohen's kappa of each two (``"x~y"``, over the pairs
    both labelled), Fleiss' kappa and Krippendorff's alpha over pairs with two or more
    votes, and how many pairs have a consensus."""
    labels = {
        pair: {labeller: CATEGORY[prefer] for labeller, prefer in given.items()}
        for pair, given in votes.items()
        if given
    }
    pairwise = pairwise_cohen(labels)
    agreed = [strict_majority(given.values()) for given in votes.values() if given]
    return cast(
        "dict[str, Any]",
        jsonable(
            {
                "pairwise": {names: result.kappa for names, result in pairwise.items()},
                "pairwise_n": {names: result.n for names, result in pairwise.items()},
                "fleiss_kappa": fleiss_kappa(labels),
                "krippendorff_alpha": krippendorff_alpha(labels),
                "labellers": sorted({labeller for given in labels.values() for labeller in given}),
                "multiply_labelled": sum(1 for given in labels.values() if len(given) >= 2),
                "consensus": sum(1 for prefer in agreed if prefer is not None),
                "no_majority": sum(1 for prefer in agreed if prefer is None),
                "unlabelled": len(votes) - len(labels),
            }
        ),
    )


def judge_figures(
    humans: Mapping[str, str], verdicts: Iterable[tuple[str, int, str]]
) -> dict[str, Any]:
    """One judge against the human consensus ``humans`` (pair → a / b / tie).

    ``verdicts`` are ``(pair, order, prefer)``. Kappa of the order-1 verdicts, of the
    order-2 verdicts, and of the combined verdict (SPEC §8) where both orders exist, each
    over the pairs that also have a consensus; flips and the flip rate over every pair with
    both orders.
    """
    orders: dict[int, dict[str, str]] = {1: {}, 2: {}}
    for pair, order, prefer in verdicts:
        orders[order][pair] = CATEGORY[prefer]
    both = [pair for pair in orders[1] if pair in orders[2]]
    scores = {pair: pair_score(orders[1][pair], orders[2][pair]) for pair in both}
    combined = {pair: score.category for pair, score in scores.items()}
    flips = sum(1 for score in scores.values() if score.flip)
    return {
        "order1": _against(humans, orders[1]),
        "order2": _against(humans, orders[2]),
        "combined": _against(humans, combined),
        "verdicts": {"order1": len(orders[1]), "order2": len(orders[2]), "both": len(both)},
        "flips": flips,
        "flip_rate": jsonable(flips / len(both)) if both else None,
    }


def _against(humans: Mapping[str, str], judged: Mapping[str, str]) -> dict[str, Any]:
    pairs = [pair for pair in judged if pair in humans]
    result = cohen_kappa([CATEGORY[humans[p]] for p in pairs], [judged[p] for p in pairs])
    return kappa_figures(result)


def kappa_figures(result: Kappa) -> dict[str, Any]:
    """The lab's view of a kappa: n, kappa, interval, standard error, band, agreement and
    the confusion matrix (rows human, columns judge; baseline, candidate, tie = a, b, tie)."""
    return cast(
        "dict[str, Any]",
        jsonable(
            {
                "n": result.n,
                "kappa": result.kappa,
                "kappa_ci": result.ci,
                "se": result.se,
                "band": result.band,
                "agreement": result.agreement,
                "confusion": result.confusion,
            }
        ),
    )


# --- the report as text -------------------------------------------------------------------


def report_lines(report: Mapping[str, Any]) -> list[str]:
    """``evalsite pairs report NAME`` as plain lines, from :func:`lab_figures`' dict (with
    ``name`` and each judge's cost fields added)."""
    humans = report["humans"]
    lines = [
        f"pair set {report['name']} - {report['pairs']} pairs",
        f"humans: {_count(len(humans['labellers']), 'labeller')}; "
        f"{humans['consensus']} pairs with a consensus, {humans['no_majority']} without a "
        f"majority, {humans['unlabelled']} unlabelled",
    ]
    if humans["multiply_labelled"]:
        lines.append(
            f"  {humans['multiply_labelled']} pairs labelled by two or more: Fleiss' kappa "
            f"{_number(humans['fleiss_kappa'])}, Krippendorff's alpha "
            f"{_number(humans['krippendorff_alpha'])}"
        )
        for names, kappa in humans["pairwise"].items():
            lines.append(f"  {names}: kappa {_number(kappa)} (n={humans['pairwise_n'][names]})")
    else:
        lines.append("  no pair was labelled by two or more people")
    lines.append("judges against the human consensus (kappa [95% interval] band, agreement, n):")
    for name, judge in report["judges"].items():
        lines += judge_lines(name, judge)
    return lines


def judge_lines(name: str, judge: Mapping[str, Any]) -> list[str]:
    """One judge's figures as indented lines: each view's kappa, the flips and the cost."""
    lines = [f"  {name}"]
    for key, label in _VIEWS:
        lines.append(f"    {label:<9} {_kappa_text(judge[key])}")
    flips = "-"
    if judge["flip_rate"] is not None:
        both = judge["verdicts"]["both"]
        flips = f"{judge['flips']} of {both} ({judge['flip_rate']:.3f})"
    lines.append(f"    flips {flips} · {_cost_text(judge)}")
    return lines


_VIEWS = (("order1", "order 1"), ("order2", "order 2"), ("combined", "combined"))


def _kappa_text(figures: Mapping[str, Any]) -> str:
    if not figures["n"]:
        return "no verdicts"
    if figures["kappa"] is None:
        return f"kappa undefined · agreement {figures['agreement']:.3f} · n={figures['n']}"
    low, high = figures["kappa_ci"]
    return (
        f"{figures['kappa']:.3f} [{low:.3f}, {high:.3f}] {figures['band']} · agreement "
        f"{figures['agreement']:.3f} · n={figures['n']}"
    )


def _cost_text(judge: Mapping[str, Any]) -> str:
    if judge.get("source") == "lab" and judge.get("cost_usd") is None:
        return f"not priced · run {judge['run_id']}"
    if judge.get("cost_usd") is None:
        return "cost not known (imported verdicts)"
    simulated = ", simulated" if judge.get("simulated") else ""
    return (
        f"cost ${judge['cost_usd']:.4f} (${judge['cost_if_uncached_usd']:.4f} if uncached"
        f"{simulated}) · run {judge['run_id']}"
    )


def _number(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
