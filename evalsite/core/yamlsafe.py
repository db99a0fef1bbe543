"""Load YAML from untrusted bytes: bounded, strict, and with a line for every value.

Contract of :func:`load_yaml`:

- the input is bytes, bounded and decoded by :mod:`~evalsite.core.input_limits` (at most
  ``MAX_BYTES``, UTF-8, no NUL; the first bad byte named by line and column);
- only PyYAML's safe loader is used (libyaml's when installed); no Python tags;
- the event stream is checked *before* anything is built: more than ``MAX_NODES`` nodes
  (keys, scalars, lists, maps), nesting deeper than :data:`MAX_DEPTH` and alias expansion
  beyond :data:`MAX_ALIAS_NODES` nodes or :data:`MAX_ALIAS_CHARS` characters are refused, so
  a billion-laughs file or ``[`` × 100,000 costs milliseconds and never recurses deeply, and
  no 5 MB file costs minutes; an alias to its own enclosing node is refused;
- duplicate keys are errors naming both lines; keys must be text;
- a boolean or number YAML cannot build is a problem at its key, found before it is built:
  an integer of more than :data:`~evalsite.core.input_limits.MAX_INT_DIGITS` digits in any
  base (Python's ``int()`` refuses it, ``str()`` of a long hex one fails later, and base 60
  costs quadratic time), or an explicitly tagged one such as ``!!int abc``;
- the result holds JSON-compatible values only (timestamps stay as the text written;
  ``!!binary``, ``!!set``, ``.nan``, ``.inf``, U+0000 and lone surrogates such as
  ``"\\ud800"`` are refused, see :func:`~evalsite.core.input_limits.value_problems`);
- every problem is a :class:`~evalsite.core.problems.Problem`; a syntax error is reported
  with its line and column, never as a traceback. All problems found are raised together in
  one :class:`~evalsite.core.problems.SuiteError`.

The returned :class:`YamlDocument` maps each key path to its 1-based line, so later checks
(schema, cross-references) can name the line of whatever they complain about.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.events import AliasEvent, CollectionEndEvent, CollectionStartEvent, ScalarEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from evalsite.core.input_limits import (
    MAX_BYTES,
    MAX_INT_DIGITS,
    MAX_NODES,
    decode_text,
    int_digits_message,
    nodes_message,
    value_problems,
)
from evalsite.core.problems import Path, Problem, SourceMap, SuiteError, format_path

__all__ = ["MAX_BYTES", "MAX_NODES", "LOADER", "YamlDocument", "load_yaml"]

MAX_DEPTH = 64
MAX_ALIAS_NODES = 100_000
MAX_ALIAS_CHARS = 10_000_000

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_MERGE = "tag:yaml.org,2002:merge"
_COERCING_TAGS = {"tag:yaml.org,2002:bool", _INT, "tag:yaml.org,2002:float"}


@dataclass(frozen=True)
class YamlDocument:
    """Plain data loaded from YAML, with where each part of it came from.

    ``lines`` maps a key path (``("tasks", 0, "id")``) to the line of its key or list item;
    ``()`` is the document's first line. ``coerced`` maps the path of each *plain* (unquoted)
    scalar that YAML turned into a boolean or number to the text as written, e.g. ``NO``.
    """

    data: Any
    lines: Mapping[Path, int]
    coerced: Mapping[Path, str]


def _timestamp_as_text(loader: yaml.SafeLoader, node: ScalarNode) -> str:
    # A date in a prompt var should reach the prompt as written, and stay JSON-compatible.
    return str(node.value)


class PureLoader(yaml.SafeLoader):
    """PyYAML's pure-Python safe loader with timestamps kept as text."""


PureLoader.add_constructor(_TIMESTAMP, _timestamp_as_text)

if hasattr(yaml, "CSafeLoader"):

    class LibyamlLoader(yaml.CSafeLoader):
        """libyaml's safe loader with timestamps kept as text."""

    LibyamlLoader.add_constructor(_TIMESTAMP, _timestamp_as_text)
    LOADER: type = LibyamlLoader
else:  # pragma: no cover - depends on how PyYAML was built
    LOADER = PureLoader


def load_yaml(data: bytes, *, filename: str) -> YamlDocument:
    """Parse one YAML document from ``data``; raise SuiteError with every problem found."""
    text = decode_text(data, filename=filename)
    fatal = _scan_events(text, filename)
    if fatal is not None:
        raise SuiteError([fatal])
    loader = LOADER(text)
    try:
        root = loader.get_single_node()
        lines, coerced, problems = _index(loader, root, filename)
        if problems:
            raise SuiteError(problems)
        value = loader.construct_document(root) if root is not None else None
    except yaml.YAMLError as error:
        raise SuiteError([_yaml_problem(error, filename)]) from None
    finally:
        loader.dispose()
    problems = value_problems(value, SourceMap(filename, lines))
    if problems:
        raise SuiteError(problems)
    return YamlDocument(value, lines, coerced)


def _scan_events(text: str, filename: str) -> Problem | None:
    """Refuse deep nesting and alias bombs from the event stream, before any node is built."""
    budget = _Budget()
    try:
        for event in yaml.parse(text, Loader=LOADER):
            message = budget.feed(event)
            if message:
                mark = event.start_mark
                return Problem(filename, mark.line + 1 if mark else None, "", message)
    except yaml.YAMLError as error:
        return _yaml_problem(error, filename)
    return None


class _Budget:
    """Nesting depth and alias expansion of an event stream, counted as it goes.

    Each anchor remembers the size (nodes, scalar characters) of the node it names; an alias
    adds that size again, which is exactly what expanding it would cost.
    """

    def __init__(self) -> None:
        self.nodes = 0
        self.anchors: dict[str, tuple[int, int]] = {}
        self.open: list[list[Any]] = []  # [anchor, nodes, chars] of each open collection
        self.alias_nodes = self.alias_chars = 0

    def feed(self, event: yaml.Event) -> str | None:
        """Account for one event; a message when a bound is passed."""
        if isinstance(event, CollectionStartEvent | ScalarEvent):
            self.nodes += 1
            if self.nodes > MAX_NODES:
                return nodes_message()
        if isinstance(event, CollectionStartEvent):
            if len(self.open) >= MAX_DEPTH:
                return f"nesting is deeper than {MAX_DEPTH} levels"
            self.open.append([event.anchor, 1, 0])
            return None
        if isinstance(event, AliasEvent):
            return self._alias(str(event.anchor))
        if isinstance(event, CollectionEndEvent):
            anchor, nodes, chars = self.open.pop()
        elif isinstance(event, ScalarEvent):
            anchor, nodes, chars = event.anchor, 1, len(event.value)
        else:
            return None
        if anchor:
            self.anchors[anchor] = (nodes, chars)
        self._grow(nodes, chars)
        return None

    def _alias(self, name: str) -> str | None:
        if any(frame[0] == name for frame in self.open):
            return f"alias *{name} refers to a node that contains it"
        nodes, chars = self.anchors.get(name, (1, 0))  # undefined: the composer reports it
        self.alias_nodes += nodes
        self.alias_chars += chars
        if self.alias_nodes > MAX_ALIAS_NODES or self.alias_chars > MAX_ALIAS_CHARS:
            return (
                f"aliases expand past the limit ({MAX_ALIAS_NODES:,} nodes or "
                f"{MAX_ALIAS_CHARS:,} characters); write the repeated parts out or share less"
            )
        self._grow(nodes, chars)
        return None

    def _grow(self, nodes: int, chars: int) -> None:
        if self.open:
            self.open[-1][1] += nodes
            self.open[-1][2] += chars


def _index(
    loader: Any, root: Node | None, filename: str
) -> tuple[dict[Path, int], dict[Path, str], list[Problem]]:
    """Lines and coerced scalars by path, plus duplicate-key, key-type and scalar problems.

    Merge keys (``<<: *base``) are flattened here, once per node, after the explicit keys
    were checked for duplicates, exactly as the constructor will see them.
    """
    lines: dict[Path, int] = {}
    coerced: dict[Path, str] = {}
    problems: list[Problem] = []
    if root is None:
        return lines, coerced, problems
    lines[()] = root.start_mark.line + 1
    flattened: set[int] = set()
    stack: list[tuple[Path, Node]] = [((), root)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, MappingNode):
            if id(node) not in flattened:
                flattened.add(id(node))
                problems.extend(_key_problems(node, path, filename))
                loader.flatten_mapping(node)
            for key_node, value_node in node.value:
                key = (*path, str(key_node.value))
                lines[key] = key_node.start_mark.line + 1
                stack.append((key, value_node))
        elif isinstance(node, SequenceNode):
            for index, item in enumerate(node.value):
                lines[(*path, index)] = item.start_mark.line + 1
                stack.append(((*path, index), item))
        elif isinstance(node, ScalarNode) and node.tag in _COERCING_TAGS:
            message = _scalar_problem(loader, node)
            if message:
                problems.append(Problem(filename, lines[path], format_path(path), message))
            elif not node.style:  # plain style: None or ''
                coerced[path] = node.value
    return lines, coerced, problems


def _scalar_problem(loader: Any, node: ScalarNode) -> str | None:
    """Why a boolean or number cannot be built, or None once it is (the loader keeps it)."""
    if node.tag == _INT:
        digits = _int_digits(node.value)
        if digits > MAX_INT_DIGITS:
            return int_digits_message(digits)
    try:
        loader.construct_object(node)
    except (ValueError, KeyError, IndexError):  # an explicit tag on other text: `!!int abc`
        kind = node.tag.rsplit(":", 1)[-1]
        return f"{node.value[:40]!r} is not a valid !!{kind}"
    return None


def _int_digits(text: str) -> int:
    """Decimal digits of the integer PyYAML builds from ``text``, counted without building it
    (exact in base 10, an upper bound in bases 2, 8, 16 and 60)."""
    value = text.replace("_", "")
    value = value[1:] if value[:1] in ("+", "-") else value
    if value[:2] in ("0b", "0x"):
        return math.ceil((len(value) - 2) * math.log10(2 if value[1] == "b" else 16))
    if value[:1] == "0":
        return math.ceil(len(value) * math.log10(8))
    if ":" in value:  # base 60: each part after the first is one sexagesimal digit
        parts = value.split(":")
        return max(map(len, parts)) + math.ceil((len(parts) - 1) * math.log10(60))
    return len(value)


def _key_problems(node: MappingNode, path: Path, filename: str) -> list[Problem]:
    """Duplicate keys (naming both lines) and keys that YAML does not read as text."""
    problems = []
    seen: dict[str, int] = {}
    for key_node, _ in node.value:
        line = key_node.start_mark.line + 1
        if key_node.tag == _MERGE:
            continue
        if not isinstance(key_node, ScalarNode) or key_node.tag not in (_STR, _TIMESTAMP):
            problems.append(Problem(filename, line, format_path(path), _key_type_message(key_node)))
            continue
        if key_node.value in seen:
            message = f"duplicate key '{key_node.value}' (lines {seen[key_node.value]} and {line})"
            problems.append(Problem(filename, line, format_path((*path, key_node.value)), message))
        else:
            seen[key_node.value] = line
    return problems


def _key_type_message(key_node: Node) -> str:
    if isinstance(key_node, ScalarNode):
        kind = key_node.tag.rsplit(":", 1)[-1]
        return f"key {key_node.value!r} is read by YAML as {kind}; quote it to use it as a name"
    return "keys must be text, not lists or maps"


def _yaml_problem(error: yaml.YAMLError, filename: str) -> Problem:
    """A syntax error as a Problem with line and column, without PyYAML's snippet."""
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    context = getattr(error, "context", None)
    line = mark.line + 1 if mark is not None else None
    if "maximum nesting depth" in problem:  # libyaml's own bound, met while scanning ahead
        return Problem(filename, line, "", f"nesting is deeper than {MAX_DEPTH} levels")
    if "invalid Unicode character escape" in problem:  # libyaml refuses "\ud800" itself
        problem += "; lone surrogates such as \\ud800 are not characters"
    message = f"YAML syntax error: {problem}"
    message += f" ({context})" if context else ""
    message += f" at column {mark.column + 1}" if mark is not None else ""
    return Problem(filename, line, "", message)
