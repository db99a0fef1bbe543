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

:func:`template_problems` checks every text of every case for the base and every variant
by the rules :func:`render_messages` renders with (a case lacking a placeholder's var is
refused by both; Jinja2 texts are rendered), so what validates is what runs. The suite's
``templating`` picks the language: ``{{name}}`` (:mod:`~evalsite.core.templating`, the default)
or Jinja2 (:mod:`~evalsite.core.jinja`).
"""

from __future__ import annotations

import difflib
import re
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalsite.core import jinja
from evalsite.core.case_texts import JINJA2, render_template, task_texts
from evalsite.core.media import KIND_NAMES, KINDS, MediaFile
from evalsite.core.problems import Path, Problem, SourceMap, format_path
from evalsite.core.providers.capabilities import accepts, refusal
from evalsite.core.suite_parts import Case, Prompt
from evalsite.core.templating import (
    NAME,
    VarValue,
    format_value,
    invalid_tokens,
    is_tag,
    placeholders,
)

if TYPE_CHECKING:
    from evalsite.core.jinja_budget import Allowance
    from evalsite.core.suites import Contestant, Suite


@dataclass(frozen=True)
class Piece:
    """One message template: its role, its content (a text, or a tuple of parts as written:
    ``{text: …}``, ``{image: NAME}``…) and the key path it was written at."""

    role: str
    content: str | tuple[Mapping[str, Any], ...]
    path: Path

    def texts(self) -> list[tuple[Path, str]]:
        """(path, template) of each text this message renders."""
        if isinstance(self.content, str):
            return [(self.path, self.content)]
        return [
            ((*self.path, k, "text"), part["text"])
            for k, part in enumerate(self.content)
            if isinstance(part.get("text"), str)
        ]

    def media(self) -> list[tuple[Path, str, str]]:
        """(path, kind, file name) of each media part of this message."""
        if isinstance(self.content, str):
            return []
        return [
            ((*self.path, k, kind), kind, file_name(value))
            for k, part in enumerate(self.content)
            for kind, value in part.items()
            if kind in KINDS and isinstance(value, str)
        ]


_FILE_REF = re.compile(r"\{\{\s*files\.(" + NAME + r")\s*\}\}|(" + NAME + r")")


def file_name(value: str) -> str:
    """The case file a media part names: ``photo``, or ``{{ files.photo }}`` as evaling
    writes it."""
    match = _FILE_REF.fullmatch(value.strip())
    if match is None:
        return value.strip()
    return match.group(1) or match.group(2)


@dataclass(frozen=True)
class _Layer:
    prompt: Prompt | None
    system: str | None
    path: Path


def render_messages(
    suite: Suite, task_id: str, case_id: str, contestant: Contestant | None = None
) -> list[dict[str, Any]]:
    """``[{role, content}, …]`` for one case, system message first when there is one.

    ValueError for an unknown task, case or variant; TemplateError cannot happen for a
    suite that validated.
    """
    index = _task_index(suite, task_id)
    case = suite.tasks[index].case(case_id)
    variant = contestant.variant if contestant is not None else None
    return case_messages(suite, variant_pieces(suite, index, variant), case)


def variant_pieces(suite: Suite, index: int, variant: str | None) -> list[Piece]:
    """:func:`message_pieces`, after a ValueError for a variant the suite does not declare:
    what every case of the task renders for that variant (:func:`case_messages`)."""
    if variant is not None:
        suite.variant(variant)
    return message_pieces(suite, index, variant)


def case_messages(suite: Suite, pieces: list[Piece], case: Case) -> list[dict[str, Any]]:
    """The messages `pieces` (a task's, :func:`variant_pieces`) render for `case`."""
    return [{"role": piece.role, "content": _content(suite, piece, case)} for piece in pieces]


def _content(suite: Suite, piece: Piece, case: Case) -> str | list[dict[str, Any]]:
    """A message's rendered content: a text, or its parts with each file named by the case
    as a reference to that file (a system message's parts are joined into one text)."""
    if isinstance(piece.content, str):
        return render_text(suite, piece.content, case.vars)
    if piece.role == "system":
        return "\n\n".join(render_text(suite, text, case.vars) for _, text in piece.texts())
    parts: list[dict[str, Any]] = []
    for part in piece.content:
        if isinstance(part.get("text"), str):
            parts.append({"type": "text", "text": render_text(suite, part["text"], case.vars)})
            continue
        kind, value = next(iter(part.items()))
        name = file_name(str(value))
        parts.append(suite.media[case.files[name]].part(kind, name))
    return parts


def render_text(suite: Suite, text: str, variables: Mapping[str, VarValue]) -> str:
    """One template rendered in the suite's templating language."""
    return render_template(suite.templating, text, variables)


def request_params(
    suite: Suite, task_id: str, contestant: Contestant | None = None
) -> dict[str, Any]:
    """temperature, max_tokens, timeout_s, top_p, stop, reasoning_effort and thinking for
    one task and contestant, as the suite sets them (what a model is sent of them:
    :func:`~evalsite.core.providers.capabilities.fit`)."""
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
    head = [system] if system is not None and system.content else []
    return head + _turns(prompt_layer)


def _system_of(layer: _Layer) -> Piece | None:
    if layer.system is not None:
        return Piece("system", layer.system, (*layer.path, "system"))
    if _leading_system(layer.prompt):
        assert isinstance(layer.prompt, tuple)
        content = _written_content(layer.prompt[0])
        return Piece("system", content, (*layer.path, "prompt", 0, "content"))
    return None


def _written_content(message: Mapping[str, Any]) -> str | tuple[Mapping[str, Any], ...]:
    content = message.get("content", "")
    if isinstance(content, list | tuple):
        return tuple(part for part in content if isinstance(part, Mapping) and len(part) == 1)
    return str(content)


def _leading_system(prompt: Prompt | None) -> bool:
    return isinstance(prompt, tuple) and bool(prompt) and prompt[0].get("role") == "system"


def _turns(layer: _Layer) -> list[Piece]:
    if isinstance(layer.prompt, str):
        return [Piece("user", layer.prompt, (*layer.path, "prompt"))]
    messages = list(enumerate(layer.prompt or ()))[1 if _leading_system(layer.prompt) else 0 :]
    return [
        Piece(
            str(message.get("role", "user")),
            _written_content(message),
            (*layer.path, "prompt", k, "content"),
        )
        for k, message in messages
    ]


def suite_allowance(suite: Suite) -> Allowance | None:
    """What all the renders of a member's suite may spend together; an operator's file has
    no such bound (each render has its own)."""
    if suite.origin != "upload":
        return None
    from evalsite.core.jinja_budget import Allowance  # with Jinja2: an upload is rendered

    return Allowance()


def template_problems(
    suite: Suite,
    sources: SourceMap,
    coerced: Mapping[Path, str],
    allowance: Allowance | None = None,
) -> tuple[list[Problem], list[Problem]]:
    """Check every prompt of every case for the base and each variant: (errors, warnings).

    Errors: a placeholder with no var (naming task, case, variant and where it is used) and
    malformed ``{{…}}`` tokens and Jinja tags; with ``templating: jinja2``, a text that does
    not compile (once per text) and each case a text fails to render for, with the template's
    line. Warnings: vars no rendered text uses (one per task and var; a check value or judge
    text that reads a var uses it, :mod:`~evalsite.core.case_texts`) and unquoted var values
    that YAML turned into booleans or numbers. ``allowance``: the suite's, when its other
    renders share it (:func:`suite_allowance`).
    """
    errors: list[Problem] = []
    warnings: list[Problem] = []
    allowance = allowance or suite_allowance(suite)
    for index in range(len(suite.tasks)):
        task_errors, task_warnings = _task_problems(suite, index, sources, coerced, allowance)
        errors += task_errors
        warnings += task_warnings
    return errors, warnings


def _task_problems(
    suite: Suite,
    index: int,
    sources: SourceMap,
    coerced: Mapping[Path, str],
    allowance: Allowance | None,
) -> tuple[list[Problem], list[Problem]]:
    task = suite.tasks[index]
    sets = {variant: message_pieces(suite, index, variant) for variant in (None, *suite.variants)}
    texts = {path: text for pieces in sets.values() for piece in pieces
             for path, text in piece.texts()}  # fmt: skip
    jinja2 = suite.templating == JINJA2
    errors = [
        sources.problem(path, message)
        for path, text in texts.items()
        for message in text_errors(text, jinja2)
    ]
    names = jinja.names_used if jinja2 else placeholders
    read = [*texts.values(), *task_texts(suite, index)]
    used = {name for text in read for name in names(text)}
    named = {
        variant: [(path, placeholders(text)) for piece in pieces for path, text in piece.texts()]
        for variant, pieces in sets.items()
    }  # each text's placeholders, read once a task, not once a case
    stopped: set[str] = set()
    unused: dict[str, list[Path]] = defaultdict(list)
    warnings: list[Problem] = []
    for case_index, case in enumerate(task.cases):
        case_path: Path = ("tasks", index, "cases", case_index)
        errors += [
            sources.problem(case_path, f"case '{case.id}' of task '{task.id}' {message}")
            for message in (
                _jinja_failures(case.vars, sets, stopped, allowance)
                if jinja2
                else _render_failures(case.vars, named)
            )
        ]
        errors += _media_problems(suite, task.id, case, case_path, sets, sources)
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


def text_errors(text: str, jinja2: bool) -> list[str]:
    """What is wrong with a text whatever the case: malformed tokens, or Jinja syntax."""
    if not jinja2:
        return [_invalid_message(token) for token in invalid_tokens(text)]
    error = jinja.check(text)
    return [] if error is None else [f"does not compile: {at_line(error)}{error.message}"]


def at_line(error: jinja.JinjaError) -> str:
    return f"template line {error.line}: " if error.line else ""


def var_hint(name: str, variables: Mapping[str, Any]) -> str:
    """`` - the case has var 'x'`` for a var close to ``name``, else nothing."""
    close = difflib.get_close_matches(name, list(variables), n=1, cutoff=0.6)
    return f" - the case has var '{close[0]}'" if close else ""


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
    variables: Mapping[str, Any], named: Mapping[str | None, list[tuple[Path, list[str]]]]
) -> list[str]:
    """One message per placeholder of a variant's texts (`named`: each text's path and
    placeholders) that the case's vars lack: what :func:`~evalsite.core.templating.render`
    would refuse the case for (TemplateError's ``missing``), without rendering each text.

    Malformed tokens are reported once per text by the caller, not once per case.
    """
    where: dict[str, dict[str, None]] = defaultdict(dict)
    variants: dict[str, set[str | None]] = defaultdict(set)
    for variant, texts in named.items():
        for path, names in texts:
            for name in names:
                if name not in variables:
                    where[name][format_path(path)] = None
                    variants[name].add(variant)
    messages = []
    for name, paths in where.items():
        message = f"has no var for {{{{{name}}}}} (used in {', '.join(paths)}"
        if None not in variants[name]:
            message += f"; variant {', '.join(sorted(str(v) for v in variants[name]))}"
        messages.append(message + ")" + var_hint(name, variables))
    return messages


def _jinja_failures(
    variables: Mapping[str, Any],
    sets: Mapping[str | None, list[Piece]],
    stopped: set[str],
    allowance: Allowance | None,
) -> list[str]:
    """Render each piece of each variant with the case's vars; one message per text and error.

    Texts that do not compile are reported once by the caller; a text that ran past the
    rendering bounds (``stopped``) is reported for the first case only, not run again; once
    the suite's renders together have spent its ``allowance``, nothing more is rendered.
    """
    found: dict[tuple[str, str], set[str | None]] = defaultdict(set)
    for variant, pieces in sets.items():
        for path, text in (item for piece in pieces for item in piece.texts()):
            if (allowance and allowance.spent) or text in stopped or jinja.check(text) is not None:
                continue
            try:
                jinja.render(text, variables, allowance=allowance)
            except jinja.JinjaError as error:
                if error.over_budget:
                    stopped.add(text)
                message = at_line(error) + error.message
                if error.undefined:
                    message += var_hint(error.undefined, variables)
                found[(format_path(path), message)].add(variant)
    messages = []
    for (shown, message), variants in found.items():
        if None not in variants:
            shown += f" (variant {', '.join(sorted(str(v) for v in variants))})"
        messages.append(f"fails to render {shown}: {message}")
    return messages


def _media_problems(
    suite: Suite,
    task_id: str,
    case: Case,
    case_path: Path,
    sets: Mapping[str | None, list[Piece]],
    sources: SourceMap,
) -> list[Problem]:
    """Each media part of any variant whose file the case does not attach, or whose file
    is not of the part's kind, named by the case and the part."""
    problems: dict[Path, Problem] = {}
    for path, kind, name in (m for pieces in sets.values() for p in pieces for m in p.media()):
        where = f"case '{case.id}' of task '{task_id}'"
        written = case.files.get(name)
        media = suite.media.get(written) if written is not None else None
        if written is None:
            listed = ", ".join(sorted(case.files)) or "none"
            message = (
                f"{where} attaches no file '{name}' for the {kind} part at "
                f"{format_path(path)} (its files: {listed})"
            )
            problems.setdefault(path, sources.problem((*case_path, "files"), message))
        elif media is not None and media.kind != kind:
            message = (
                f"{where}: file '{name}' ({written}) is {media.media_type}, not "
                f"{KIND_NAMES[kind]}, but the part at {format_path(path)} sends it as {kind}"
            )
            problems.setdefault(path, sources.problem((*case_path, "files", name), message))
    return list(problems.values())


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


def media_unknowns(suite: Suite, contestants: Sequence[str]) -> list[tuple[Path, str]]:
    """(where, warning) for each model the capability table does not know that is sent a
    media part: one per model, at the first part sent to it."""
    found: dict[str, tuple[Path, str]] = {}
    for text, _, at, _, kind, media in _sent_media(suite, contestants):
        model = text.partition("@")[0]
        if model not in found and accepts(model, kind, media.media_type) is None:
            found[model] = (
                at,
                f"evalsite does not know which media {model} takes; it is sent the {kind} "
                f"{media.path} as written, and its provider decides at the first call",
            )
    return list(found.values())


def _sent_media(
    suite: Suite, contestants: Sequence[str]
) -> Iterator[tuple[str, str, Path, Any, str, MediaFile]]:
    """(contestant, case, where, kind, file) for every media part each contestant sends,
    ``where`` being the part's key path."""
    for text in contestants:
        variant = text.partition("@")[2] or None
        for index, task in enumerate(suite.tasks):
            pieces = message_pieces(suite, index, variant)
            for case_index, case in enumerate(task.cases):
                for where, kind, name in (m for piece in pieces for m in piece.media()):
                    media = suite.media.get(case.files.get(name, ""))
                    if media is not None and media.kind == kind:  # else: _media_problems
                        at = ("tasks", index, "cases", case_index, "files", name)
                        yield text, f"case '{case.id}' of task '{task.id}'", at, where, kind, media


def media_refusals(suite: Suite, contestants: Sequence[str]) -> list[tuple[Path, str]]:
    """(where, error) for each media part a contestant's model does not accept: one per
    model, part and file type, naming the first case that sends it and how many do."""
    found: dict[tuple[str, Path, str], list[tuple[Path, str]]] = defaultdict(list)
    for text, label, at, where, kind, media in _sent_media(suite, contestants):
        model = text.partition("@")[0]
        part = f"the {kind} part at {format_path(where)}"
        error = refusal(model, kind, media.media_type, part)
        if error is not None:
            found[(model, where, media.media_type)].append((at, f"{label}: {error}"))
    problems = []
    for cases in found.values():
        path, message = cases[0]
        more = f" ({len(cases) - 1} more case(s) send the same)" if len(cases) > 1 else ""
        problems.append((path, message + more))
    return problems
