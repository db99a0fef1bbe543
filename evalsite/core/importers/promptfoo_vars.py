"""A promptfoo test's vars as promptfoo runs them: a var holding a list of texts makes one
test per item (several such vars, one per combination), and a var whose text names another
var of the test (``sentence: 'about {{topic}}'``) has that var's value put in before the
prompt is rendered. evalsite's case vars are inserted as they are, so the import does both.
"""

from __future__ import annotations

import itertools
import math
import re
from typing import Any

from evalsite.core.importers.common import At, Collector

__all__ = ["MAX_COMBINATIONS", "case_combinations", "combinations", "count", "expands", "resolved"]

MAX_COMBINATIONS = 1_000  # the tests one test may expand to in the written suite
# promptfoo's resolveVariables: the first {{name}} of a text, at most five passes
_REFERENCE = re.compile(r"\{\{\s*([A-Za-z0-9_]+)\s*\}\}")  # JavaScript's \w is ASCII
_PASSES = 5


def expands(value: Any) -> bool:
    """promptfoo makes a test per item of a list whose first item is a text; any other
    list is one value."""
    return isinstance(value, list) and bool(value) and isinstance(value[0], str)


def combinations(variables: dict[str, Any]) -> list[dict[str, Any]]:
    """One mapping per combination of the expanding vars' items, in promptfoo's order (the
    first var varies slowest). The caller checks :func:`count` first."""
    keys = list(variables)
    choices = [variables[k] if expands(variables[k]) else [variables[k]] for k in keys]
    return [dict(zip(keys, chosen, strict=True)) for chosen in itertools.product(*choices)]


def count(variables: dict[str, Any]) -> int:
    return math.prod(len(v) for v in variables.values() if expands(v))


def case_combinations(
    variables: dict[str, Any], number: int, at: At, c: Collector
) -> list[dict[str, Any]]:
    """The test's var combinations (promptfoo_vars) of the vars evalsite's case holds, each
    other var listed once; none, listed, when they are more than MAX_COMBINATIONS."""
    for key, value in variables.items():
        if not _holds(value):
            why = (
                "evalsite's vars are text, numbers, true/false or null; a list whose first "
                "item is no text is one value in promptfoo (its templates read the items)"
                if isinstance(value, list)
                else "evalsite's vars are text, numbers, true/false or null"
            )
            c.skip_at(at[1], f"test {number}: var {key}", why, file=at[0])
    held = {key: value for key, value in variables.items() if _holds(value)}
    if count(held) > MAX_COMBINATIONS:
        lists = ", ".join(key for key, value in held.items() if expands(value))
        why = (
            f"its list vars ({lists}) make {count(held):,} tests, more than the "
            f"{MAX_COMBINATIONS:,} the importer writes for one test: split them"
        )
        c.skip_at(at[1], f"test {number}", why, file=at[0])
        return []
    return combinations(held)


def _holds(value: Any) -> bool:
    """Whether an evalsite case var holds ``value`` (a list of texts expands first)."""
    scalar = (str, int, float, bool, type(None))
    return (
        all(isinstance(v, scalar) for v in value) if expands(value) else isinstance(value, scalar)
    )


def resolved(variables: dict[str, Any]) -> dict[str, Any]:
    """``variables`` with references to other vars filled in as promptfoo does: in each
    pass, a text's first ``{{name}}`` naming a var is replaced by that var's value."""
    out = dict(variables)
    for _ in range(_PASSES):
        changed = False
        for key, value in out.items():
            if not isinstance(value, str):
                continue
            match = _REFERENCE.search(value)
            spelled = _spelling(out[match[1]]) if match and match[1] in out else None
            if match is None or spelled is None:
                continue
            out[key] = value.replace(match[0], spelled, 1)
            changed = changed or out[key] != value
        if not changed:
            break
    return out


def _spelling(value: Any) -> str | None:
    """``value`` as JavaScript's String() spells it; None for what evalsite's vars do not
    hold (a list, a mapping), which is left for the import to list."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str | int | float):
        return str(value)
    return None
