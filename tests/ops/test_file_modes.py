"""The data dir is its owner's alone (SPEC §19): the folder 0700; the database with its -wal and
-shm files, the secret key and the reports 0600. A 0644 database once let another local user
read live session keys and password hashes.
"""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

from evalsite.management.commands.serve import tighten_data_dir
from tests.helpers.cli import ROOT, cli_env, evalsite

SUITE = """\
suite: modes
version: 1
models: [fake/small, fake/large]
defaults: {temperature: 0, max_tokens: 50}
tasks:
  - id: echo
    prompt: "Echo {{word}}."
    cases:
      - {id: c1, vars: {word: a}}
"""
# A process that does not come through evalsite's entry point (a WSGI server, say) and has
# the usual umask: the database and its WAL files must still be private.
OPEN_THE_DATABASE = """
import json, os, stat
os.umask(0o022)
import django
django.setup()
from pathlib import Path
from django.conf import settings
from django.contrib.sessions.models import Session
Session.objects.count()  # opens it in WAL mode: the -wal and -shm files exist while open
data = Path(settings.DATA_DIR)
print(json.dumps({p.name: stat.S_IMODE(p.stat().st_mode) for p in data.glob("evalsite.sqlite3*")}))
"""


def loose(root: Path) -> dict[str, str]:
    """Every path under `root` (and itself) that a group or other user may use."""
    found = {}
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        if mode & 0o077:
            found[str(path.relative_to(root))] = f"{mode:04o}"
    return found


def test_a_run_leaves_a_data_dir_with_nothing_others_can_read(tmp_path):
    data = tmp_path / "new" / "data"
    suite = tmp_path / "modes.yaml"
    suite.write_text(SUITE)

    result = evalsite(data, "run", str(suite), fresh=True)

    assert result.returncode == 0, result.stderr
    assert list(data.glob("reports/modes/*/report.html")), "the run wrote no report"
    assert {"evalsite.sqlite3", "secret_key", "reports"} <= {p.name for p in data.iterdir()}
    assert loose(data) == {}


def test_the_database_and_its_wal_files_are_private_whatever_the_umask(tmp_path):
    data = tmp_path / "data"
    assert evalsite(data, "migrate", "-v0", fresh=True).returncode == 0
    env = cli_env(data, DJANGO_SETTINGS_MODULE="evalsite.settings")
    result = subprocess.run(
        [sys.executable, "-c", OPEN_THE_DATABASE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    modes = json.loads(result.stdout)
    assert set(modes) == {"evalsite.sqlite3", "evalsite.sqlite3-wal", "evalsite.sqlite3-shm"}
    assert set(modes.values()) == {0o600}


def make_loose_data_dir(data: Path) -> None:
    (data / "reports").mkdir(parents=True)
    for name in ("evalsite.sqlite3", "evalsite.sqlite3-wal", "evalsite.sqlite3-shm"):
        (data / name).write_bytes(b"")
    (data / "secret_key").write_text("k")
    for path in data.iterdir():
        path.chmod(0o755 if path.is_dir() else 0o644)
    data.chmod(0o755)


def test_tightening_takes_group_and_other_permissions_off_and_says_what_changed(tmp_path):
    data = tmp_path / "data"
    make_loose_data_dir(data)

    changed = tighten_data_dir(data)

    assert loose(data) == {}
    assert "data 0755 -> 0700" in changed and "evalsite.sqlite3 0644 -> 0600" in changed
    assert len(changed) == 6
    assert tighten_data_dir(data) == []  # nothing left to do


def test_a_shared_folder_keeps_its_mode_and_a_symlink_is_not_followed(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # like /tmp
    elsewhere = tmp_path / "elsewhere.sqlite3"
    elsewhere.write_bytes(b"")
    elsewhere.chmod(0o644)
    (shared / "evalsite.sqlite3").symlink_to(elsewhere)
    (shared / "secret_key").write_text("k")
    (shared / "secret_key").chmod(0o644)

    assert tighten_data_dir(shared) == ["secret_key 0644 -> 0600"]
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o644


def test_the_console_entry_point_sets_a_private_umask(tmp_path):
    code = "import os; print(oct(os.umask(0o077)))"
    result = evalsite(tmp_path / "data", "shell", "-v0", "-c", code, fresh=True)
    assert result.stdout.splitlines()[-1] == "0o77", result.stderr
