"""Which messages a contestant gets for a task and case, and checking that all of them render.

Precedence, highest first, for a contestant with variant V (no variant: the task alone):

1. the task's own text for V (``tasks[].variants.V.prompt`` / ``.system``);
2. the suite variant V (``variants.V.prompt`` / ``.system``);
3. the task (``prompt`` / ``system``);
4. for the system prompt only, ``defaults.system``.

The prompt comes from the first layer that sets one, the system prompt likewise,
independently. A messages-list prompt may start with a system message; it counts as that
layer's ``system``. An empty system text means "no system message". Params: ``defaults``,
then the task's overrides, then ``variants.V.params``.

:func:`template_problems` renders every text of every case for the base and every variant
through the same code :func:`render_messages` uses, so what validates is what runs. The suite's
``templating`` picks the language: ``{{name}}`` (:mod:`~evalsite.core.templating`, the default)
or Jinja2 (:mod:`~evalsite.core.jinja`).
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalsite.core import jinja
from evalsite.core.problems import Path, Problem, SourceMap, format_path
from evalsite.core.suite_parts import Prompt
from evalsite.core.templating import (
    TemplateError,
    VarValue,
    format_value,
    invalid_tokens,
    is_tag,
    placeholders,
    render,
)

JINJA2 = "jinja2"

if TYPE_CHECKING:
    from evalsite.core.suites import Contestant, Suite


@dataclass(frozen=True)
class Piece:
    """One message template: its role, its text and the key path it was written at."""

    role: str
    text: str
    path: Path


@dataclass(frozen=True)
class _Layer:
    prompt: Prompt | None
    system: str | None
    path: Path


def render_messages(
    suite: Suite, task_id: str, case_id: str, contestant: Contestant | None = None
) -> list[dict[str, str]]:
    """``[{role, content}, …]`` for one case, system message first when there is one.

    ValueError for an unknown task, case or variant; TemplateError cannot happen for a
    suite that validated.
    """
    index = _task_index(suite, task_id)
    case = suite.tasks[index].case(case_id)
    variant = contestant.variant if contestant is not None else None
    if variant is not None:
        suite.variant(variant)  # ValueError for a variant the suite does not declare
    pieces = message_pieces(suite, index, variant)
    return [
        {"role": piece.role, "content": render_text(suite, piece.text, case.vars)}
        for piece in pieces
    ]


def render_text(suite: Suite, text: str, variables: Mapping[str, VarValue]) -> str:
    """One template rendered in the suite's templating language."""
    if suite.templating == JINJA2:
        return jinja.render(text, variables)
    return render(text, variables)


def request_params(
    suite: Suite, task_id: str, contestant: Contestant | None = None
) -> dict[str, Any]:
    """temperature, max_tokens, timeout_s, top_p and stop for one task and contestant."""
    params = {key: value for key, value in suite.defaults.items() if key != "system"}
    params |= suite.tasks[_task_index(suite, task_id)].params
    if contestant is not None and contestant.variant is not None:
        params |= suite.variant(contestant.variant).params
    return params


def _task_index(suite: Suite, task_id: str) -> int:
    for index, task in enumerate(suite.tasks):
        if task.id == task_id:
            return index
    raise ValueError(f"suite {suite.name!r} has no task {task_id!r}")


def message_pieces(suite: Suite, index: int, variant: str | None) -> list[Piece]:
    """The message templates of task ``index`` for ``variant`` (None: the task as written)."""
    task = suite.tasks[index]
    layers = [_Layer(task.prompt, task.system, ("tasks", index))]
    if variant is not None:
        spec = suite.variant_specs.get(variant)
        if spec is not None:
            layers.insert(0, _Layer(spec.prompt, spec.system, ("variants", variant)))
        own = task.variants.get(variant)
        if own is not None:
            layers.insert(0, _Layer(own.prompt, own.system, ("tasks", index, "variants", variant)))
    system = next((piece for layer in layers if (piece := _system_of(layer))), None)
    if system is None and isinstance(suite.defaults.get("system"), str):
        system = Piece("system", suite.defaults["system"], ("defaults", "system"))
    prompt_layer = next(layer for layer in layers if layer.prompt is not None)
    head = [system] if system is not None and system.text else []
    return head + _turns(prompt_layer)


def _system_of(layer: _Layer) -> Piece | None:
    if layer.system is not None:
        return Piece("system", layer.system, (*layer.path, "system"))
    if _leading_system(layer.prompt):
        assert isinstance(layer.prompt, tuple)
        return Piece(
            "system", str(layer.prompt[0].get("content", "")), (*layer.path, "prompt", 0, "content")
        )
    return None


def _leading_system(prompt: Prompt | None) -> bool:
    return isinstance(prompt, tuple) and bool(prompt) and prompt[0].get("role") == "system"


def _turns(layer: _Layer) -> list[Piece]:
    if isinstance(layer.prompt, str):
        return [Piece("user", layer.prompt, (*layer.path, "prompt"))]
    messages = list(enumerate(layer.prompt or ()))[1 if _leading_system(layer.prompt) else 0 :]
    return [
        Piece(
            str(message.get("role", "user")),
            str(message.get("content", "")),
            (*layer.path, "prompt", k, "content"),
        )
        for k, message in messages
    ]


def template_problems(
    suite: Suite, sources: SourceMap, coerced: Mapping[Path, str]
) -> tuple[list[Problem], list[Problem]]:
    """Render every prompt of every case for the base and each variant: (errors, warnings).

    Errors: a placeholder with no var (naming task, case, variant and where it is used) and
    malformed ``{{…}}`` tokens and Jinja tags; with ``templating: jinja2``, a text that does
    not compile (once per text) and each case a text fails to render for, with the template's
    line. Warnings: vars no rendered text uses (one per task and var) and unquoted var values
    that YAML turned into booleans or numbers.
    """
    errors: list[Problem] = []
    warnings: list[Problem] = []
    for index in range(len(suite.tasks)):
        task_errors, task_warnings = _task_problems(suite, index, sources, coerced)
        errors += task_errors
        warnings += task_warnings
    return errors, warnings


def _task_problems(
    suite: Suite, index: int, sources: SourceMap, coerced: Mapping[Path, str]
) -> tuple[list[Problem], list[Problem]]:
    task = suite.tasks[index]
    sets = {variant: message_pieces(suite, index, variant) for variant in (None, *suite.variants)}
    texts = {piece.path: piece.text for pieces in sets.values() for piece in pieces}
    jinja2 = suite.templating == JINJA2
    errors = [
        sources.problem(path, message)
        for path, text in texts.items()
        for message in _text_errors(text, jinja2)
    ]
    names = jinja.names_used if jinja2 else placeholders
    used = {name for text in texts.values() for name in names(text)}
    stopped: set[str] = set()
    unused: dict[str, list[Path]] = defaultdict(list)
    warnings: list[Problem] = []
    for case_index, case in enumerate(task.cases):
        case_path: Path = ("tasks", index, "cases", case_index)
        errors += [
            sources.problem(case_path, f"case '{case.id}' of task '{task.id}' {message}")
            for message in (
                _jinja_failures(case.vars, sets, stopped)
                if jinja2
                else _render_failures(case.vars, sets)
            )
        ]
        for name in case.vars:
            if name not in used:
                unused[name].append((*case_path, "vars", name))
        warnings += _coercions(case.vars, coerced, sources, case_path)
    for name, paths in unused.items():
        message = (
            f"var '{name}' is used by no placeholder of task '{task.id}' ({len(paths)} case(s))"
        )
        warnings.append(sources.problem(paths[0], message, severity="warning"))
    return errors, warnings


def _text_errors(text: str, jinja2: bool) -> list[str]:
    """What is wrong with a text whatever the case: malformed tokens, or Jinja syntax."""
    if not jinja2:
        return [_invalid_message(token) for token in invalid_tokens(text)]
    error = jinja.check(text)
    return [] if error is None else [f"does not compile: {_at_line(error)}{error.message}"]


def _at_line(error: jinja.JinjaError) -> str:
    return f"template line {error.line}: " if error.line else ""


def _invalid_message(token: str) -> str:
    if is_tag(token):
        return (
            f"{token} is a Jinja tag, and this suite's templating is {{{{name}}}} only: use "
            "`templating: jinja2` for tags, or write it differently (literal text with {% or "
            "{# goes in a var)"
        )
    return (
        f"{token} is not a placeholder: templates allow only {{{{name}}}}, with no expressions "
        "or filters (pass literal braces through a var)"
    )


def _render_failures(
    variables: Mapping[str, Any], sets: Mapping[str | None, list[Piece]]
) -> list[str]:
    """Render each piece of each variant with the case's vars; one message per missing var.

    Malformed tokens are reported once per text by the caller, not once per case.
    """
    where: dict[str, dict[str, None]] = defaultdict(dict)
    variants: dict[str, set[str | None]] = defaultdict(set)
    for variant, pieces in sets.items():
        for piece in pieces:
            try:
                render(piece.text, variables)
            except TemplateError as error:
                for name in error.missing:
                    where[name][format_path(piece.path)] = None
                    variants[name].add(variant)
    messages = []
    for name, paths in where.items():
        message = f"has no var for {{{{{name}}}}} (used in {', '.join(paths)}"
        if None not in variants[name]:
            message += f"; variant {', '.join(sorted(str(v) for v in variants[name]))}"
        close = difflib.get_close_matches(name, list(variables), n=1, cutoff=0.6)
        messages.append(message + ")" + (f" - the case has var '{close[0]}'" if close else ""))
    return messages


def _jinja_failures(
    variables: Mapping[str, Any], sets: Mapping[str | None, list[Piece]], stopped: set[str]
) -> list[str]:
    """Render each piece of each variant with the case's vars; one message per text and error.

    Texts that do not compile are reported once by the caller; a text that ran past the
    rendering bounds (``stopped``) is reported for the first case only, not run again.
    """
    found: dict[tuple[str, str], set[str | None]] = defaultdict(set)
    for variant, pieces in sets.items():
        for piece in pieces:
            if piece.text in stopped or jinja.check(piece.text) is not None:
                continue
            try:
                jinja.render(piece.text, variables)
            except jinja.JinjaError as error:
                if error.over_budget:
                    stopped.add(piece.text)
                message = _at_line(error) + error.message
                close = difflib.get_close_matches(error.undefined or "", list(variables), n=1)
                if error.undefined and close:
                    message += f" - the case has var '{close[0]}'"
                found[(format_path(piece.path), message)].add(variant)
    messages = []
    for (path, message), variants in found.items():
        if None not in variants:
            path += f" (variant {', '.join(sorted(str(v) for v in variants))})"
        messages.append(f"fails to render {path}: {message}")
    return messages


def _coercions(
    variables: Mapping[str, Any], coerced: Mapping[Path, str], sources: SourceMap, case_path: Path
) -> list[Problem]:
    """Warn where an unquoted var value renders differently from how it was written."""
    warnings = []
    for name, value in variables.items():
        path = (*case_path, "vars", name)
        written = coerced.get(path)
        shown = format_value(value)
        if (
            written is None
            or written == shown
            or (isinstance(value, bool) and written.lower() == shown)
        ):
            continue
        message = (
            f"YAML reads {written} as {shown}, so prompts get '{shown}'; "
            f"quote it ('{written}') to keep the text"
        )
        warnings.append(sources.problem(path, message, severity="warning"))
    return warnings
