"""The base of the statistics' result types: frozen, with a JSON-able ``to_dict()``."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

DIGITS = 6


def jsonable(value: Any, digits: int = DIGITS) -> Any:
    """``value`` as plain JSON: floats rounded to `digits` places (NaN and infinities
    become None), tuples become lists, nested records become dicts."""
    kind = type(value)
    if value is None or kind is str or kind is int or kind is bool:  # most of a report's
        return value  # values (a report of 100,000 answers has about 400,000): as they are
    if kind is list:
        return [jsonable(item, digits) for item in value]
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return round(float(value), digits) if math.isfinite(value) else None
    if isinstance(value, list | tuple):
        return [jsonable(item, digits) for item in value]
    if isinstance(value, dict):
        return {key: jsonable(item, digits) for key, item in value.items()}
    return value


@dataclasses.dataclass(frozen=True)
class Record:
    """A frozen result whose ``to_dict()`` holds only JSON values; None means undefined."""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}
