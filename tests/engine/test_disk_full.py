"""A full disk while a run writes its report (issue 13 item 12): one clear line, exit 3, and
the run left in a state the next worker finishes once there is room."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers.cli import EVALSITE, ROOT, cli_env, evalsite, sqlite_rows

pytestmark = pytest.mark.processes  # workers, signals, kills: after the parallel pass

DEMO = "examples/support-desk.yaml"


@contextlib.contextmanager
def small_disk(path: Path, size: str = "4m"):
    path.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
        capture_output=True,
    )
    if mounted.returncode != 0:
        pytest.skip("a small tmpfs cannot be mounted here (needs root)")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(disk: Path) -> Path:
    """A file taking every byte the disk has left."""
    filler = disk / "filler"
    with open(filler, "wb") as out, contextlib.suppress(OSError):
        while True:
            out.write(b"\0" * 65536)
            out.flush()
    return filler


def test_a_full_disk_while_reporting_is_one_line_and_the_next_worker_finishes_the_run(tmp_path):
    data = tmp_path / "data"
    env = cli_env(data)
    assert evalsite(data, "validate", DEMO).returncode == 0
    with small_disk(tmp_path / "disk") as disk:
        (data / "reports").symlink_to(disk)
        filler = fill(disk)
        result = evalsite(data, "run", DEMO, "--fake", timeout=300)

        assert result.returncode == 3, result.stderr
        assert "Traceback" not in result.stderr
        assert "error: no space left on the disk" in result.stderr
        ((run_id, status),) = sqlite_rows(data, "select id, status from runs_run")
        assert status == "reporting"  # every answer and verdict kept, the report to write

        filler.unlink()
        worker = subprocess.Popen(
            [str(EVALSITE), "worker"], cwd=ROOT, env=env | {"EVALSITE_CLAIM_LEASE_S": "1"},
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            start_new_session=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if sqlite_rows(data, "select status from runs_run")[0][0] == "done":
                    break
                time.sleep(0.5)
        finally:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(timeout=30)
        assert sqlite_rows(data, "select status from runs_run")[0][0] == "done"
        assert (disk / "support-desk" / run_id / "report.md").exists()


def test_a_full_disk_under_the_database_is_one_line_and_exit_3(tmp_path):
    with small_disk(tmp_path / "disk", size="6m") as disk:
        assert evalsite(disk / "data", "validate", DEMO).returncode == 0
        fill(disk)
        result = evalsite(disk / "data", "run", DEMO, "--fake", timeout=300)
    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("error: ")
    assert "free some space" in result.stderr
