"""Checks across a suite that a JSON Schema cannot express (SPEC §3, §7).

:func:`rule_problems` returns (errors, warnings) for: duplicate task ids and case ids;
labels naming an unknown task or case, or the same contestant twice; variant names used in
``models``, labels, ``gate`` or ``tasks[].variants`` that the suite does not declare, and a
declared variant named ``base``; messages-list prompts with a misplaced or doubled system
message; task schemas that are not valid JSON Schemas or hold a ``$ref`` that does not
resolve inside the schema or a ``pattern`` RE2 cannot compile; regexes RE2 cannot
compile (:mod:`~evalsite.core.patterns`);
``json_path`` paths outside the supported grammar; ``python:`` checks and ``cases_from:``
datasources in uploaded suites;
execution checks without ``run``; graded tasks or cases without the suite's judge;
``weighted_match`` blocks and their cases' ``expected`` lists; and every template
(:mod:`~evalsite.core.prompts`), check value and judge text rendered with case vars
(:mod:`~evalsite.core.case_text_rules`).
Warnings also name a judge that shares a vendor with a contestant or is one, and a
``judge.max_tokens`` below the floor (:mod:`~evalsite.core.judge_warnings`).

Every check reads the leniently built Suite, skipping parts the schema already refused.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from evalsite.core import judge_warnings
from evalsite.core.case_text_rules import case_text_problems
from evalsite.core.case_texts import has_template
from evalsite.core.json_schemas import task_schema_problems
from evalsite.core.money import MoneyError, parse_cap
from evalsite.core.patterns import pattern_error
from evalsite.core.problems import Path, Problem, SourceMap
from evalsite.core.prompts import suite_allowance, template_problems
from evalsite.core.scoring.evalpin import is_json_scalar
from evalsite.core.scoring.matching import expected_problems, spec_problems
from evalsite.core.suite_parts import Prompt, Task
from evalsite.core.suite_schema import CONTESTANT

if TYPE_CHECKING:
    from evalsite.core.suites import Suite

At = Callable[..., Problem]  # SourceMap.problem: a located Problem for a path

UPLOADED_SOURCE = (
    "cases_from is allowed only in suites loaded from a file (the CLI, the suites directory, "
    "MCP), not in uploaded ones: it runs a program or imports Python on this machine"
)
JSON_PATH = re.compile(r"\$(?:\.[A-Za-z_][A-Za-z0-9_-]*|\[\d+\]|\['[^']*'\]|\[\"[^\"]*\"\])*")


def rule_problems(
    suite: Suite,
    sources: SourceMap,
    coerced: Mapping[Path, str],
    *,
    stripped: bool = False,
    stored: bool = False,
) -> tuple[list[Problem], list[Problem]]:
    """All cross-reference, schema-validity, check and template problems: (errors, warnings).
    A `stripped` suite (a no-look suite as stored) has no case data: what reads it (the
    templates' vars, a weighted match's `expected`) is not checked. A `stored` suite's task
    schemas and regexes are not checked again: at run time a schema that cannot be applied
    is a schema_fail and a regex RE2 cannot compile a failed check."""
    at = sources.problem
    errors = (
        _duplicate_ids(suite, sources) + _variant_problems(suite, at) + _label_problems(suite, at)
    )
    errors += _cap_problems(suite, at)
    for index, task in enumerate(suite.tasks):
        errors += _prompt_problems(task, index, at)
        if not stored:
            errors += _schema_validity(task.schema, ("tasks", index, "schema"), at)
        errors += _check_problems(task, index, suite.origin, at, patterns=not stored)
        if task.cases_from and suite.origin == "upload" and not stored:
            errors.append(at(("tasks", index, "cases_from"), UPLOADED_SOURCE))
        errors += _exec_check_problems(task, index, at)
        errors += _grade_problems(task, index, suite.judge is not None, at)
        errors += [] if stripped else _match_problems(task, index, at)
    for name, spec in suite.variant_specs.items():
        errors += _layer_problems(spec.prompt, spec.system, ("variants", name), at)
    if stripped:
        return errors, _judge_warnings(suite, at)
    allowance = suite_allowance(suite)
    template_errors, warnings = template_problems(suite, sources, coerced, allowance)
    if not stored:  # check values and rubrics were not templates before: stored as written
        template_errors += case_text_problems(suite, sources, allowance)
    return errors + template_errors, warnings + _judge_warnings(suite, at)


def _judge_warnings(suite: Suite, at: At) -> list[Problem]:
    """The judge's self-preference (its vendor, or itself, among the default contestants)
    and a ``max_tokens`` too small for its reply."""
    judge = suite.judge
    if judge is None or not judge.model:
        return []
    shared = (
        judge_warnings.judge_is_contestant_warning(judge.model, suite.models),
        judge_warnings.self_preference_warning(judge.model, suite.models),
    )
    problems = [at(("judge", "model"), text, severity="warning") for text in shared if text]
    if budget := judge_warnings.budget_warning(judge.max_tokens):
        problems.append(at(("judge", "max_tokens"), budget, severity="warning"))
    return problems


def _cap_problems(suite: Suite, at: At) -> list[Problem]:
    """limits.max_cost_usd by the rule and with the words of every other cap."""
    if suite.max_cost_usd is None:
        return []
    try:
        parse_cap(suite.max_cost_usd, what="the cap")
    except MoneyError as error:
        return [at(("limits", "max_cost_usd"), str(error))]
    return []


def _suggest(name: str, known: Iterable[str], what: str, where: str = "") -> str:
    """``unknown task 'x'`` plus a did-you-mean, or the known names when none is close."""
    options = sorted(set(known))
    close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
    message = f"unknown {what} '{name}'{where}"
    if close:
        return f"{message} - did you mean '{close[0]}'?"
    return message + (f"; known: {', '.join(options[:20])}" if options else "")


def _duplicates(
    items: Iterable[tuple[Path, str]], what: str, sources: SourceMap, where: str = ""
) -> list[Problem]:
    """An error at each repeat of a value, naming the line of its first occurrence."""
    first: dict[str, Path] = {}
    problems = []
    for path, value in items:
        if not value:
            continue
        if value in first:
            line = sources.locate(first[value])[1]
            message = f"duplicate {what} '{value}'{where} (first at line {line})"
            problems.append(sources.problem(path, message))
        else:
            first[value] = path
    return problems


def _duplicate_ids(suite: Suite, sources: SourceMap) -> list[Problem]:
    tasks = [(("tasks", i, "id"), task.id) for i, task in enumerate(suite.tasks)]
    problems = _duplicates(tasks, "task id", sources)
    for i, task in enumerate(suite.tasks):
        cases = [(("tasks", i, "cases", j, "id"), case.id) for j, case in enumerate(task.cases)]
        problems += _duplicates(cases, "case id", sources, f" in task '{task.id}'")
    models = [(("models", k), text) for k, text in enumerate(suite.models)]
    return problems + _duplicates(models, "contestant", sources, " in models")


def _variant_problems(suite: Suite, at: At) -> list[Problem]:
    """Variant names used anywhere must be declared under ``variants``; ``base`` is reserved."""
    declared = set(suite.variants)
    problems = (
        [at(("variants", "base"), "'base' is reserved: it means the tasks as written")]
        if "base" in declared
        else []
    )
    used: list[tuple[Path, str]] = [(("models", k), text) for k, text in enumerate(suite.models)]
    for k, label in enumerate(suite.labels):
        used += [(("labels", k, side), getattr(label, side)) for side in ("baseline", "candidate")]
    for gate in ("min_win_rate_lower_bound", "min_score", "min_pass_rate"):
        bounds = suite.gate.get(gate)
        used += [(("gate", gate, key), key) for key in (bounds if isinstance(bounds, dict) else {})]
    for path, text in used:
        variant = text.partition("@")[2] if re.match(CONTESTANT, text) else ""
        if variant and variant != "base" and variant not in declared:
            problems.append(at(path, _suggest(variant, declared, "variant")))
    for i, task in enumerate(suite.tasks):
        for name in task.variants:
            if name not in declared:
                problems.append(
                    at(("tasks", i, "variants", name), _suggest(name, declared, "variant"))
                )
    return problems


def _label_problems(suite: Suite, at: At) -> list[Problem]:
    """Labels must name a task and one of its cases, and two different contestants."""
    tasks = {task.id: task for task in suite.tasks if task.id}
    if not tasks:  # the tasks themselves were refused; "unknown task" would only add noise
        return []
    problems = []
    for k, label in enumerate(suite.labels):
        task = tasks.get(label.task)
        if label.task and task is None:
            problems.append(at(("labels", k, "task"), _suggest(label.task, tasks, "task")))
        elif task is not None and label.case and label.case not in {c.id for c in task.cases}:
            message = _suggest(
                label.case, (c.id for c in task.cases), "case", f" in task '{task.id}'"
            )
            problems.append(at(("labels", k, "case"), message))
        if label.baseline and label.baseline == label.candidate:
            problems.append(
                at(("labels", k, "candidate"), "baseline and candidate are the same contestant")
            )
    return problems


def _prompt_problems(task: Task, index: int, at: At) -> list[Problem]:
    problems = _layer_problems(task.prompt, task.system, ("tasks", index), at)
    for name, own in task.variants.items():
        problems += _layer_problems(own.prompt, own.system, ("tasks", index, "variants", name), at)
    return problems


def _layer_problems(prompt: Prompt | None, system: str | None, path: Path, at: At) -> list[Problem]:
    """A system message may only open a messages list, once, and not beside ``system``."""
    if not isinstance(prompt, tuple) or not prompt:
        return []
    roles = [message.get("role") for message in prompt]
    problems = [
        at((*path, "prompt", k, "role"), "a system message may only be the first message")
        for k, role in enumerate(roles)
        if role == "system" and k > 0
    ]
    if roles[0] == "system" and system is not None:
        problems.append(
            at(
                (*path, "system"),
                "the system prompt is given twice: by 'system' and by the first message",
            )
        )
    problems += [
        at((*path, "prompt", k, "content", j), "a system message takes text parts only")
        for k, message in enumerate(prompt)
        if message.get("role") == "system" and isinstance(message.get("content"), list)
        for j, part in enumerate(message["content"])
        if isinstance(part, dict) and "text" not in part
    ]
    if all(role == "system" for role in roles):
        problems.append(
            at((*path, "prompt"), "a messages prompt needs a user or assistant message")
        )
    return problems


def _schema_validity(schema: Any, path: Path, at: At) -> list[Problem]:
    """A valid schema whose every ``$ref`` resolves inside it (a schema file's lines are its
    own: the file was inlined at ``path``)."""
    if not isinstance(schema, dict | bool):
        return []
    return [at((*path, *where), message) for where, message in task_schema_problems(schema)]


def _check_items(task: Task, index: int) -> Iterable[tuple[Path, Mapping[str, Any]]]:
    for k, check in enumerate(task.checks):
        yield ("tasks", index, "checks", k), check
    for j, case in enumerate(task.cases):
        for k, check in enumerate(case.checks):
            yield ("tasks", index, "cases", j, "checks", k), check


def _check_problems(
    task: Task, index: int, origin: str, at: At, *, patterns: bool = True
) -> list[Problem]:
    """Regexes compile in RE2 (when `patterns`), json_path paths parse, python checks only
    outside uploads."""
    problems = []
    for path, check in _check_items(task, index):
        pattern = check.get("regex")
        # a pattern with placeholders compiles once rendered for each case (case_text_rules)
        written = pattern if isinstance(pattern, str) and not has_template(pattern) else None
        reason = pattern_error(written) if patterns and written is not None else None
        if reason:
            problems.append(at((*path, "regex"), reason))
        json_path = check.get("json_path")
        target = json_path.get("path") if isinstance(json_path, dict) else None
        if isinstance(target, str) and not JSON_PATH.fullmatch(target):
            message = (
                "json_path.path must look like $.a.b[0] or $['key'] (names, indexes, quoted keys)"
            )
            problems.append(at((*path, "json_path", "path"), message))
        if (
            isinstance(json_path, dict)
            and json_path.get("compare") == "json_spelling"
            and not is_json_scalar(json_path.get("equals"))
        ):
            message = (
                "with compare: json_spelling, equals is a text holding one JSON scalar as "
                "spelled, e.g. '1.0', '\"Ana\"', 'true' or 'null'"
            )
            problems.append(at((*path, "json_path", "equals"), message))
        if "python" in check and origin == "upload":
            message = (
                "python checks are allowed only in suites loaded from a file "
                "(CLI or suites directory), not in uploaded ones"
            )
            problems.append(at((*path, "python"), message))
    return problems


def _grade_problems(task: Task, index: int, has_judge: bool, at: At) -> list[Problem]:
    """A graded task or case needs the suite's judge."""
    if has_judge:
        return []
    problems = []
    if task.grade is not None:
        message = "a graded task needs the suite's judge: block (the judge gives the grade)"
        problems.append(at(("tasks", index, "grade"), message))
    message = "a graded case needs the suite's judge: block (the judge gives the grade)"
    problems += [
        at(("tasks", index, "cases", j, "grade"), message)
        for j, case in enumerate(task.cases)
        if case.grade is not None
    ]
    return problems


def _match_problems(task: Task, index: int, at: At) -> list[Problem]:
    """A weighted_match block and its cases' ``expected`` lists (see scoring.matching);
    ``expected`` only on a task with the block."""
    spec = task.weighted_match
    block = ("tasks", index, "weighted_match")
    if spec is None:
        message = "'expected' applies only to a task with a weighted_match: block"
        return [
            at(("tasks", index, "cases", j, "expected"), message)
            for j, case in enumerate(task.cases)
            if case.expected is not None
        ]
    problems = [at((*block, *where), message) for where, message in spec_problems(spec)]
    for j, case in enumerate(task.cases):
        path = ("tasks", index, "cases", j)
        if case.expected is None:
            message = "a case of a weighted_match task needs 'expected' (the expected items)"
            problems.append(at(path, message))
            continue
        problems += [
            at((*path, "expected", *where), message)
            for where, message in expected_problems(case.expected, spec)
        ]
    return problems


def _exec_check_problems(task: Task, index: int, at: At) -> list[Problem]:
    """Every case with an execution check (its own merged over the task's) needs ``run``."""
    lacking = [
        j for j, case in enumerate(task.cases) if case.check is not None and "run" not in case.check
    ]
    if not lacking:
        return []
    message = "an execution check needs 'run' (on the task's check or the case's)"
    if task.check is not None and "run" not in task.check and len(lacking) == len(task.cases):
        return [at(("tasks", index, "check"), message)]
    return [at(("tasks", index, "cases", j, "check"), message) for j in lacking]
