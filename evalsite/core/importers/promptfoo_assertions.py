"""promptfoo's assertions as evalsite's checks, a case's grade, the task's schema or the
judge's rubric, each read through its output transform (promptfoo_transform) and with its
weight recorded for the scorecard (promptfoo_weights); everything else listed with why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from evalsite.core.importers.common import Collector
from evalsite.core.importers.promptfoo_js import javascript_checks
from evalsite.core.importers.promptfoo_providers import grader, provider_text
from evalsite.core.importers.promptfoo_transform import SAME, Transform, compose, parsed_whole
from evalsite.core.importers.promptfoo_transform import apply as transformed
from evalsite.core.importers.promptfoo_transform import read as read_transform
from evalsite.core.importers.promptfoo_weights import Weighed, weight_of

__all__ = ["DEFAULT_GRADER", "Context", "assertions", "other_grader"]

ASSERTION = {"type", "value", "threshold", "provider", "transform", "weight"}
DEFAULT_GRADER = "openai/gpt-4.1"  # promptfoo grades with an OpenAI model by default
NO_GATE = (
    "evalsite's gates have no per-answer {what} threshold (limits.max_cost_usd caps a whole "
    "run's spend; the report shows latency p50)"
)


class Context:
    """What the assertions of every test add to the task and the judge."""

    def __init__(self, data: dict[str, Any], default_assert: Any) -> None:
        self.data = data  # the config, for assertion templates ($ref)
        self.default_assert = default_assert
        self.default_transform = SAME  # defaultTest.options.transform
        self.weighed: list[Weighed] = []  # each translated assertion's verdict and weight
        self._defaults: dict[str, tuple[list[Any], dict[str, Any] | None]] = {}
        self.grader: str | None = None
        self.asked: str | None = None  # the grader the file names, when none translated
        self.graded = False
        self.rubric: str | None = None
        self.schema: Any = None

    def defaults(self, outer: Transform, c: Collector) -> tuple[list[Any], dict[str, Any] | None]:
        """defaultTest's checks and grade under a test's transform ``outer`` (each outer
        transform's once, so each untranslated default assertion is listed once)."""
        if outer.written not in self._defaults:
            where = ("defaultTest", "assert")
            found = assertions(self.default_assert, where, c.file, c, self, None, outer)
            self._defaults[outer.written] = found
        return self._defaults[outer.written]


def other_grader(
    provider: Any, what: str, line: int | None, file: str, c: Collector, context: Context
) -> None:
    """A test's or an assertion's own grading provider: the judge's model when it is the
    same, else listed (evalsite's suite has one judge)."""
    model = grader(provider)
    if model is not None and model == context.grader:
        return
    why = f"evalsite's suite has one judge ({context.grader or DEFAULT_GRADER}); it grades this too"
    c.skip_at(line, f"{what} {provider_text(provider)}", why, file=file)


def assertions(
    value: Any,
    path: tuple[Any, ...],
    file: str,
    c: Collector,
    context: Context,
    line: int | None,
    outer: Transform = SAME,
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The checks and the grade of a list of assertions read through the test's transform
    ``outer``; each assertion's verdict and weight recorded in ``context``."""
    checks: list[dict[str, Any]] = []
    criteria: list[str] = []
    threshold = None
    for index, assertion in enumerate(value if isinstance(value, list) else []):
        where = c.at((*path, index))[1] if path else line
        if isinstance(assertion, dict) and "$ref" in assertion:
            assertion = _template(assertion["$ref"], where, file, c, context)
        if not isinstance(assertion, dict):
            continue
        kind = str(assertion.get("type", ""))
        transform = compose(outer, read_transform(assertion.get("transform")))
        read = _Assertion(kind, assertion, transform, where, file)
        weight = _assertion_keys(read, c, context)
        if weight is None or not _readable(read, c):
            continue
        verdict, mapped = _translated(read, c, context)
        if verdict == "grade":
            criteria.append(_criterion(kind, assertion.get("value")))
            given = assertion.get("threshold")
            if isinstance(given, int | float) and not isinstance(given, bool):
                threshold = given if threshold is None else max(threshold, given)
        checks += mapped
        if verdict is not None:
            given = "weight" in assertion and weight_of(assertion)[0] is not None
            what = f"assertion {kind}"
            context.weighed.append(Weighed(verdict, weight, given, where, file, what))
    grade: dict[str, Any] | None = None
    if criteria:
        grade = {"criteria": _joined(criteria, c)}
        if threshold is not None:
            grade["threshold"] = threshold
    return checks, grade


# promptfoo's model-graded assertions that are a judge's grade of one answer against a
# text: the criteria they become (the value, read as that assertion reads it)
GRADED = {
    "llm-rubric": "{value}",
    "g-eval": "{value}",
    "model-graded-closedqa": "{value}",
    "factuality": "The answer is factually consistent with this reference: {value}",
    "model-graded-factuality": "The answer is factually consistent with this reference: {value}",
}
JOINED = "Every one of these criteria must hold; score the answer by the criterion it meets least:"


def _criterion(kind: str, value: Any) -> str:
    text = "\n".join(str(v) for v in value) if isinstance(value, list) else str(value or "")
    return GRADED[kind].format(value=text.strip())


def _joined(criteria: list[str], c: Collector) -> str:
    """One grade's criteria: the one criterion, or (promptfoo grades each model-graded
    assertion on its own) every one numbered, the judge told each must hold, said once."""
    if len(criteria) == 1:
        return criteria[0]
    note = (
        "several model-graded assertions of a test are one evalsite grade (a case has one): "
        "the judge is told every criterion must hold and to score by the one met least, at "
        "the highest threshold given; promptfoo grades each on its own"
    )
    if note not in c.notes:
        c.notes.append(note)
    return "\n".join([JOINED, *(f"{n}. {text}" for n, text in enumerate(criteria, 1))])


@dataclass(frozen=True)
class _Assertion:
    """One assertion being read: its type, its mapping, the transform its output is read
    through, and where it is (for an untranslated line)."""

    kind: str
    body: dict[str, Any]
    transform: Transform
    line: int | None
    file: str

    def skip(self, c: Collector, what: str, why: str) -> None:
        c.skip_at(self.line, what, why, file=self.file)


def _assertion_keys(a: _Assertion, c: Collector, context: Context) -> float | None:
    """The assertion's weight (1 unless given), its other keys listed or (a grading
    provider) read; None, listed, for a weight-0 assertion, which promptfoo never fails."""
    if a.body.get("provider") is not None:
        other_grader(a.body["provider"], f"{a.kind} provider", a.line, a.file, c, context)
    for key in a.body:
        if key not in ASSERTION:
            a.skip(c, f"{a.kind} {key}", "not translated")
    weight, why = weight_of(a.body)
    if weight is None:
        a.skip(c, f"{a.kind} weight {a.body.get('weight')!r}", why)
        return 1.0
    if weight == 0:
        why = (
            "promptfoo counts a weight-0 assertion as passed whatever the output (a metric "
            "only); every evalsite check decides the verdict, so it is left out"
        )
        a.skip(c, f"assertion {a.kind} (weight 0)", why)
        return None
    return weight


JUDGED = {*GRADED, "select-best"}
JSON_KINDS = {"is-json", "contains-json"}


def _readable(a: _Assertion, c: Collector) -> bool:
    """False, listed, for an assertion evalsite would read without its transform: the
    judge's, and a schema's (evalsite's judge and schema read the answer as it is)."""
    schema = a.kind in JSON_KINDS and isinstance(a.body.get("value"), dict)
    if a.transform.kind == "same" or not (a.kind in JUDGED or schema):
        return True
    if schema and parsed_whole(a.transform):  # the schema reads the parsed answer too
        return True
    why = f"{'the judge' if a.kind in JUDGED else 'the schema'} reads the answer as it is; "
    why += "the assertion goes with its transform"
    a.skip(c, f"assertion {a.kind} transform {a.transform.written}", why)
    return False


def _translated(
    a: _Assertion, c: Collector, context: Context
) -> tuple[str | None, list[dict[str, Any]]]:
    """The verdict an assertion became (grade, schema or checks; None when it became none,
    listed) and its checks, read through its transform."""
    kind, value = a.kind, a.body.get("value")
    if kind in GRADED and value in (None, "", []):
        why = f"{kind} with no rubric text: evalsite's grade needs its criteria"
        a.skip(c, f"assertion {kind}", why)
        return None, []
    if kind in GRADED:
        context.graded = True
        return "grade", []
    if kind == "select-best":
        context.rubric = str(value or "")
        c.notes.append(
            "select-best is the pairwise judge: evalsite compares each "
            "candidate with the baseline (judge.pairing: all for every pair)"
        )
        if "weight" in a.body:
            why = "the pairwise judge ranks answers; it is no verdict a scorecard weighs"
            a.skip(c, "select-best weight", why)
        return None, []
    mapped, why = _check(kind, value, context)
    if mapped is not None and a.transform.kind != "same":
        mapped, why = transformed(a.transform, kind, value, mapped)
        if mapped is None:
            what = f"assertion {kind} transform {a.transform.written}"
            a.skip(c, what, f"{why}; the check goes with its transform")
            return None, []
    if mapped is None:
        a.skip(c, f"assertion {kind}", why)
        return None, []
    schema = kind in JSON_KINDS and isinstance(value, dict)
    return ("schema" if schema else "checks" if mapped else None), mapped


def _template(ref: Any, line: int | None, file: str, c: Collector, context: Context) -> Any:
    """The assertion a ``$ref: '#/assertionTemplates/NAME'`` names in the config, or None
    (listed) when it names none there."""
    found: Any = context.data if isinstance(ref, str) and ref.startswith("#/") else None
    for part in str(ref).removeprefix("#/").split("/") if found is not None else []:
        found = found.get(part) if isinstance(found, dict) else None
    if not isinstance(found, dict) or "$ref" in found:
        why = "names no assertion of this file (only '#/assertionTemplates/NAME' refs resolve)"
        c.skip_at(line, f"assertion $ref {ref}", why, file=file)
        return None
    return found


def _texts(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(item) for item in value]
    return [part.strip() for part in str(value).split(",")] if value is not None else []


def _check(kind: str, value: Any, context: Context) -> tuple[list[Any] | None, str]:
    """The checks for one assertion, or None and why it does not translate."""
    folded = {"case_sensitive": False}
    if kind in {
        "equals",
        "contains",
        "not-contains",
        "icontains",
        "not-icontains",
        "starts-with",
        "regex",
    }:
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            return None, f"{kind} with a non-text value is not translated"
        value = str(value)
    simple = {
        "equals": [{"equals": value}],
        "contains": [{"contains": value}],
        "icontains": [{"contains": value, **folded}],
        "not-contains": [{"not_contains": value}],
        "not-icontains": [{"not_contains": value, **folded}],
        "starts-with": [{"regex": r"\A" + re.escape(str(value))}],
        "regex": [{"regex": value}],
        "contains-any": [{"regex": "|".join(re.escape(t) for t in _texts(value))}],
        "icontains-any": [{"regex": "|".join(re.escape(t) for t in _texts(value)), **folded}],
        "contains-all": [{"contains": t} for t in _texts(value)],
        "icontains-all": [{"contains": t, **folded} for t in _texts(value)],
        "not-contains-any": [{"not_contains": t} for t in _texts(value)],
    }
    if kind in simple:
        return simple[kind], ""
    if kind in {"is-json", "contains-json"}:
        if isinstance(value, dict):
            if context.schema not in (None, value):
                return None, "a second, different schema: evalsite's schema is the task's, one"
            context.schema = value
            return [], ""
        if value is not None:
            return None, "a schema given as a file or text is not translated; write it inline"
        return [{"json_valid": True}], ""
    if kind == "javascript":
        checks = javascript_checks(value)
        if checks is not None:
            return checks, ""
        return None, "evalsite runs no JavaScript: rewrite it as a python check (module:function)"
    if kind == "python":
        return None, (
            "rewrite it as a python check: a module next to the suite with "
            "function(answer, vars) -> bool or (bool, note)"
        )
    if kind in {"cost", "latency"}:
        return None, NO_GATE.format(what=kind)
    return None, "no evalsite check does this"
