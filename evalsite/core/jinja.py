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
- Bounded by :mod:`~evalsite.core.jinja_budget` (a value's size, steps and work per render,
  and a suite's renders together): ``~``, slices and comparisons are compiled through the
  environment, every operator, call, filter and test is counted, and nothing is computed
  while compiling (no constant folding), so all of it runs inside a render's bounds.
- Nesting: at most :data:`MAX_NESTING` brackets and blocks open at once and
  :data:`MAX_DEPTH` operations inside one another, refused at their line when compiled
  (deeper, Jinja's parser and Python's compiler fail with RecursionError or SyntaxError);
  macros call one another at most :data:`MAX_MACRO_DEPTH` deep while rendering.
- Trailing newlines are kept (a YAML block prompt renders as it does with ``{{name}}``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from evalsite.core.input_limits import MAX_BYTES

if TYPE_CHECKING:
    from evalsite.core.jinja_budget import Allowance
    from evalsite.core.templating import VarValue

# The bounds of one render and of a suite's renders together (evalsite.core.jinja_budget,
# which enforces them, reads them from here).
MAX_CHARS = MAX_BYTES
MAX_STEPS = 1_000_000
MAX_WORK = 20_000_000
MAX_SUITE_STEPS = 25 * MAX_STEPS
MAX_SUITE_WORK = 25 * MAX_WORK
MAX_NESTING = 20  # brackets and blocks open at once (Python nests at most 20 loops)
MAX_DEPTH = 100  # operations inside one another (a + b + … is one inside the next)
MAX_MACRO_DEPTH = 50  # macro calls inside one another while rendering


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


def check(text: str) -> JinjaError | None:
    """The compile error of ``text`` (syntax, a file-reading tag), or None when it compiles."""
    from evalsite.core import jinja_engine  # Jinja2, loaded by the first jinja2 template

    return jinja_engine.check(text)


def names_used(text: str) -> set[str]:
    """The names ``text`` reads from its vars (none for a template that does not compile)."""
    from evalsite.core import jinja_engine

    return jinja_engine.names_used(text)


def render(
    text: str, variables: Mapping[str, VarValue], *, allowance: Allowance | None = None
) -> str:
    """``text`` rendered with ``variables``, within the bounds of :mod:`jinja_budget
    <evalsite.core.jinja_budget>` and what ``allowance`` (a suite's renders together) has
    left; JinjaError (with its template line) otherwise."""
    from evalsite.core import jinja_engine

    return jinja_engine.render(text, variables, allowance=allowance)
