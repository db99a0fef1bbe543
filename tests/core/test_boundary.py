"""The pure core imports nothing from Django.

One fresh interpreter imports every core module in turn and says which import first brought
Django in; only when one did is each module imported again in an interpreter of its own, so the
failure names every module that imports Django (not only the first). One interpreter for the
passing case, not one a module: the tests' run time (issue 29)."""

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import evalsite.core

ROOT = Path(__file__).resolve().parents[2]

# walk_packages descends into subpackages (evalsite.core.providers and its modules too).
CORE_MODULES = sorted(
    info.name for info in pkgutil.walk_packages(evalsite.core.__path__, prefix="evalsite.core.")
)
ALL_PROBE = """
import importlib, json, sys
leaks = []
for module in json.loads(sys.argv[1]):
    importlib.import_module(module)
    if any(name == "django" or name.startswith("django.") for name in sys.modules):
        leaks.append(module)
        break
print(json.dumps(leaks))
"""
PROBE = """
import importlib, sys
importlib.import_module({module!r})
leaked = sorted(name for name in sys.modules if name == "django" or name.startswith("django."))
sys.exit("imports " + ", ".join(leaked[:5]) if leaked else 0)
"""


def test_the_core_has_the_modules_the_spec_names():
    assert {
        "evalsite.core.pricing",
        "evalsite.core.suites",
        "evalsite.core.yamlsafe",
        "evalsite.core.providers",
        "evalsite.core.providers.anthropic",
        "evalsite.core.providers.fake",
    } <= set(CORE_MODULES)


def _probe(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )


def test_no_core_module_imports_django():
    together = _probe(ALL_PROBE, json.dumps(CORE_MODULES))
    if together.returncode == 0 and json.loads(together.stdout) == []:
        return
    failures = []
    for module in CORE_MODULES:
        result = _probe(PROBE.format(module=module))
        if result.returncode != 0:
            failures.append(f"{module}: {result.stderr.strip().splitlines()[-1:]}")
    assert failures == [], together.stdout + together.stderr
