"""Validating the check values and judge texts that render with case vars
(:mod:`~evalsite.core.case_texts`): each one, for every case it is used for, through the
renderer and the rules of the prompts (:mod:`~evalsite.core.prompts`), so a suite that
validates never meets a template error while scoring or judging.

Errors, all at once:

- a text with malformed ``{{…}}`` tokens or Jinja tags (the default templating) or Jinja
  that does not compile: once per text, at the text;
- a placeholder naming a var the case does not have: at the case (at the check, for the
  case's own checks), naming the task, the case, the placeholder, the text and a close var;
- with ``templating: jinja2``, a text that fails to render for a case (an undefined name,
  a rendering bound), with the template's line;
- a ``regex`` that, rendered for a case, RE2 cannot compile.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from evalsite.core import jinja
from evalsite.core.case_texts import JINJA2, check_texts, has_template, judge_texts
from evalsite.core.case_texts import render_case_text as render_for_case
from evalsite.core.patterns import pattern_error
from evalsite.core.problems import Path, Problem, SourceMap, format_path
from evalsite.core.prompts import at_line, text_errors, var_hint
from evalsite.core.suite_parts import Case
from evalsite.core.templating import TemplateError, invalid_tokens

if TYPE_CHECKING:
    from evalsite.core.jinja_budget import Allowance
    from evalsite.core.suites import Suite

__all__ = ["case_text_problems"]


def case_text_problems(
    suite: Suite, sources: SourceMap, allowance: Allowance | None = None
) -> list[Problem]:
    """Every check value and judge text rendered for every case that uses it: the errors.
    ``allowance``: what the uploaded suite's renders may still spend together."""
    jinja2 = suite.templating == JINJA2
    errors: list[Problem] = []
    seen: set[Path] = set()
    stopped: set[str] = set()  # Jinja texts that ran past a bound: reported for one case
    for index, task in enumerate(suite.tasks):
        for j, case in enumerate(task.cases):
            case_path: Path = ("tasks", index, "cases", j)
            for path, text, regex in _texts(suite, index, j):
                if not has_template(text):
                    continue
                if path not in seen:
                    seen.add(path)
                    errors += [sources.problem(path, m) for m in text_errors(text, jinja2)]
                where = path if path[: len(case_path)] == case_path else case_path
                errors += [
                    sources.problem(where, f"case '{case.id}' of task '{task.id}' {message}")
                    for message in _failures(suite, path, text, case, regex, stopped, allowance)
                ]
    return errors


def _texts(suite: Suite, index: int, j: int) -> Iterator[tuple[Path, str, bool]]:
    """(key path, text, is a regex) of each check value and judge text of case ``j``."""
    task = suite.tasks[index]
    owned: list[tuple[Path, Mapping[str, Any]]] = [
        (("tasks", index, "checks", k), check) for k, check in enumerate(task.checks)
    ]
    owned += [
        (("tasks", index, "cases", j, "checks", k), check)
        for k, check in enumerate(task.cases[j].checks)
    ]
    for at, check in owned:
        for inside, text, regex in check_texts(check):
            yield (*at, *inside), text, regex
    for at, text in judge_texts(suite, index, j):
        yield at, text, False


def _failures(
    suite: Suite,
    path: Path,
    text: str,
    case: Case,
    regex: bool,
    stopped: set[str],
    allowance: Allowance | None,
) -> list[str]:
    """Why ``text`` does not render (or compile, as a regex) for ``case``; malformed texts
    are reported once by the caller and not rendered."""
    shown = format_path(path)
    if suite.templating == JINJA2:
        if (allowance and allowance.spent) or text in stopped or jinja.check(text) is not None:
            return []
    elif invalid_tokens(text):
        return []
    try:
        rendered = render_for_case(
            suite.templating, text, case.vars, regex=regex, allowance=allowance
        )
    except TemplateError as error:
        return [
            f"has no var for {{{{{name}}}}} (used in {shown}){var_hint(name, case.vars)}"
            for name in error.missing
        ]
    except jinja.JinjaError as error:
        if error.over_budget:
            stopped.add(text)
        hint = var_hint(error.undefined, case.vars) if error.undefined else ""
        return [f"fails to render {shown}: {at_line(error)}{error.message}{hint}"]
    reason = pattern_error(rendered) if regex else None
    return [f"gives {shown} a regex RE2 cannot use: {reason}"] if reason else []
