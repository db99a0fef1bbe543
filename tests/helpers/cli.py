"""`evalsite` as a subprocess on a data dir of its own, and that data dir's database read
from outside, as an observer would.

The first `evalsite` command in a new data dir migrates its database, about 1.2 s of the
1.8 s such a command takes here, and the tests start a few hundred of them. So a data dir
handed to a subprocess starts with a copy of a database this worker migrated once, unless
the test asks for a ``fresh`` one: the tests of what a first start does (file modes, an
unmigrated data dir) keep it.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from contextlib import closing
from functools import cache
from pathlib import Path

from tests.helpers import launcher

ROOT = Path(__file__).resolve().parents[2]
EVALSITE = Path(sys.executable).parent / "evalsite"


DATABASE = "evalsite.sqlite3"


def cli_env(data_dir: Path, *, fresh: bool = False, **extra: str) -> dict[str, str]:
    """The environment for an `evalsite` subprocess on its own SQLite data dir; the data
    dir starts migrated unless ``fresh`` (or it already has a database)."""
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "EVALSITE_REDIS_URL"}}
    env["EVALSITE_DATA_DIR"] = str(data_dir)
    env.update(extra)
    if not fresh and "DATABASE_URL" not in env:
        migrated(Path(data_dir))
    return env


def migrated(data_dir: Path) -> Path:
    """``data_dir`` holding a copy of this worker's migrated database, unless it has one."""
    target = data_dir / DATABASE
    if not target.exists():
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        shutil.copyfile(_migrated_database(), target)
        target.chmod(0o600)
    return data_dir


@cache
def _migrated_database() -> Path:
    """A database `evalsite migrate` made in a data dir of its own, once per process."""
    data_dir = Path(tempfile.mkdtemp(prefix="evalsite-migrated-"))
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "EVALSITE_REDIS_URL"}}
    env["EVALSITE_DATA_DIR"] = str(data_dir)
    done = subprocess.run(
        [str(EVALSITE), "migrate", "-v0"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    database = data_dir / DATABASE
    with closing(sqlite3.connect(database)) as connection:  # the WAL folded in: one file
        connection.execute("pragma wal_checkpoint(truncate)")
    atexit.register(shutil.rmtree, data_dir, ignore_errors=True)
    return database


def evalsite(data_dir: Path, *args: str, timeout: float = 120, fresh: bool = False, **extra: str):
    """`evalsite ARGS` on ``data_dir``, its output captured: forked from this worker's
    launcher (:mod:`tests.helpers.launcher`), or, for a ``fresh`` data dir's first start,
    the console script started as a shell starts it."""
    if not fresh:
        env = cli_env(data_dir, **extra)
        return launcher.run(list(args), env=env, timeout=timeout)
    return subprocess.run(
        [str(EVALSITE), *args],
        cwd=ROOT,
        env=cli_env(data_dir, fresh=fresh, **extra),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def sqlite_rows(data_dir: Path, sql: str, params: tuple = ()) -> list[tuple]:
    """Read the data dir's database directly (read-only), as an observer from outside."""
    uri = f"file:{data_dir / 'evalsite.sqlite3'}?mode=ro"
    with sqlite3.connect(uri, uri=True, timeout=20) as connection:
        return connection.execute(sql, params).fetchall()
