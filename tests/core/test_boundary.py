"""The pure core imports nothing from Django: each module is imported in a fresh interpreter."""

import pkgutil
import subprocess
import sys
from pathlib import Path

import evalsite.core

# walk_packages descends into subpackages (evalsite.core.providers and its modules too).
CORE_MODULES = sorted(
    info.name for info in pkgutil.walk_packages(evalsite.core.__path__, prefix="evalsite.core.")
)
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


def test_no_core_module_imports_django():
    root = Path(__file__).resolve().parents[2]
    failures = []
    for module in CORE_MODULES:
        result = subprocess.run(
            [sys.executable, "-c", PROBE.format(module=module)],
            cwd=root,
            capture_output=True,
            text=True,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)},
        )
        if result.returncode != 0:
            failures.append(f"{module}: {result.stderr.strip().splitlines()[-1:]}")
    assert failures == []
