"""How fast this machine runs Python: a fixed piece of work, timed, printed beside the figures.

Machines of one kind differ: the same commit's `evalsite validate` took 0.40 s on one and
0.76 s on another, both idle. The targets in seconds (issue 31's `validate`, `--fake`, the
100,000-answer phases) were set on the faster kind; a figure read without this reading may
be the machine's, not the code's. The work is plain Python that imports nothing of the
project (JSON, a regular expression, sorting, dicts, small objects: the kinds of work a run
does), so the reading moves only with the machine and the interpreter, never with our code.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys

# Run in its own interpreter, so nothing of the calling process (its heap, its imports)
# changes it. About 0.3 s of CPU on the slower machine above.
WORK = """
import json, re
from dataclasses import dataclass

@dataclass
class Row:
    key: str
    words: list
    score: float

pattern = re.compile(r"(\\w+)@(\\w+)\\.com")
document = {"cases": [{"id": f"case-{i}", "text": f"user{i}@host{i % 7}.com asks " * 8,
                       "tags": [str(i % 5), "x"], "score": i / 7} for i in range(400)]}
total = 0
for _ in range(30):
    loaded = json.loads(json.dumps(document, sort_keys=True))
    rows = [Row(c["id"], pattern.findall(c["text"]), c["score"]) for c in loaded["cases"]]
    rows.sort(key=lambda row: (-row.score, row.key))
    counts = {}
    for row in rows:
        for _, host in row.words:
            counts[host] = counts.get(host, 0) + 1
    total += len(counts) + sum(len(row.words) for row in rows)
assert total == 30 * (7 + 400 * 8), total
"""


def reference_cpu_s(runs: int = 5) -> float:
    """The median CPU seconds (user and system) of :data:`WORK` in a fresh interpreter."""
    seconds = []
    for _ in range(runs):
        child = subprocess.Popen([sys.executable, "-c", WORK], env=_plain_env())
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            raise RuntimeError(f"the reference work failed (exit {child.returncode})")
        seconds.append(usage.ru_utime + usage.ru_stime)
    return statistics.median(seconds)


def _plain_env() -> dict[str, str]:
    """The environment without what would change the interpreter's own work."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
