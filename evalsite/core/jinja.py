"""Prompt templating for suites with ``templating: jinja2``: sandboxed, strict, bounded.

Rules:

- Jinja2's :class:`~jinja2.sandbox.SandboxedEnvironment` with ``StrictUndefined``: a name
  with no var is an error, never an empty string; ``__class__``, ``mro`` and the other
  internals are refused (SecurityError).
- ``autoescape`` off: prompts are not HTML. ``{{ vip }}`` renders null as "" and booleans as
  ``true`` / ``false``, as the default templating does; ``{% if vip %}`` sees the value.
- No loader: ``{% include %}``, ``{% import %}``, ``{% from %}`` and ``{% extends %}`` are
  refused when the template is compiled, so suite text never reads a file.
- ``random`` and ``lipsum`` are removed: a prompt must render the same way every time (the
  cache key is the rendered request).
- Bounded: at most :data:`MAX_STEPS` template lines executed and :data:`MAX_CHARS` characters
  rendered; integer arguments of filters and of str/list methods at most :data:`MAX_INT`;
  ``*``, ``**`` and ``%`` refuse results past the bounds before computing them.
- Trailing newlines are kept (a YAML block prompt renders as it does with ``{{name}}``).
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from types import FrameType
from typing import Any

from jinja2 import StrictUndefined, TemplateSyntaxError, UndefinedError, meta, nodes
from jinja2.exceptions import SecurityError
from jinja2.sandbox import MAX_RANGE, SandboxedEnvironment

from evalsite.core.input_limits import MAX_BYTES
from evalsite.core.templating import VarValue, format_value

MAX_STEPS = 1_000_000
MAX_CHARS = MAX_BYTES
MAX_INT = MAX_RANGE
_SOURCE = "<template>"  # the file name Jinja compiles a string template under
_FILE_TAGS = {
    nodes.Include: "include",
    nodes.Import: "import",
    nodes.FromImport: "from",
    nodes.Extends: "extends",
}
_UNDEFINED = re.compile(r"'([^']+)' is undefined")
# A %-format or str.format field whose width or precision is huge or taken from an argument.
_WIDE_FIELD = re.compile(
    r"%[#0 +\-]*(?:\d{7,}|\*)|%[#0 +\-]*\d*\.(?:\d{7,}|\*)|\{[^{}]*:[^{}]*\d{7,}"
)


class JinjaError(Exception):
    """A template did not compile or render; ``line`` is the template's line (1-based)."""

    def __init__(
        self,
        message: str,
        line: int | None = None,
        *,
        undefined: str | None = None,
        over_budget: bool = False,
    ) -> None:
        self.message = message
        self.line = line
        self.undefined = undefined  # the name StrictUndefined refused, if that was the error
        self.over_budget = over_budget
        super().__init__(f"line {line}: {message}" if line else message)


class _OverBudget(SecurityError):
    """Rendering went past a bound (steps, characters, an argument's size)."""


class _Environment(SandboxedEnvironment):
    intercepted_binops = frozenset({"*", "**", "%"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        _check_binop(operator, left, right)
        return _checked_size(super().call_binop(context, operator, left, right))

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        owner = getattr(getattr(__obj, "__wrapped__", __obj), "__self__", None)
        if isinstance(owner, str | list | tuple):
            _check_arguments((owner, *args, *kwargs.values()))
        return _checked_size(super().call(__context, __obj, *args, **kwargs))


def _finalize(value: Any) -> Any:
    return format_value(value) if value is None or isinstance(value, bool) else value


def _environment() -> _Environment:
    env = _Environment(
        undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True, finalize=_finalize
    )
    for name in ("random",):
        env.filters.pop(name)
    env.globals.pop("lipsum")
    env.filters = {name: _guarded(function) for name, function in env.filters.items()}
    return env


def _guarded(function: Callable[..., Any]) -> Callable[..., Any]:
    """A filter that refuses oversized arguments and results (the filtered value may be big)."""

    @functools.wraps(function)  # keeps jinja_pass_arg, so context-taking filters still work
    def guarded(*args: Any, **kwargs: Any) -> Any:
        skip = 2 if hasattr(function, "jinja_pass_arg") else 1
        _check_arguments((*args[skip:], *kwargs.values()))
        if function.__name__ == "do_format":
            _check_arguments(args[:1])  # the format string itself
        if function.__name__ in ("do_replace", "do_join"):
            _check_expansion(function.__name__, args[skip - 1 :], kwargs)
        return _checked_size(function(*args, **kwargs))

    return guarded


def _check_arguments(values: Iterable[Any]) -> None:
    for value in values:
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
            raise _OverBudget(f"the argument {value} is larger than {MAX_INT:,}")
        if isinstance(value, str) and _WIDE_FIELD.search(value):
            raise _OverBudget(f"the format {value[:60]!r} has a width or precision too large")


def _check_expansion(name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    """replace and join can multiply two var lengths: refuse before computing."""
    if name == "do_replace":
        text, old, new = (str(arg) for arg in (*args, kwargs.get("old"), kwargs.get("new"))[:3])
        grows = (len(text) + 1 if not old else text.count(old)) * len(new)
        if len(text) + grows > MAX_CHARS:
            raise _OverBudget(f"the replace would render more than {MAX_CHARS:,} characters")
    separator = str(args[1] if len(args) > 1 else kwargs.get("d", ""))
    sized = hasattr(args[0], "__len__") if args else False
    if name == "do_join" and sized and len(args[0]) * len(separator) > MAX_CHARS:
        raise _OverBudget(f"the join would render more than {MAX_CHARS:,} characters")


def _check_binop(operator: str, left: Any, right: Any) -> None:
    if operator == "*":
        for sequence, count in ((left, right), (right, left)):
            repeated = isinstance(sequence, str | list | tuple) and isinstance(count, int)
            if repeated and len(sequence) * count > MAX_CHARS:
                raise _OverBudget(f"the product would hold more than {MAX_CHARS:,} items")
    elif operator == "**" and isinstance(left, int) and isinstance(right, int):
        if right > 0 and abs(left) > 1 and left.bit_length() * right > 4096 * 4:
            raise _OverBudget(f"{left} ** {right} is too large a number")
    elif operator == "%" and isinstance(left, str):
        _check_arguments((left, *(right if isinstance(right, tuple) else (right,))))


def _checked_size(value: Any) -> Any:
    if isinstance(value, str | list | tuple) and len(value) > MAX_CHARS:
        raise _OverBudget(f"a value holds more than {MAX_CHARS:,} items")
    return value


_ENV = _environment()


@functools.lru_cache(maxsize=512)
def _compile(text: str) -> Any:
    try:
        tree = _ENV.parse(text)
        for kind, tag in _FILE_TAGS.items():
            for node in tree.find_all(kind):
                message = (
                    f"{{% {tag} %}} is not allowed: a suite's templates cannot read other files "
                    "(write the text here, or pass it in a var)"
                )
                raise JinjaError(message, node.lineno)
        return _ENV.from_string(tree)
    except TemplateSyntaxError as error:  # also an unknown filter or test (an assertion error)
        raise JinjaError(error.message or "syntax error", error.lineno) from None


def check(text: str) -> JinjaError | None:
    """The compile error of ``text`` (syntax, a file-reading tag), or None when it compiles."""
    try:
        _compile(text)
    except JinjaError as error:
        return error
    return None


def names_used(text: str) -> set[str]:
    """The names ``text`` reads from its vars (none for a template that does not compile)."""
    try:
        return set(meta.find_undeclared_variables(_ENV.parse(text)))
    except TemplateSyntaxError:
        return set()


def render(text: str, variables: Mapping[str, VarValue]) -> str:
    """``text`` rendered with ``variables``; JinjaError (with its template line) otherwise."""
    template = _compile(text)
    steps = _Steps()
    previous = sys.gettrace()
    sys.settrace(steps.on_call)  # counts template lines, so a long loop stops, not hangs
    try:
        return _joined(template.generate(dict(variables)))
    except Exception as error:
        raise _as_jinja_error(error) from None
    finally:
        sys.settrace(previous)


def _joined(chunks: Iterable[str]) -> str:
    out: list[str] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > MAX_CHARS:
            raise _OverBudget(f"the prompt rendered more than {MAX_CHARS:,} characters")
        out.append(chunk)
    return "".join(out)


class _Steps:
    """A trace function that raises once the template has executed MAX_STEPS lines."""

    def __init__(self) -> None:
        self.count = 0

    def on_call(self, frame: FrameType, event: str, arg: Any) -> Any:
        return self.on_line if frame.f_code.co_filename == _SOURCE else None

    def on_line(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            self.count += 1
            if self.count > MAX_STEPS:
                raise _OverBudget(
                    f"rendering stopped after {MAX_STEPS:,} steps (a loop that runs too long?)"
                )
        return self.on_line


def _as_jinja_error(error: Exception) -> JinjaError:
    line = None
    trace = error.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code.co_filename == _SOURCE:
            line = trace.tb_lineno
        trace = trace.tb_next
    if isinstance(error, UndefinedError):
        match = _UNDEFINED.fullmatch(str(error))
        return JinjaError(str(error), line, undefined=match.group(1) if match else None)
    if isinstance(error, _OverBudget):
        return JinjaError(str(error), line, over_budget=True)
    if isinstance(error, SecurityError):
        return JinjaError(f"refused by the sandbox: {error}", line)
    if isinstance(error, RecursionError | MemoryError):
        return JinjaError(f"{type(error).__name__}: the template recursed or grew too far", line)
    return JinjaError(f"{type(error).__name__}: {error}", line)
