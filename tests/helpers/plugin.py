"""The suite's pytest plugin (loaded by `-p tests.helpers.plugin` in pyproject.toml).

Before Django reads its settings it gives each pytest-xdist worker a data dir of its own
(`<data dir>/<worker id>`: its own test database, secret key and reports) and, on the
Redis broker, a Redis database of its own, so parallel workers never share a queue. After
the settings are read it pins the secret key, so no test depends on the key a data dir
happened to generate, and swaps PBKDF2 for the MD5 hasher: one PBKDF2 hash costs more than a
second on this machine and the tests make users by the dozen. pytest-django already gives
each worker its own test database name on PostgreSQL.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest

# The helpers' asserts report their values as a test's own do (pytest rewrites test modules
# and conftest.py files by itself, not the modules they import).
HELPERS = (
    "browser",
    "cli",
    "engine",
    "factories",
    "labelling",
    "providers",
    "report",
    "sandbox",
    "yaml_loaders",
)
pytest.register_assert_rewrite(*(f"tests.helpers.{name}" for name in HELPERS))

TEST_SECRET_KEY = "tests-only-" + "k" * 50
# Redis databases 0..15: the workers take 1 + their index; 13 belongs to the worker-kill
# test (tests/engine/test_worker_kill.py), so the count wraps before it.
REDIS_WORKER_DBS = [db for db in range(1, 16) if db != 13]


def worker_index(worker: str) -> int:
    """0 for `gw0`, 1 for `gw1`, …"""
    return int(worker.removeprefix("gw"))


def worker_redis_url(url: str, worker: str) -> str:
    """`url` pointing at the Redis database of xdist worker `worker`."""
    db = REDIS_WORKER_DBS[worker_index(worker) % len(REDIS_WORKER_DBS)]
    return urlsplit(url)._replace(path=f"/{db}").geturl()


def _isolate_worker() -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return
    base = Path(os.environ.get("EVALSITE_DATA_DIR", ".evalsite")).expanduser().resolve()
    os.environ["EVALSITE_DATA_DIR"] = str(base / worker)
    if os.environ.get("EVALSITE_REDIS_URL"):
        os.environ["EVALSITE_REDIS_URL"] = worker_redis_url(
            os.environ["EVALSITE_REDIS_URL"], worker
        )


# At import: `-p` loads this module before pytest-django reads the settings.
_isolate_worker()


def pytest_configure(config: pytest.Config) -> None:
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # This process only: an `evalsite` subprocess on a data dir of its own still makes and
    # keeps its own key there, as the file-mode and serve tests check.
    settings.SECRET_KEY = TEST_SECRET_KEY


# The markers of the passes `make test` runs after the parallel one. It collects each pass
# from the files whose text says `mark.<marker>`, not from the whole suite.
LATER_PASSES = ("processes", "serial")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test marked for a later pass whose file never says `mark.<marker>` (a conftest hook
    marked it) would run in no pass of `make test`: refused."""
    texts: dict[str, str] = {}
    for item in items:
        for marker in LATER_PASSES:
            if item.get_closest_marker(marker) is None:
                continue
            path = str(item.path)
            if path not in texts:
                texts[path] = Path(path).read_text()
            if f"mark.{marker}" not in texts[path]:
                raise pytest.UsageError(
                    f"{item.nodeid} is marked {marker}, but its file never says "
                    f"mark.{marker}, by which `make test` finds the {marker} tests: mark it "
                    "there"
                )
