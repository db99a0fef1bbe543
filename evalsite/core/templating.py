"""Prompt templating: exactly ``{{name}}``, substituted once.

Rules (the whole language):

- A placeholder is ``{{`` + optional spaces + a name + optional spaces + ``}}`` on one line;
  a name is a letter or ``_`` followed by letters, digits, ``_`` or ``-``.
- Any other ``{{ … }}`` on one line (``{{ x | upper }}``, ``{{a.b}}``, ``{{}}``) is an error:
  there are no expressions and no filters. Literal ``{{x}}`` text reaches a prompt through a
  var, because substituted values are never expanded again.
- A Jinja tag or comment on one line (``{% if vip %}``, ``{# note #}``) is an error too, not
  text sent as written: a suite that wants tags says ``templating: jinja2``
  (:mod:`~evalsite.core.jinja`). Literal ``{%`` text reaches a prompt through a var.
- Values are inserted as they are: never escaped. Null renders as "", booleans as ``true`` /
  ``false``, numbers as Python writes them (``1.1``, ``1000``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

VarValue = str | int | float | bool | None

NAME = r"[A-Za-z_][A-Za-z0-9_-]*"
_NAME = re.compile(NAME)
_TOKEN = re.compile(r"\{\{([^{}\n]*)\}\}")
_TAG = re.compile(r"\{%[^\n]*?%\}|\{#[^\n]*?#\}")


class TemplateError(Exception):
    """A template could not render: placeholders with no value, or malformed tokens."""

    def __init__(self, missing: tuple[str, ...] = (), invalid: tuple[str, ...] = ()) -> None:
        self.missing = missing
        self.invalid = invalid
        parts = [f"no value for {{{{{name}}}}}" for name in missing]
        parts += [f"{token!r} is not a placeholder" for token in invalid]
        super().__init__("; ".join(parts))


def placeholders(text: str) -> list[str]:
    """The names of the well-formed placeholders in ``text``, first use first, no repeats."""
    return list(_read(text).names)


def invalid_tokens(text: str) -> list[str]:
    """Every ``{{ … }}`` in ``text`` that is not a placeholder (an expression, a filter…),
    then every Jinja tag or comment."""
    return list(_read(text).invalid)


class _Template:
    """A text read once: its placeholders, its malformed tokens, and its pieces (text,
    name, text, …, text) when it has none of those; every case of a task renders the same
    few texts."""

    __slots__ = ("invalid", "names", "pieces")

    def __init__(self, text: str) -> None:
        names: dict[str, None] = {}
        invalid = []
        for match in _TOKEN.finditer(text):
            name = match.group(1).strip()
            if _NAME.fullmatch(name):
                names[name] = None
            else:
                invalid.append(match.group())
        self.names = tuple(names)
        self.invalid = (*invalid, *(m.group() for m in _TAG.finditer(text)))
        split = _TOKEN.split(text)  # the same matches as finditer: texts between names
        self.pieces = tuple(piece if k % 2 == 0 else piece.strip() for k, piece in enumerate(split))


@functools.lru_cache(maxsize=256)
def _read(text: str) -> _Template:
    return _Template(text)


def is_tag(token: str) -> bool:
    """Whether an invalid token is a Jinja tag or comment (rather than a ``{{ … }}``)."""
    return token.startswith(("{%", "{#"))


def format_value(value: VarValue) -> str:
    """The text a var value renders as."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def render(text: str, variables: Mapping[str, VarValue]) -> str:
    """``text`` with every placeholder replaced by its var, in one pass.

    Raises TemplateError naming every missing var and malformed token; never partial output.
    """
    template = _read(text)
    missing = tuple(name for name in template.names if name not in variables)
    if missing or template.invalid:
        raise TemplateError(missing, template.invalid)
    pieces = template.pieces
    if len(pieces) == 1:
        return text
    rendered = [
        piece if k % 2 == 0 else format_value(variables[piece]) for k, piece in enumerate(pieces)
    ]
    return "".join(rendered)
