"""Keeping a value freezes what is alive (runs.kept.settled); garbage in a cycle at that
moment must not be frozen with it, or it is never freed: a finished thread's database
connection stayed open, and a process that kept a suite's parse for each run it
registered ran PostgreSQL out of connections."""

from __future__ import annotations

import gc
import weakref

from runs.kept import Kept


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


def test_a_cycle_of_garbage_alive_when_a_value_is_kept_is_still_freed():
    collecting = gc.isenabled()
    gc.disable()  # no collection of its own between dropping the cycle and keeping
    try:
        node = _Node()
        freed = weakref.ref(node)
        del node
        assert freed() is not None  # garbage, not yet collected

        Kept(4).get("key", lambda: ["a value"])
        gc.collect()

        assert freed() is None
    finally:
        gc.unfreeze()
        if collecting:
            gc.enable()
