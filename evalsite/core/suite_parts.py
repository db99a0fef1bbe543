"""The parts of a suite: tasks, cases, variants, labels and the judge, as frozen values.

Each ``from_dict`` is lenient on purpose: it takes the well-formed parts of a document that
may have failed validation (wrong types become defaults, list items that are not mappings
become empty ones so indexes still match the document), so cross-reference and template
checks can run beside schema errors. A Suite is handed out only when there were no errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from evalsite.core.templating import VarValue

Message = Mapping[str, Any]  # {role, content}: content a text or a list of parts
Prompt = str | tuple[Message, ...]


NUMBER = (int, float)


def as_type(value: Any, kind: type | tuple[type, ...], default: Any) -> Any:
    """``value`` if it is an instance of ``kind`` (a bool is not a number), else ``default``."""
    if isinstance(value, bool) and kind is not bool:
        return default
    return value if isinstance(value, kind) else default


def string_items(value: Any) -> tuple[str, ...]:
    return tuple(item for item in as_type(value, list, []) if isinstance(item, str))


def dict_items(value: Any) -> tuple[Mapping[str, Any], ...]:
    """The items of a list, non-mappings replaced by {} so indexes match the document."""
    return tuple(as_type(item, dict, {}) for item in as_type(value, list, []))


@dataclass(frozen=True)
class Case:
    """One case of a task. ``check`` is the execution check merged over the task's;
    ``expected`` is the list a weighted match compares with; ``grade`` the case's own
    judge criteria (``criteria``, ``reference``, ``threshold``)."""

    id: str
    vars: Mapping[str, VarValue] = field(default_factory=dict)
    files: Mapping[str, str] = field(default_factory=dict)  # name -> path in the suite folder
    tags: tuple[str, ...] = ()
    checks: tuple[Mapping[str, Any], ...] = ()
    check: Mapping[str, Any] | None = None
    expected: Any = None
    grade: Mapping[str, Any] | None = None

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], task_check: Mapping[str, Any] | None) -> Case:
        own = as_type(raw.get("check"), dict, None)
        check = {**(task_check or {}), **own} if own is not None else task_check
        return cls(
            id=as_type(raw.get("id"), str, ""),
            vars=as_type(raw.get("vars"), dict, {}),
            files={
                name: path
                for name, path in as_type(raw.get("files"), dict, {}).items()
                if isinstance(path, str)
            },
            tags=string_items(raw.get("tags")),
            checks=dict_items(raw.get("checks")),
            check=check,
            expected=raw.get("expected"),
            grade=as_type(raw.get("grade"), dict, None),
        )


@dataclass(frozen=True)
class TaskVariant:
    """A task's own text for one variant; None parts come from the suite variant or task."""

    prompt: Prompt | None = None
    system: str | None = None


def prompt_value(value: Any) -> Prompt | None:
    if isinstance(value, str):
        return value
    return dict_items(value) if isinstance(value, list) else None


_PARAM_KEYS = (
    "temperature", "max_tokens", "timeout_s", "top_p", "stop", "reasoning_effort", "thinking",
)  # fmt: skip


@dataclass(frozen=True)
class Task:
    """One task: its prompt template, scoring settings and cases.

    ``prompt`` is a string or a tuple of ``{role, content}`` messages as written (a leading
    system message in the list plays the role of ``system``). ``params`` holds the task's
    own overrides of temperature, max_tokens, timeout_s, top_p, stop, reasoning_effort and
    thinking.
    """

    id: str
    prompt: Prompt
    cases: tuple[Case, ...]
    kind: str | None = None
    system: str | None = None
    schema: Mapping[str, Any] | bool | None = None
    rubric: str | None = None
    judge: bool = True
    tags: tuple[str, ...] = ()
    checks: tuple[Mapping[str, Any], ...] = ()
    check: Mapping[str, Any] | None = None
    grade: Mapping[str, Any] | None = None
    weighted_match: Mapping[str, Any] | None = None
    variants: Mapping[str, TaskVariant] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)
    cases_from: Mapping[str, Any] | None = None  # a datasource: cases come at run time

    @property
    def answer_schema(self) -> Mapping[str, Any] | None:
        """The JSON Schema its answers are held to; None when it has none (``schema:`` a
        boolean holds them to nothing: their schema verdict is not_applicable)."""
        return self.schema if isinstance(self.schema, Mapping) else None

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Task:
        check = as_type(raw.get("check"), dict, None)
        variants = {
            name: TaskVariant(
                prompt_value(spec.get("prompt")), as_type(spec.get("system"), str, None)
            )
            for name, spec in as_type(raw.get("variants"), dict, {}).items()
            if isinstance(spec, dict)
        }
        schema = raw.get("schema")
        return cls(
            id=as_type(raw.get("id"), str, ""),
            prompt=prompt_value(raw.get("prompt")) or "",
            cases=tuple(Case.from_dict(case, check) for case in dict_items(raw.get("cases"))),
            kind=as_type(raw.get("kind"), str, None),
            system=as_type(raw.get("system"), str, None),
            schema=schema if isinstance(schema, dict | bool) else None,
            rubric=as_type(raw.get("rubric"), str, None),
            judge=as_type(raw.get("judge"), bool, True),
            tags=string_items(raw.get("tags")),
            checks=dict_items(raw.get("checks")),
            check=check,
            grade=as_type(raw.get("grade"), dict, None),
            weighted_match=as_type(raw.get("weighted_match"), dict, None),
            variants=variants,
            params={key: raw[key] for key in _PARAM_KEYS if key in raw},
            cases_from=as_type(raw.get("cases_from"), dict, None),
        )

    @property
    def graded(self) -> bool:
        """Some case of the task is graded: the task has ``grade:`` or a case has."""
        return self.grade is not None or any(case.grade is not None for case in self.cases)

    def case_grade(self, case: Case) -> Mapping[str, Any] | None:
        """The grade settings of one case, its own keys over the task's; None when neither
        the task nor the case is graded."""
        if self.grade is None and case.grade is None:
            return None
        return {**(self.grade or {}), **(case.grade or {})}

    def case(self, case_id: str) -> Case:
        """The case with this id; ValueError naming the task if there is none."""
        case = self._cases_by_id.get(case_id)
        if case is None:
            raise ValueError(f"task {self.id!r} has no case {case_id!r}")
        return case

    @cached_property
    def _cases_by_id(self) -> dict[str, Case]:
        """The cases by id, the first of a repeated id (the scoring looks up every answer's
        case: a scan of the cases made a 2,000-case run's scoring quadratic)."""
        index: dict[str, Case] = {}
        for case in self.cases:
            index.setdefault(case.id, case)
        return index


@dataclass(frozen=True)
class Variant:
    """A suite-level prompt variant: system prompt, prompt text and params it overrides."""

    name: str
    system: str | None = None
    prompt: Prompt | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, name: str, raw: Mapping[str, Any]) -> Variant:
        return cls(
            name=name,
            system=as_type(raw.get("system"), str, None),
            prompt=prompt_value(raw.get("prompt")),
            params=as_type(raw.get("params"), dict, {}),
        )


@dataclass(frozen=True)
class SuiteLabel:
    """A preference label written in the suite; baseline and candidate are contestants."""

    task: str
    case: str
    baseline: str
    candidate: str
    prefer: str
    note: str = ""
    labeller: str | None = None
    probability: float | None = None  # the sample queue's chance of asking (None: 1)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> SuiteLabel:
        text = {
            key: as_type(raw.get(key), str, "")
            for key in ("task", "case", "baseline", "candidate", "prefer", "note")
        }
        chance = raw.get("probability")
        return cls(
            **text,
            labeller=as_type(raw.get("labeller"), str, None),
            probability=float(chance) if isinstance(chance, int | float) else None,
        )


# The calibration floor a judge is held to unless its suite says otherwise (evalmine's):
# kappa at least 0.40 over at least 10 labels. Read here and nowhere else.
DEFAULT_MIN_KAPPA = 0.40
DEFAULT_MIN_LABELS = 10


@dataclass(frozen=True)
class Judge:
    """The judge configuration; calibration defaults are evalmine's (0.40, 10, flag)."""

    model: str
    rubric: str = ""
    max_tokens: int | None = None
    temperature: float | None = None
    pairing: str = "baseline"
    min_kappa: float = DEFAULT_MIN_KAPPA
    min_kappa_lower_bound: float | None = None  # the gate reads kappa's interval too
    min_labels: int = DEFAULT_MIN_LABELS
    on_below_floor: str = "flag"
    consistency: int = 0  # extra judgements of a sample of pairs (docs/judging.md)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Judge:
        calibration = as_type(raw.get("calibration"), dict, {})
        return cls(
            model=as_type(raw.get("model"), str, ""),
            rubric=as_type(raw.get("rubric"), str, ""),
            max_tokens=as_type(raw.get("max_tokens"), int, None),
            temperature=as_type(raw.get("temperature"), NUMBER, None),
            pairing=as_type(raw.get("pairing"), str, "baseline"),
            min_kappa=as_type(calibration.get("min_kappa"), NUMBER, DEFAULT_MIN_KAPPA),
            min_kappa_lower_bound=as_type(calibration.get("min_kappa_lower_bound"), NUMBER, None),
            min_labels=as_type(calibration.get("min_labels"), int, DEFAULT_MIN_LABELS),
            on_below_floor=as_type(calibration.get("on_below_floor"), str, "flag"),
            consistency=as_type(raw.get("consistency"), int, 0),
        )


# A suite without a judge still has a calibration floor (its labels are counted against it):
# the defaults above.
NO_JUDGE = Judge(model="")
