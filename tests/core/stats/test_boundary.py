"""The statistics run on numpy and the standard library: the reference libraries the tests
check them against (and Django) stay out of the import graph."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import evalsite.core.stats

FORBIDDEN = ("django", "sklearn", "statsmodels", "scipy", "krippendorff")
MODULES = ["evalsite.core.stats"] + [
    info.name
    for info in pkgutil.iter_modules(evalsite.core.stats.__path__, prefix="evalsite.core.stats.")
]
PROBE = """
import importlib, sys
for module in {modules!r}:
    importlib.import_module(module)
leaked = sorted(name for name in sys.modules if name.split(".")[0] in {forbidden!r})
print(" ".join(leaked[:5]))
"""


def test_importing_the_statistics_pulls_in_no_reference_library_or_django():
    root = Path(__file__).resolve().parents[3]
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(modules=MODULES, forbidden=FORBIDDEN)],
        cwd=root,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)},
        check=True,
    )
    assert len(MODULES) > 5
    assert result.stdout.strip() == ""
