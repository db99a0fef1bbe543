"""promptfoo's assertion ``weight`` as evalsite's scorecard.

promptfoo scores a test as the weighted mean of its assertions' scores (a test passes when
every assertion does; ``weight: 0`` makes an assertion a metric that never fails the test).
evalsite's scorecard weighs verdicts: an answer's checks (all of them, as one criterion),
its grade and its schema verdict. So weights translate when each verdict's assertions carry
one weight throughout the config: the scorecard gives each verdict that weight. When the
assertions of one verdict carry different weights, no scorecard says so, and every weight
given is listed as untranslated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalsite.core.importers.common import Collector

__all__ = ["Weighed", "scorecard", "weight_of"]

ORDER = ("grade", "schema", "checks")  # the scorecard's criteria, in this order


@dataclass(frozen=True)
class Weighed:
    """One translated assertion: the verdict it became and its weight (``given`` when the
    config wrote one), where it is for a message."""

    verdict: str
    weight: float
    given: bool
    line: int | None
    file: str
    what: str


def weight_of(assertion: dict[str, Any]) -> tuple[float | None, str]:
    """The assertion's weight (1 when it has none), or None and why it does not translate."""
    weight = assertion.get("weight", 1)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or weight < 0:
        return None, "not a number of 0 or more, as promptfoo's weights are"
    return float(weight), ""


def scorecard(entries: list[Weighed], c: Collector) -> list[dict[str, Any]] | None:
    """The scorecard the weights of ``entries`` are, or None (with a note when weights were
    given but are all alike, or each given weight listed when they cannot be one)."""
    given = [entry for entry in entries if entry.given]
    if not given:
        return None
    weights: dict[str, set[float]] = {}
    for entry in entries:
        weights.setdefault(entry.verdict, set()).add(entry.weight)
    mixed = sorted(verdict for verdict, found in weights.items() if len(found) > 1)
    if mixed:
        for entry in given:
            alike = ", ".join(f"{w:g}" for w in sorted(weights[mixed[0]]))
            why = (
                f"the assertions evalsite reads as its {mixed[0]} carry different weights "
                f"({alike}); evalsite's scorecard weighs an answer's {mixed[0]} as one "
                "criterion, so no scorecard is written"
            )
            c.skip_at(entry.line, f"{entry.what} weight {entry.weight:g}", why, file=entry.file)
        return None
    single = {verdict: found.pop() for verdict, found in weights.items()}
    if len(set(single.values())) == 1:
        c.notes.append(
            "every assertion carries one weight, so evalsite's scores count them alike "
            "as promptfoo's do: no scorecard is needed"
        )
        return None
    c.notes.append(
        "the assertions' weights are the scorecard's: each verdict weighs as its "
        "assertions did; an answer's checks count as one criterion, where promptfoo "
        "weighs each assertion (docs/importing.md)"
    )
    return [
        {"criterion": verdict, "weight": _number(single[verdict]), "scorer": verdict}
        for verdict in ORDER
        if verdict in single
    ]


def _number(weight: float) -> int | float:
    return int(weight) if weight.is_integer() else weight
