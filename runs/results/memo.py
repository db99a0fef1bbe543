"""Values worked out from a finished run's rows, kept per process.

Once a run is done its pairs, their answers and the judge's figures no longer change, so a
page that needs them on every request (the labelling queue, the live calibration) works them
out once (by its id and when it finished: a run deleted and made again under its id is
another run). An unfinished run's values are worked out every time. Each memo holds a few
runs and starts afresh when full.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from runs.kept import Kept
from runs.models import Run


class FinishedRunMemo[T]:
    def __init__(self, size: int = 8):
        self._kept: Kept[tuple[str, dt.datetime | None], T] = Kept(size)

    def get(self, run: Run, compute: Callable[[], T]) -> T:
        if run.status != Run.Status.DONE:
            return compute()
        return self._kept.get((run.id, run.finished_at), compute)
