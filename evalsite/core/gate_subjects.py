"""Which contestants a suite's per-contestant gate thresholds name (docs/ci.md).

Light on purpose: `evalsite validate` and the planner read it without the report builder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# The gates whose threshold may be a mapping {contestant: value} (suite_schema.py).
PER_CONTESTANT = ("min_win_rate_lower_bound", "min_score", "min_pass_rate")


def unknown_subjects(gate: Mapping[str, Any], contestants: Sequence[str]) -> list[tuple[str, str]]:
    """(gate, contestant) for each per-contestant threshold naming none of `contestants`."""
    return [
        (name, subject)
        for name in PER_CONTESTANT
        if isinstance(gate.get(name), Mapping)
        for subject in gate[name]
        if subject not in contestants
    ]


def unknown_subject_problems(gate: Mapping[str, Any], models: Sequence[str]) -> list[str]:
    """Where the suite's own `models` are run: each gate naming a contestant not among them,
    which would never be evaluated (validate and a run without --models refuse it)."""
    return [
        f"gate.{name}: {subject!r} is not one of the suite's models ({', '.join(models)}): "
        "the gate would never be evaluated"
        for name, subject in unknown_subjects(gate, models)
    ]
