"""What a run uses only once its answers are in: the judge's pair statistics and the report
(numpy and the report's modules with them: 64 of the 117 ms of `-X importtime` that
importing the run command took).

The engine imports them from here, on first use, rather than at start-up, and a shard that
finds this module not imported yet imports it on a thread of its own once its first calls
are claimed (:meth:`runs.engine.runner.Shard._beside_first_calls`), while the process waits
on the network or on execution checks. Every use goes through this one module, so the two
threads meet only at its import lock: the thread that asks while the other is importing it
waits for it and holds no other import lock meanwhile (two threads entering the same
circular imports at different modules could each wait for the other).
"""

from __future__ import annotations

from evalsite.core.stats.consistency import sample_pairs
from evalsite.core.stats.pairs import pair_score
from runs.results.reporting import write_report

__all__ = ["pair_score", "sample_pairs", "write_report"]
