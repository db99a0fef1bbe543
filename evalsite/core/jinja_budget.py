"""What a Jinja render may spend (:mod:`~evalsite.core.jinja`): one rule per bound.

- :data:`MAX_CHARS`: a value holds at most 5 MiB of characters and items, counted as it
  would print (a list counts its items and, each time it holds one, that item's size); the
  rendered prompt likewise. A result whose size can be known first is refused before it is
  built (``~``, ``+``, ``*``, ``%``, join, replace, format, indent, wordwrap, the text a
  block, macro or filter block collects); any other result after.
- :data:`MAX_STEPS`: template lines one render executes; each turn of a loop is one or more.
- :data:`MAX_WORK`: what one render spends, in units: each character and item its
  operations read and build (every filter, test, method call, comparison, slice, operator,
  ``~`` and collected text), :data:`OP_COST` for each operation (attributes and items too),
  and :data:`INSTRUCTION_COST` for each bytecode instruction its steps run. Filters that
  run Python code per character (:data:`SLOW_TEXT`) count what they read
  :data:`TEXT_WEIGHT` times; filters that call back per item (:data:`PER_ITEM`: map,
  groupby, sort…) count :data:`ITEM_WEIGHT` more per item. So whatever a template does, a
  render stops within about half a second of CPU (measured, docs/suite-format.md).
- :data:`MAX_SUITE_STEPS` / :data:`MAX_SUITE_WORK`: every render of one uploaded suite's
  validation together (an :class:`Allowance`), so a member's suite of many cases is
  bounded as one template is. A suite read from a file (the operator's) has no such bound:
  8,000 cases of a modest template took 332,000,000 units, and each render is bounded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from types import CodeType, FrameType
from typing import Any

from jinja2.exceptions import SecurityError
from jinja2.sandbox import MAX_RANGE
from jinja2.utils import Namespace

# The bounds' values are set in evalsite.core.jinja, which callers read without Jinja2.
from evalsite.core.jinja import MAX_CHARS, MAX_STEPS, MAX_SUITE_STEPS, MAX_SUITE_WORK, MAX_WORK

MAX_INT = MAX_RANGE
# Filters that run Python code per character count each character they read this many times;
# filters that call back into the template per item (an attribute, a filter, a test) count
# each item so many times more.
TEXT_WEIGHT = 100
INSTRUCTION_COST = 1
OP_COST = 300  # an operation runs Python code of its own and of these bounds: ~5 µs traced
ITEM_WEIGHT = 5_000
SLOW_TEXT = frozenset({
    "title", "wordwrap", "urlize", "striptags", "wordcount", "urlencode", "pprint", "tojson",
    "xmlattr",
})  # fmt: skip
PER_ITEM = frozenset({
    "groupby", "map", "select", "reject", "selectattr", "rejectattr", "sort", "unique",
    "dictsort", "min", "max", "sum",
})  # fmt: skip
# Filters and tests that look at no more than a value's type or length: they read nothing.
CONSTANT_TIME = frozenset({
    "length", "count", "first", "last", "default", "d", "defined", "undefined", "none",
    "boolean", "false", "true", "integer", "float", "number", "mapping", "iterable",
    "sequence", "callable", "sameas", "escaped", "odd", "even", "divisibleby", "filter", "test",
})  # fmt: skip
SOURCE = "<template>"  # the file name Jinja compiles a string template under
# A %-format field's width and precision, or a str.format field's spec ("*": from an argument).
_PERCENT_FIELD = re.compile(r"%(?:\([^)]*\))?[#0 +\-]*(\d+|\*)?(?:\.(\d+|\*))?")
_BRACE_SPEC = re.compile(r"\{[^{}]*:([^{}]*)\}")
_TOO_BIG = "{} would hold more than " + f"{MAX_CHARS:,} characters or items"


class OverBudget(SecurityError):
    """Rendering went past a bound (a value's size, steps, work, an argument's size)."""


class Allowance:
    """What the renders of one suite may still spend together (steps and work)."""

    def __init__(self) -> None:
        self.steps = MAX_SUITE_STEPS
        self.work = MAX_SUITE_WORK
        self.spent = False  # a render stopped at this allowance: render no more

    def take(self, meter: Meter) -> None:
        self.steps -= meter.steps
        self.work -= meter.work


class Meter:
    """One render's spending against its bounds, the tighter of its own and the suite's."""

    def __init__(self, allowance: Allowance | None = None) -> None:
        self.allowance = allowance
        self.steps = 0
        self.work = 0
        self.max_steps = min(MAX_STEPS, allowance.steps) if allowance else MAX_STEPS
        self.max_work = min(MAX_WORK, allowance.work) if allowance else MAX_WORK
        self.macros = 0  # macro calls open now (evalsite.core.jinja.MAX_MACRO_DEPTH)
        self._code: CodeType | None = None  # the code the last step ran in, and its lines
        self._lines: dict[int, int] = {}

    def on_call(self, frame: FrameType, event: str, arg: Any) -> Any:
        """A trace function: counts the template's lines (sys.settrace)."""
        return self.on_line if frame.f_code.co_filename == SOURCE else None

    def on_line(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":  # as little Python as can be: this runs for every step
            self.steps += 1
            if frame.f_code is not self._code:
                self._code, self._lines = frame.f_code, _instructions(frame.f_code)
            self.work += self._lines.get(frame.f_lineno, 1)
            if self.steps > self.max_steps:
                self._stop("steps", MAX_STEPS, "steps (a loop that runs too long?)")
            if self.work > self.max_work:
                self.charge(0)
        return self.on_line

    def charge(self, amount: int) -> None:
        self.work += amount
        if self.work > self.max_work:
            what = "units of work (text read or built, operations run; a loop doing too much?)"
            self._stop("work", MAX_WORK, what)

    def _stop(self, kind: str, own: int, what: str) -> None:
        suite = MAX_SUITE_STEPS if kind == "steps" else MAX_SUITE_WORK
        if self.allowance is not None and getattr(self, f"max_{kind}") < own:
            self.allowance.spent = True
            raise OverBudget(
                f"the suite's templates together exceed {suite:,} {what.split(' (')[0]} "
                "(the cases after this one were not rendered)"
            )
        raise OverBudget(f"the template's rendering exceeds {own:,} {what}")


METER: ContextVar[Meter] = ContextVar("jinja_meter")
_LINES: dict[CodeType, dict[int, int]] = {}


def _instructions(code: CodeType) -> dict[int, int]:
    """The bytecode instructions on each line of a compiled template's code: what a step
    costs beyond the operations it counts (a long list literal, a chain of ``and``…)."""
    lines = _LINES.get(code)
    if lines is None:
        if len(_LINES) > 4096:
            _LINES.clear()
        lines = _LINES[code] = {}
        for start, end, line in code.co_lines():
            if line is not None:
                lines[line] = lines.get(line, 0) + (end - start) // 2 * INSTRUCTION_COST
    return lines


def operation() -> None:
    """Charge :data:`OP_COST` for one operation of the template (a filter, test, call,
    operator, attribute, item, comparison or ``~``): what it costs beyond its text."""
    METER.get().charge(OP_COST)


def size(value: Any) -> int:
    """``value``'s size: a string's characters; a container's items, one each, plus the
    size of each text or container it holds (each time it holds it), so about the length
    it prints as. Stops counting a little past :data:`MAX_CHARS`.

    Written with no Python call or generator per item: while a render is traced, each one
    would cost a call of the trace function."""
    if isinstance(value, str):
        return len(value)
    if not isinstance(value, _CONTAINERS):
        return 1
    sizes: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        item, counted = stack.pop()
        key = id(item)
        if key in sizes and not counted:
            continue
        children = _children(item)
        nested = []
        if any(issubclass(kind, _CONTAINERS) for kind in set(map(type, children))):
            nested = [child for child in children if isinstance(child, _CONTAINERS)]
        if nested and not counted:
            sizes[key] = 5  # a container inside itself prints as [...]
            stack.append((item, True))
            stack.extend([(child, False) for child in nested])
            continue
        text = sum(map(len, filter(str.__instancecheck__, children)))
        sizes[key] = 1 + len(children) + text + sum([sizes[id(child)] for child in nested])
        if sizes[key] > MAX_CHARS:
            return sizes[key]
    return sizes[id(value)]


_CONTAINERS = (list, tuple, dict, set, frozenset, Namespace)


def _children(value: Any) -> Any:
    if isinstance(value, Namespace):
        value = object.__getattribute__(value, "_Namespace__attrs")
    if isinstance(value, dict):
        return [*value.keys(), *value.values()]
    return value


def read(values: Iterable[Any], weight: int = 1) -> None:
    """Charge what an operation reads; refuse a value over :data:`MAX_CHARS`."""
    meter = METER.get()
    for value in values:
        amount = size(value)
        if amount > MAX_CHARS:
            raise OverBudget(_TOO_BIG.format("a value"))
        meter.charge(amount * weight)


def read_items(value: Any) -> None:
    """Charge :data:`ITEM_WEIGHT` for each item a per-item filter will call back for."""
    METER.get().charge(ITEM_WEIGHT * (len(value) if hasattr(value, "__len__") else 1))


def fits(amount: int, what: str) -> None:
    """Refuse ``what`` (a result of ``amount`` characters or items) before it is built."""
    if amount > MAX_CHARS:
        raise OverBudget(_TOO_BIG.format(what))


def built[T](value: T) -> T:
    """``value``, charged, once it is checked to be within :data:`MAX_CHARS`."""
    if isinstance(value, (str, *_CONTAINERS)):
        amount = size(value)
        if amount > MAX_CHARS:
            raise OverBudget(_TOO_BIG.format("a value"))
        METER.get().charge(amount)
    return value


def checked(value: Any) -> Any:
    """``value`` unchanged and uncharged, once within :data:`MAX_CHARS` (text to print)."""
    if not isinstance(value, str) and isinstance(value, _CONTAINERS) and size(value) > MAX_CHARS:
        raise OverBudget(_TOO_BIG.format("a value"))
    return value


def joined(parts: Iterable[str]) -> str:
    """The text a block, macro or the prompt collects: refused before joining when over
    :data:`MAX_CHARS` (``environment.concat``)."""
    parts = list(parts)
    fits(sum(len(part) for part in parts), "the text a block or macro collects")
    return built("".join(parts))


def concatenated(values: tuple[Any, ...]) -> str:
    """``a ~ b ~ …``: every value as text, refused before it is built when too long."""
    METER.get().charge(OP_COST * len(values))  # each ~ is an operation
    read(values)
    fits(sum(size(value) for value in values), "the ~ of these values")
    return built("".join(str(value) for value in values))


def materialized(value: Any) -> Any:
    """A lazy sequence (map, select…) as a list, so what is read from it can be counted."""
    if isinstance(value, Iterator):
        return built(list(value))
    return value


def check_arguments(values: Iterable[Any]) -> None:
    """Integer arguments (widths, counts) at most :data:`MAX_INT`."""
    for value in values:
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
            raise OverBudget(f"the argument {value} is larger than {MAX_INT:,}")


def format_size(template: str, arguments: Iterable[Any]) -> int:
    """The most a ``%`` or ``format`` of ``template`` can print: the template, every width,
    and each field as long as the longest argument."""
    longest = max((size(value) for value in arguments), default=0)
    numbers = [n for field in _PERCENT_FIELD.findall(template) for n in field if n]
    numbers += [n for spec in _BRACE_SPEC.findall(template) for n in re.findall(r"\d+", spec)]
    widths = sum(MAX_INT if n == "*" else int(n) if len(n) < 10 else MAX_CHARS for n in numbers)
    fields = template.count("%") + template.count("{")
    if widths > MAX_CHARS:
        raise OverBudget(f"the format {template[:60]!r} has a width or precision too large")
    return len(template) + widths + fields * longest


# --- the size of a result, known before it is built ------------------------------------------
# Each takes the arguments of the filter or method it predicts, under the same names.


def _replace_size(text: Any, old: Any, new: Any, count: Any = None) -> int:
    text, old, new = str(text), str(old), str(new)
    grows = (len(text) + 1 if not old else text.count(old)) * len(new)
    return len(text) + grows


def _join_size(value: Any, d: Any = "", attribute: Any = None) -> int:
    items = value if isinstance(value, list | tuple) else list(value)
    return sum(size(item) for item in items) + max(len(items) - 1, 0) * len(str(d))


def _format_filter_size(value: Any, *args: Any, **kwargs: Any) -> int:
    return format_size(str(value), (*args, *kwargs.values()))


def _indent_size(s: Any, width: Any = 4, first: bool = False, blank: bool = False) -> int:
    text = str(s)
    prefix = width if isinstance(width, int) else len(str(width))
    return len(text) + (text.count("\n") + 1) * prefix


def _wordwrap_size(s: Any, width: int = 79, *args: Any, wrapstring: Any = None, **_: Any) -> int:
    text = str(s)
    wrap = wrapstring if wrapstring is not None else (args[1] if len(args) > 1 else "\n")
    lines = len(text) // max(int(width), 1) + text.count("\n") + 1
    return len(text) + lines * len(str(wrap))


def _center_size(value: Any, width: int = 80) -> int:
    return len(str(value)) + int(width)


def _expandtabs_size(text: str, tabsize: int = 8) -> int:
    return len(text) + text.count("\t") * int(tabsize)


def _translate_size(text: str, table: Any) -> int:
    longest = max((size(v) for v in table.values()), default=1) if isinstance(table, dict) else 1
    return len(text) * max(longest, 1)


def _format_method_size(text: str, *args: Any, **kwargs: Any) -> int:
    return format_size(text, (*args, *kwargs.values()))


def _format_map_size(text: str, mapping: Any) -> int:
    return format_size(text, mapping.values() if isinstance(mapping, dict) else (mapping,))


FILTER_SIZES: dict[str, Callable[..., int]] = {
    "replace": _replace_size,
    "join": _join_size,
    "format": _format_filter_size,
    "indent": _indent_size,
    "wordwrap": _wordwrap_size,
    "center": _center_size,
}
METHOD_SIZES: dict[str, Callable[..., int]] = {
    "replace": _replace_size,
    "join": lambda separator, items: _join_size(items, separator),
    "format": _format_method_size,
    "format_map": _format_map_size,
    "expandtabs": _expandtabs_size,
    "translate": _translate_size,
}
