"""Compiling and rendering ``templating: jinja2`` templates: Jinja2's sandbox, strict and
bounded, as :mod:`evalsite.core.jinja` describes. That module is the one callers import;
it imports this one (and Jinja2) when a template is first checked or rendered, so a process
that reads only ``{{name}}`` suites never loads Jinja2."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from jinja2 import StrictUndefined, TemplateSyntaxError, UndefinedError, meta, nodes, pass_context
from jinja2.compiler import CodeGenerator, Frame, operators
from jinja2.exceptions import SecurityError
from jinja2.parser import Parser
from jinja2.runtime import Macro
from jinja2.sandbox import SandboxedEnvironment

from evalsite.core import jinja_budget as budget
from evalsite.core.jinja import MAX_CHARS, MAX_DEPTH, MAX_MACRO_DEPTH, MAX_NESTING, JinjaError
from evalsite.core.jinja_budget import SOURCE, Allowance, OverBudget
from evalsite.core.templating import VarValue, format_value

_FILE_TAGS = {
    nodes.Include: "include",
    nodes.Import: "import",
    nodes.FromImport: "from",
    nodes.Extends: "extends",
}
_BLOCKS = {"if", "for", "macro", "call", "filter", "with", "block", "autoescape", "trans"}
_UNDEFINED = re.compile(r"'([^']+)' is undefined")
_NESTED = "the template nests too deeply"


class _CodeGenerator(CodeGenerator):
    """Compiles ``~``, slices and the operands of comparisons through the environment, so
    that what they read and build is counted (Jinja compiles them to plain Python)."""

    def visit_Getitem(self, node: nodes.Getitem, frame: Frame) -> None:
        if not isinstance(node.arg, nodes.Slice):
            return super().visit_Getitem(node, frame)
        self.write("environment.sliced(")
        self.visit(node.node, frame)
        self.write(", slice(")
        for part in (node.arg.start, node.arg.stop, node.arg.step):
            if part is None:
                self.write("None")
            else:
                self.visit(part, frame)
            self.write(", ")
        self.write("))")
        return None

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.concatenated((")
        for argument in node.nodes:
            self.visit(argument, frame)
            self.write(", ")
        self.write("))")

    def visit_Compare(self, node: nodes.Compare, frame: Frame) -> None:
        self.write("(environment.measured(")
        self.visit(node.expr, frame)
        self.write(")")
        for operand in node.ops:
            self.visit(operand, frame)
        self.write(")")

    def visit_Operand(self, node: nodes.Operand, frame: Frame) -> None:
        self.write(f" {operators[node.op]} environment.measured(")
        self.visit(node.expr, frame)
        self.write(")")


class _Environment(SandboxedEnvironment):
    code_generator_class = _CodeGenerator
    intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})
    concat = staticmethod(budget.joined)  # what blocks, macros and filter blocks collect
    concatenated = staticmethod(budget.concatenated)

    @staticmethod
    def measured(value: Any) -> Any:
        budget.operation()
        budget.read((value,))
        return value

    def getattr(self, obj: Any, attribute: str) -> Any:
        budget.operation()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        budget.operation()
        return super().getitem(obj, argument)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        budget.operation()
        _check_binop(operator, left, right)
        return budget.built(super().call_binop(context, operator, left, right))

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        budget.operation()
        args = tuple(budget.materialized(arg) for arg in args)
        budget.check_arguments((*args, *kwargs.values()))
        owner = getattr(getattr(__obj, "__wrapped__", __obj), "__self__", None)
        if isinstance(owner, str | list | tuple | dict):  # a method reads the value it is of
            budget.read((owner, *args, *kwargs.values()))
            predict = budget.METHOD_SIZES.get(getattr(__obj, "__name__", ""))
            if predict is not None and isinstance(owner, str):
                budget.fits(predict(owner, *args, **kwargs), f"the {__obj.__name__}")
        with _macro_depth(__obj):
            result = super().call(__context, __obj, *args, **kwargs)
        if isinstance(owner, list | dict):  # append, update…: the value itself grew
            budget.built(owner)
        return budget.built(result)

    @staticmethod
    def sliced(value: Any, part: slice) -> Any:
        budget.operation()
        return budget.built(value[part])


@contextmanager
def _macro_depth(called: Any) -> Iterator[None]:
    """Count macros inside one another: deeper than MAX_MACRO_DEPTH is refused, the same
    wherever it renders (Python's own recursion limit depends on who called the render)."""
    if not isinstance(called, Macro):
        yield
        return
    meter = budget.METER.get()
    meter.macros += 1
    try:
        if meter.macros > MAX_MACRO_DEPTH:
            raise OverBudget(f"macros call one another more than {MAX_MACRO_DEPTH} deep")
        yield
    finally:
        meter.macros -= 1


@pass_context  # so no output is computed while compiling, outside any render's bounds
def _finalize(context: Any, value: Any) -> Any:
    budget.checked(value)
    return format_value(value) if value is None or isinstance(value, bool) else value


def _environment() -> _Environment:
    env = _Environment(
        undefined=StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        finalize=_finalize,
        optimized=False,  # folding constants would run filters while compiling, unbounded
    )
    for name in ("random",):
        env.filters.pop(name)
    env.globals.pop("lipsum")
    env.filters = {name: _guarded(function, name) for name, function in env.filters.items()}
    env.tests = {
        name: _guarded(function, name)  # type: ignore[arg-type]  # jinja2 stubs: builtins.function
        for name, function in env.tests.items()
    }
    return env


def _guarded(function: Callable[..., Any], name: str) -> Callable[..., Any]:
    """A filter or test that counts what it reads and builds, and refuses a result it can
    tell is too big before building it."""
    skip = 2 if hasattr(function, "jinja_pass_arg") else 1  # (context, value, …) or (value, …)
    weight = budget.TEXT_WEIGHT if name in budget.SLOW_TEXT else 1
    reads = name not in budget.CONSTANT_TIME
    per_item = name in budget.PER_ITEM
    predict = budget.FILTER_SIZES.get(name)

    @functools.wraps(function)  # keeps jinja_pass_arg, so context-taking filters still work
    def guarded(*args: Any, **kwargs: Any) -> Any:
        budget.operation()
        args = (*args[: skip - 1], *(budget.materialized(arg) for arg in args[skip - 1 :]))
        budget.check_arguments((*args[skip:], *kwargs.values()))
        if reads:
            budget.read((*args[skip - 1 :], *kwargs.values()), weight)
        if per_item:
            budget.read_items(args[skip - 1])
        if predict is not None:
            budget.fits(predict(*args[skip - 1 :], **kwargs), f"the {name}")
        return budget.built(function(*args, **kwargs))

    return guarded


def _check_binop(operator: str, left: Any, right: Any) -> None:
    """Refuse an operation whose result would be too big, before computing it."""
    if operator == "*":
        for sequence, count in ((left, right), (right, left)):
            if isinstance(sequence, str | list | tuple) and isinstance(count, int):
                budget.fits(budget.size(sequence) * max(count, 0), "the product")
    elif operator == "+" and isinstance(left, str | list | tuple):
        budget.fits(budget.size(left) + budget.size(right), "the sum")
    elif operator == "**" and isinstance(left, int) and isinstance(right, int):
        if right > 0 and abs(left) > 1 and left.bit_length() * right > 4096 * 4:
            raise OverBudget(f"{left} ** {right} is too large a number")
    elif operator == "%" and isinstance(left, str):
        arguments = right if isinstance(right, tuple) else (right,)
        if isinstance(right, dict):
            arguments = tuple(right.values())
        budget.fits(budget.format_size(left, arguments), "the formatted text")


_ENV = _environment()


@contextmanager
def _metered(meter: budget.Meter) -> Iterator[budget.Meter]:
    token = budget.METER.set(meter)
    try:
        yield meter
    finally:
        budget.METER.reset(token)


@functools.lru_cache(maxsize=512)
def _compile(text: str) -> Any:
    tree = _parsed(text)
    for kind, tag in _FILE_TAGS.items():
        for node in tree.find_all(kind):
            message = (
                f"{{% {tag} %}} is not allowed: a suite's templates cannot read other files "
                "(write the text here, or pass it in a var)"
            )
            raise JinjaError(message, node.lineno)
    try:
        with _metered(budget.Meter()):
            return _ENV.from_string(tree)
    except TemplateSyntaxError as error:  # also an unknown filter or test
        raise JinjaError(error.message or "syntax error", error.lineno) from None
    except (RecursionError, SyntaxError) as error:  # what the nesting rules should prevent
        raise JinjaError(f"{_NESTED} ({type(error).__name__})", _deepest_line(error)) from None


def _parsed(text: str) -> nodes.Template:
    """``text``'s syntax tree, once its nesting is within the bounds; JinjaError otherwise."""
    try:
        _check_nesting(text)
        tree = _ENV.parse(text)
    except TemplateSyntaxError as error:
        raise JinjaError(error.message or "syntax error", error.lineno) from None
    except RecursionError as error:  # not a bracket or block: a chain of `not` or `-`
        raise JinjaError(f"{_NESTED}: operators inside one another", _deepest_line(error)) from None
    stack: list[tuple[nodes.Node, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            message = f"{_NESTED}: more than {MAX_DEPTH} operations inside one another"
            raise JinjaError(message, node.lineno)
        stack.extend((child, depth + 1) for child in node.iter_child_nodes())
    return tree


def _check_nesting(text: str) -> None:
    """Refuse more than MAX_NESTING brackets and blocks open at once, at the line of the
    first one too many (Jinja's parser would recurse past Python's limit)."""
    depth, setting = 0, False
    tokens = _ENV.lexer.tokeniter(text, None)
    for line, kind, value in tokens:
        if kind == "block_begin":
            _, _, value = next(tokens, (line, "", ""))
            while value.isspace():
                _, _, value = next(tokens, (line, "", ""))
            depth += value in _BLOCKS
            depth -= value.startswith("end")
            setting = value == "set"
        elif kind == "operator":
            depth += value in "([{"
            depth -= value in ")]}"
            setting = setting and value != "="
        elif kind == "block_end" and setting:
            depth, setting = depth + 1, False  # {% set x %}…{% endset %}
        if depth > MAX_NESTING:
            message = f"{_NESTED}: more than {MAX_NESTING} brackets and blocks open at once"
            raise JinjaError(message, line)


def _deepest_line(error: BaseException) -> int | None:
    """The template line the parser or compiler was at when ``error`` stopped it."""
    line, trace = None, error.__traceback__
    while trace is not None:
        owner = trace.tb_frame.f_locals.get("self")
        node = trace.tb_frame.f_locals.get("node")
        if isinstance(owner, Parser):
            line = owner.stream.current.lineno
        elif isinstance(node, nodes.Node) and node.lineno:
            line = node.lineno
        trace = trace.tb_next
    return line


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
        return set(meta.find_undeclared_variables(_parsed(text)))
    except (JinjaError, TemplateSyntaxError):  # an unknown filter fails only here
        return set()


def render(
    text: str, variables: Mapping[str, VarValue], *, allowance: Allowance | None = None
) -> str:
    """``text`` rendered with ``variables``, within the bounds of :mod:`jinja_budget
    <evalsite.core.jinja_budget>` and what ``allowance`` (a suite's renders together) has
    left; JinjaError (with its template line) otherwise."""
    template = _compile(text)
    meter = budget.Meter(allowance)
    previous = sys.gettrace()
    sys.settrace(meter.on_call)  # counts template lines, so a long loop stops, not hangs
    try:
        with _metered(meter):
            return _joined(template.generate(dict(variables)), meter)
    except Exception as error:
        raise _as_jinja_error(error) from None
    finally:
        sys.settrace(previous)
        if allowance is not None:
            allowance.take(meter)


def _joined(chunks: Iterable[str], meter: budget.Meter) -> str:
    out: list[str] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > MAX_CHARS:
            raise OverBudget(f"the prompt rendered more than {MAX_CHARS:,} characters")
        meter.charge(len(chunk))
        out.append(chunk)
    return "".join(out)


def _as_jinja_error(error: Exception) -> JinjaError:
    line = None
    trace = error.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code.co_filename == SOURCE:
            line = trace.tb_lineno
        trace = trace.tb_next
    if isinstance(error, UndefinedError):
        match = _UNDEFINED.fullmatch(str(error))
        return JinjaError(str(error), line, undefined=match.group(1) if match else None)
    if isinstance(error, OverBudget):
        return JinjaError(str(error), line, over_budget=True)
    if isinstance(error, SecurityError):
        return JinjaError(f"refused by the sandbox: {error}", line)
    if isinstance(error, RecursionError | MemoryError):
        return JinjaError(f"{type(error).__name__}: the template recursed or grew too far", line)
    return JinjaError(f"{type(error).__name__}: {error}", line)
