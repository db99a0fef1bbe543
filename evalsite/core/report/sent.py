"""What each contestant and the judge was actually sent (the report's Run section): the
parameters of the requests its calls stored, by name and value, each distinct set with the
tasks it went with (a task may set its own)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from evalsite.core.report.document import Cell, Code
from evalsite.core.suite_params import shown

# A stored request's fields that are parameters, and the suite's names for them.
SENT_FIELDS = {
    "max_tokens": "max_tokens",
    "reasoning_effort": "reasoning_effort",
    "stop": "stop",
    "temperature": "temperature",
    "thinking_budget": "thinking.budget_tokens",
    "top_p": "top_p",
}


def sent_sets(rows: Iterable[Sequence[Any]]) -> dict[str, list[dict[str, Any]]]:
    """``{who: [{"params", "tasks"}, …]}`` from rows of (who, task, *values in the order of
    :data:`SENT_FIELDS`); a value that is None or an empty list was not sent."""
    tasks: dict[str, dict[str, tuple[dict[str, Any], set[str]]]] = {}
    for who, task, *values in rows:
        params = {
            name: value
            for name, value in zip(SENT_FIELDS.values(), values, strict=True)
            if value is not None and value != []
        }
        key = repr(sorted(params.items()))
        tasks.setdefault(who, {}).setdefault(key, (params, set()))[1].add(task)
    return {
        who: [{"params": params, "tasks": sorted(names)} for params, names in sets.values()]
        for who, sets in tasks.items()
    }


def sent_items(sent: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[Cell]:
    """One line per contestant (and per distinct set, naming its tasks when they differ)."""
    items: list[Cell] = []
    for who, sets in sent.items():
        for entry in sets:
            params = entry.get("params") or {}
            text = ", ".join(f"{name} {shown(params[name])}" for name in sorted(params))
            tasks = f" for tasks {', '.join(entry.get('tasks') or ())}" if len(sets) > 1 else ""
            items.append(("Sent to ", Code(who), f"{tasks}: ", Code(text or "no parameters")))
    return items
