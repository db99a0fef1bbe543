"""The pure core reads no environment variable of evalsite's (or Django's) as it is imported.

A setting read at import time is frozen for the life of the process: a long-lived process
(the test launcher, tests/helpers/launcher.py, which imports the core once and forks each
`evalsite` command from it) would hand every command the value it was started with."""

import json
import subprocess
import sys

from tests.core.test_boundary import CORE_MODULES, ROOT

PROBE = """
import importlib, json, os, sys
read = set()

class Watched(type(os.environ)):
    def __getitem__(self, key):
        read.add(key)
        return super().__getitem__(key)

os.environ.__class__ = Watched
for module in json.loads(sys.argv[1]):
    before = set(read)
    importlib.import_module(module)
    for key in sorted(read - before):
        if key.startswith(("EVALSITE", "DJANGO")):
            print(json.dumps([module, key]))
"""


def test_no_core_module_reads_an_evalsite_variable_as_it_is_imported():
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(CORE_MODULES)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    reads = [json.loads(line) for line in done.stdout.splitlines()]
    assert reads == [], f"read at import (module, variable): {reads}"
