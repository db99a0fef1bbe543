"""`make serve` passes PORT= and HOST= from make's command line (never from the environment)
to `evalsite serve`, and installs the mcp extra that `evalsite mcp` needs. Read with
`make -n`, which prints the recipe without running it: no server is started."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _recipe(*args: str, **env: str) -> list[str]:
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", "serve", *args],
        cwd=ROOT,
        env=os.environ | env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout.splitlines()


def test_make_serve_passes_port_and_host_to_evalsite_serve():
    assert _recipe("PORT=8123")[-1] == ".venv/bin/evalsite serve --port '8123'"
    assert _recipe("PORT=8123", "HOST=0.0.0.0")[-1] == (
        ".venv/bin/evalsite serve --host '0.0.0.0' --port '8123'"
    )


def test_make_serve_without_them_keeps_the_defaults_whatever_the_environment_holds():
    assert _recipe()[-1] == ".venv/bin/evalsite serve"
    assert _recipe(HOST="build-box.example", PORT="3000")[-1] == ".venv/bin/evalsite serve"


def test_make_serve_installs_the_mcp_extra_first():
    assert _recipe()[0] == "scripts/bootstrap mcp"
