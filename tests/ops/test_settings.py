"""Settings come from the environment; each case is read in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import json
from django.conf import settings
print(json.dumps({
    "db": settings.DATABASES["default"]["ENGINE"],
    "db_name": str(settings.DATABASES["default"]["NAME"]),
    "db_options": {k: v for k, v in settings.DATABASES["default"].get("OPTIONS", {}).items()},
    "q": settings.Q_CLUSTER,
    "hosts": settings.ALLOWED_HOSTS,
    "secret": settings.SECRET_KEY,
}))
"""


def read_settings(tmp_path, **env) -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("EVALSITE_", "DATABASE_URL"))}
    clean.update(
        {"DJANGO_SETTINGS_MODULE": "evalsite.settings", "EVALSITE_DATA_DIR": str(tmp_path)}
    )
    clean.update(env)
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout)


def test_the_default_is_sqlite_in_the_data_dir_with_wal_busy_timeout_and_immediate(tmp_path):
    read = read_settings(tmp_path)
    assert read["db"] == "django.db.backends.sqlite3"
    assert read["db_name"] == str(tmp_path / "evalsite.sqlite3")
    assert read["db_options"]["transaction_mode"] == "IMMEDIATE"
    assert read["db_options"]["timeout"] >= 5
    assert "journal_mode=WAL" in read["db_options"]["init_command"]
    assert read["q"]["orm"] == "default" and "redis" not in read["q"]


def test_database_url_switches_to_postgresql(tmp_path):
    read = read_settings(tmp_path, DATABASE_URL="postgres://ev@db.internal:5432/evals")
    assert read["db"] == "django.db.backends.postgresql" and read["db_name"] == "evals"


def test_a_redis_url_switches_the_broker(tmp_path):
    read = read_settings(tmp_path, EVALSITE_REDIS_URL="redis://127.0.0.1:6379/3")
    assert read["q"]["redis"] == "redis://127.0.0.1:6379/3" and "orm" not in read["q"]


def test_a_task_lease_outlasts_its_timeout_and_attempts_are_few(tmp_path):
    q = read_settings(tmp_path)["q"]
    assert q["retry"] > q["timeout"]
    assert 1 <= q["max_attempts"] <= 5


def test_the_secret_key_is_generated_once_and_kept_private(tmp_path):
    first = read_settings(tmp_path)["secret"]
    assert len(first) >= 50
    assert read_settings(tmp_path)["secret"] == first
    assert (tmp_path / "secret_key").stat().st_mode & 0o077 == 0
    assert read_settings(tmp_path, EVALSITE_SECRET_KEY="given-" + "x" * 50)["secret"].startswith(
        "given-"
    )


def test_processes_starting_at_once_on_a_new_data_dir_share_one_secret_key(tmp_path):
    # The key file appears whole: none of them may read it half-written (an empty key).
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALSITE_", "DATABASE_URL"))}
    env.update(DJANGO_SETTINGS_MODULE="evalsite.settings", EVALSITE_DATA_DIR=str(tmp_path / "d"))
    code = "from django.conf import settings; print(settings.SECRET_KEY)"
    probes = [
        subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE)
        for _ in range(4)
    ]
    keys = {probe.communicate(timeout=60)[0].strip() for probe in probes}
    assert len(keys) == 1 and len(keys.pop()) >= 50
    assert [p.name for p in (tmp_path / "d").iterdir() if p.name.startswith(".")] == []


def test_a_new_data_dir_and_its_database_file_are_private(tmp_path):
    data = tmp_path / "new" / "data"
    read_settings(tmp_path, EVALSITE_DATA_DIR=str(data))
    assert data.stat().st_mode & 0o777 == 0o700
    assert (data / "evalsite.sqlite3").stat().st_mode & 0o777 == 0o600


def test_allowed_hosts_come_from_the_environment(tmp_path):
    assert read_settings(tmp_path)["hosts"] == ["127.0.0.1", "localhost", "[::1]"]
    hosts = read_settings(tmp_path, EVALSITE_ALLOWED_HOSTS="evals.internal, 10.0.0.5")["hosts"]
    assert hosts == ["evals.internal", "10.0.0.5"]


def test_production_settings_pass_check_deploy(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALSITE_")}
    env.update(EVALSITE_DATA_DIR=str(tmp_path), EVALSITE_HTTPS="1")
    result = subprocess.run(
        [sys.executable, "-m", "evalsite", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr + result.stdout


@pytest.mark.django_db
def test_the_configured_broker_round_trips_a_message():
    """Against the ORM broker by default, against Redis when EVALSITE_REDIS_URL is set."""
    from django_q.brokers import get_broker

    broker = get_broker(list_key=f"evalsite-test-{os.getpid()}")
    assert broker.ping()
    broker.enqueue("payload")
    message = broker.dequeue()
    assert message
    payload = message[0][1]
    assert (payload.decode() if isinstance(payload, bytes) else payload) == "payload"
    broker.acknowledge(message[0][0])
    assert ("redis" in settings.Q_CLUSTER) == bool(os.environ.get("EVALSITE_REDIS_URL"))
