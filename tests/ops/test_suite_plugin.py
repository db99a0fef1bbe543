"""The suite's own plugin (tests/helpers/plugin.py): a fast hasher, a pinned key, and each
xdist worker on a data dir and a Redis database of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.conf import settings
from django.contrib.auth.hashers import make_password

from tests.helpers.cli import ROOT
from tests.helpers.plugin import (
    TEST_SECRET_KEY,
    pytest_collection_modifyitems,
    worker_redis_url,
)


def test_passwords_are_hashed_with_the_fast_hasher_under_pytest():
    assert make_password("a-long-test-password").startswith("md5$")


def test_the_secret_key_is_pinned_not_read_from_the_data_dir():
    assert settings.SECRET_KEY == TEST_SECRET_KEY
    assert (Path(settings.DATA_DIR) / "secret_key").read_text().strip() != TEST_SECRET_KEY


def test_an_xdist_worker_has_a_data_dir_of_its_own():
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        assert Path(settings.DATA_DIR).name == worker


def test_each_worker_gets_its_own_redis_database_never_the_worker_kill_tests():
    urls = [worker_redis_url("redis://127.0.0.1:6379/0", f"gw{i}") for i in range(20)]
    dbs = [int(url.rsplit("/", 1)[1]) for url in urls]
    assert len(set(dbs[:14])) == 14 and 0 not in dbs and 13 not in dbs
    assert urls[0] == "redis://127.0.0.1:6379/1"


def _item(path: Path, serial: bool) -> SimpleNamespace:
    marker = pytest.mark.serial.mark if serial else None
    return SimpleNamespace(
        path=path, nodeid=f"{path.name}::test_x", get_closest_marker=lambda name: marker
    )


def test_a_serial_test_whose_file_make_test_would_not_find_is_refused(tmp_path):
    """`make test` collects the serial pass from the files whose text says mark.serial;
    a test marked serial another way (a conftest hook) would run in neither pass."""
    said = tmp_path / "test_said.py"
    said.write_text("pytestmark = pytest.mark.serial\n")
    unsaid = tmp_path / "test_unsaid.py"
    unsaid.write_text("def test_x(): pass\n")
    pytest_collection_modifyitems(None, [_item(said, True), _item(unsaid, False)])
    with pytest.raises(pytest.UsageError, match="test_unsaid.py::test_x is marked serial"):
        pytest_collection_modifyitems(None, [_item(said, True), _item(unsaid, True)])


# What a test module must not import at its top (tests/helpers/references.py says why).
HEAVY = ("sklearn", "statsmodels", "scipy.stats", "krippendorff", "anthropic", "openai",
         "google.genai", "mcp")  # fmt: skip
COLLECT = f"""
import json, sys, pytest
code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "tests"])
print(json.dumps([code, sorted(name for name in {HEAVY!r} if name in sys.modules)]))
"""


def test_collecting_the_suite_imports_no_reference_library_and_no_sdk(tmp_path):
    """Each xdist worker collects every test module: a library a module imports at its top
    is imported by every worker, about 6 s of each one's collection before they were
    deferred."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    env["EVALSITE_DATA_DIR"] = str(tmp_path / "data")
    result = subprocess.run(
        [sys.executable, "-c", COLLECT], cwd=ROOT, env=env, capture_output=True, text=True
    )
    code, imported = json.loads(result.stdout.strip().splitlines()[-1])
    assert (code, imported) == (0, [])
