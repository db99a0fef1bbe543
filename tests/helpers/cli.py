"""`evalsite` as a subprocess on a data dir of its own, and that data dir's database read
from outside, as an observer would."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EVALSITE = Path(sys.executable).parent / "evalsite"


def cli_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment for an `evalsite` subprocess on its own SQLite data dir."""
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "EVALSITE_REDIS_URL"}}
    env["EVALSITE_DATA_DIR"] = str(data_dir)
    env.update(extra)
    return env


def evalsite(data_dir: Path, *args: str, timeout: float = 120, **extra: str):
    return subprocess.run(
        [str(EVALSITE), *args],
        cwd=ROOT,
        env=cli_env(data_dir, **extra),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def sqlite_rows(data_dir: Path, sql: str, params: tuple = ()) -> list[tuple]:
    """Read the data dir's database directly (read-only), as an observer from outside."""
    uri = f"file:{data_dir / 'evalsite.sqlite3'}?mode=ro"
    with sqlite3.connect(uri, uri=True, timeout=20) as connection:
        return connection.execute(sql, params).fetchall()
