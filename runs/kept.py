"""What a process keeps for good: values worked out once and read by every later request
(a done run's pairs and report parts, a suite version's parse), out of the collector's way.

Python's garbage collector now and then walks every object still alive. With a 100,000-pair
run's pairs and its 10,000-case suite kept, that is about a million objects, and each such
walk took 0.4 to 0.6 s of whichever request set it off: the pages' slowest requests
(docs/performance.md, "Pages on a 100,000-pair run"). Once something is kept, everything
alive is moved where the collector no longer looks (:func:`gc.freeze`). Kept values are
still freed when dropped (by their reference counts); only a cycle of garbage alive at that
moment would stay, and values are kept rarely (once a run or version a process).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Hashable


def settled[T](value: T) -> T:
    """`value`, after moving every object alive, it included, out of the collector's walks.
    Garbage is collected first: what is frozen is never collected again, and a cycle of
    garbage frozen with it stays for good (a finished thread's database connection, held
    open: a process that kept a suite's parse for each run it registered ran PostgreSQL out
    of connections). Only what was made since the last freeze is walked."""
    gc.collect()
    gc.freeze()
    return value


class Kept[K: Hashable, V]:
    """Values worked out once a process, by a key that names what they are worked out from
    (it never changes under the same key); all forgotten when `size` are kept. `settle`:
    moved out of the collector's walks as they are kept (:func:`settled`), for values of
    many objects."""

    def __init__(self, size: int, *, settle: bool = True):
        self.size, self.settle = size, settle
        self._values: dict[K, V] = {}

    def get(self, key: K, compute: Callable[[], V]) -> V:
        if key not in self._values:
            if len(self._values) >= self.size:
                self._values.clear()
            value = compute()
            self._values[key] = settled(value) if self.settle else value
        return self._values[key]

    def __contains__(self, key: K) -> bool:
        return key in self._values

    def clear(self) -> None:
        self._values.clear()
