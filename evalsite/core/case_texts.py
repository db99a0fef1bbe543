"""Case vars in check values and judge texts (docs/checks.md#case-vars-in-checks-and-rubrics).

A suite's prompts render for each case (:mod:`~evalsite.core.prompts`); so do these texts,
with the same renderer, :func:`render_template` (the suite's ``templating``: ``{{name}}``, or
Jinja2 sandboxed and bounded by :mod:`~evalsite.core.jinja`), which the prompts use too:

- **check values** (:func:`check_texts`): the text of ``equals``, ``contains``,
  ``not_contains``, ``regex`` and ``exact_match``, each text of ``one_of``, and a text
  ``json_path.equals`` (not with ``compare: json_spelling``: that value is a JSON spelling).
  Never a check's kind or options, ``json_path.path``, a ``python`` reference, a number, or an
  execution check (``check: {setup, run}``);
- **judge texts** (:func:`judge_texts`): ``judge.rubric`` and a task's ``rubric`` for its
  pairs; for a graded case, the grade's rubric (``grade.rubric``, else the task's
  ``rubric``, else the judge's) and the case's ``grade.criteria`` and ``grade.reference``.

A text with no ``{{``, ``{%`` or ``{#`` is used exactly as written, never rendered, so a
suite without placeholders in these texts scores and judges as it always did. In a
``regex``, each var is inserted as literal text (escaped for RE2: a var ``1.5`` matches
"1.5", never "105"); booleans and null, which need no escaping, stay values for Jinja's
``{% if %}``. Validation renders every such text for every case that uses it
(:mod:`~evalsite.core.case_text_rules`). At run time a text that cannot render (only a
version stored before these rules) fails its check with the reason; a judge text is then
sent as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from evalsite.core import jinja
from evalsite.core.patterns import literal
from evalsite.core.problems import Path
from evalsite.core.suite_parts import Case, Task
from evalsite.core.templating import TemplateError, VarValue, format_value, render

if TYPE_CHECKING:
    from evalsite.core.jinja_budget import Allowance
    from evalsite.core.suites import Suite

__all__ = [
    "JINJA2", "RENDERED_KINDS", "check_texts", "has_template", "judge_text", "judge_texts",
    "render_template", "rendered_check", "task_texts",
]  # fmt: skip

JINJA2 = "jinja2"
RENDERED_KINDS = ("equals", "contains", "not_contains", "regex", "exact_match")
_MARKER = re.compile(r"\{[{%#]")
RenderError = (TemplateError, jinja.JinjaError)


def render_template(
    templating: str,
    text: str,
    variables: Mapping[str, VarValue],
    *,
    allowance: Allowance | None = None,
) -> str:
    """One template rendered in a suite's templating language (``jinja2`` or the default
    ``{{name}}``): TemplateError or JinjaError when it cannot be."""
    if templating == JINJA2:
        return jinja.render(text, variables, allowance=allowance)
    return render(text, variables)


def has_template(text: str) -> bool:
    """Whether ``text`` holds anything a template language reads (``{{``, ``{%``, ``{#``)."""
    return _MARKER.search(text) is not None


def render_case_text(
    templating: str,
    text: str,
    variables: Mapping[str, VarValue],
    *,
    regex: bool = False,
    allowance: Allowance | None = None,
) -> str:
    """``text`` rendered with a case's vars, or as written when it holds no template; in a
    ``regex`` each text or number var is its RE2-escaped text."""
    if not has_template(text):
        return text
    if regex:
        variables = {name: _escaped(value) for name, value in variables.items()}
    return render_template(templating, text, variables, allowance=allowance)


def _escaped(value: VarValue) -> VarValue:
    return value if value is None or isinstance(value, bool) else literal(format_value(value))


def check_texts(check: Mapping[str, Any]) -> Iterator[tuple[Path, str, bool]]:
    """(key path inside the check, text, whether it is a regex) of each value of ``check``
    that renders with a case's vars."""
    for kind in RENDERED_KINDS:
        if isinstance(check.get(kind), str):
            yield (kind,), check[kind], kind == "regex"
    options = check.get("one_of")
    if isinstance(options, list | tuple):
        for k, option in enumerate(options):
            if isinstance(option, str):
                yield ("one_of", k), option, False
    spec = check.get("json_path")
    if (
        isinstance(spec, Mapping)
        and spec.get("compare") != "json_spelling"
        and isinstance(spec.get("equals"), str)
    ):
        yield ("json_path", "equals"), spec["equals"], False


def rendered_check(
    check: Mapping[str, Any], variables: Mapping[str, VarValue], templating: str
) -> Mapping[str, Any]:
    """``check`` with every value that renders rendered for a case; ``check`` itself when
    none holds a template. TemplateError or JinjaError when one cannot render."""
    texts = [item for item in check_texts(check) if has_template(item[1])]
    if not texts:
        return check
    out: dict[str, Any] = dict(check)
    for path, text, regex in texts:
        value = render_case_text(templating, text, variables, regex=regex)
        key, *inside = path
        if key == "one_of":
            out["one_of"] = [*out["one_of"]]
            out["one_of"][int(inside[0])] = value
        elif key == "json_path":
            out["json_path"] = {**out["json_path"], "equals": value}
        else:
            out[str(key)] = value
    return out


def judge_texts(suite: Suite, index: int, j: int) -> Iterator[tuple[Path, str]]:
    """(key path, text) of each judge text sent for case ``j`` of task ``index``: the pair
    rubric's parts when the task is judged, the grade's rubric, criteria and reference when
    the case is graded. None without the suite's judge."""
    judge, task = suite.judge, suite.tasks[index]
    case = task.cases[j]
    if judge is None:
        return
    if task.judge:
        yield ("judge", "rubric"), judge.rubric
        yield ("tasks", index, "rubric"), task.rubric or ""
    if task.case_grade(case) is None:
        return
    yield _grade_rubric(suite, task, index)
    own = case.grade or {}
    for key in ("criteria", "reference"):
        if isinstance(own.get(key), str):
            yield ("tasks", index, "cases", j, "grade", key), own[key]


def _grade_rubric(suite: Suite, task: Task, index: int) -> tuple[Path, str]:
    """Where a task's grade rubric comes from: its ``grade.rubric``, else its ``rubric``,
    else the judge's (what a grade call is sent)."""
    own = (task.grade or {}).get("rubric")
    if own:
        return ("tasks", index, "grade", "rubric"), str(own)
    if task.rubric:
        return ("tasks", index, "rubric"), task.rubric
    return ("judge", "rubric"), suite.judge.rubric if suite.judge else ""


def grade_rubric(suite: Suite, task: Task) -> str:
    """The rubric a grade of ``task`` is judged by, as written."""
    return _grade_rubric(suite, task, suite.tasks.index(task))[1]


def task_texts(suite: Suite, index: int) -> list[str]:
    """Every check value and judge text of task ``index`` that holds a template (the
    names they read count as used vars)."""
    task = suite.tasks[index]
    checks = [*task.checks, *(check for case in task.cases for check in case.checks)]
    texts = [text for check in checks for _, text, _ in check_texts(check)]
    texts += [text for j in range(len(task.cases)) for _, text in judge_texts(suite, index, j)]
    return [text for text in dict.fromkeys(texts) if has_template(text)]


def judge_text(suite: Suite, text: str, case: Case) -> str:
    """A rubric, criteria or reference rendered with ``case``'s vars; as written when it
    cannot render (a version stored before validation rendered these texts)."""
    try:
        return render_case_text(suite.templating, text, case.vars)
    except RenderError:
        return text
