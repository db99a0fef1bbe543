"""Values worked out from a finished run's rows, kept per process.

Once a run is done its pairs, their answers and the judge's figures no longer change, so a
page that needs them on every request (the labelling queue, the live calibration) works them
out once (by its id and when it finished: a run deleted and made again under its id is
another run). An unfinished run's values are worked out every time. Each memo holds a few
runs and starts afresh when full.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from runs.kept import settled
from runs.models import Run


class FinishedRunMemo[T]:
    def __init__(self, size: int = 8):
        self.size = size
        self._values: dict[Hashable, T] = {}

    def get(self, run: Run, compute: Callable[[], T]) -> T:
        if run.status != Run.Status.DONE:
            return compute()
        key = (run.id, run.finished_at)
        if key not in self._values:
            if len(self._values) >= self.size:
                self._values.clear()
            self._values[key] = settled(compute())
        return self._values[key]
