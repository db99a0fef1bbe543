"""`evalsite serve` end to end: a fresh data dir, the printed credentials, a clean Ctrl-C."""

from __future__ import annotations

import io
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.helpers.cli import cli_env

EVALSITE = Path(sys.executable).parent / "evalsite"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def read_until(process: subprocess.Popen, pattern: str, timeout: float = 60) -> list[str]:
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line)
        if re.search(pattern, line):
            return lines
    raise AssertionError(f"never printed {pattern!r}; got: {''.join(lines)}")


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def served(tmp_path):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "EVALSITE_REDIS_URL"}}
    env["EVALSITE_DATA_DIR"] = str(tmp_path / "data")
    process = subprocess.Popen(
        [str(EVALSITE), "serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
    )
    yield process, port
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def test_serve_prints_credentials_that_log_in_and_stops_cleanly_on_ctrl_c(served):
    process, port = served
    output = "".join(read_until(process, r"serving on http://127\.0\.0\.1:"))
    password = re.search(r"password: (\S+)", output).group(1)
    assert "username: admin" in output

    base = f"http://127.0.0.1:{port}"
    with httpx.Client(base_url=base, follow_redirects=False, timeout=10) as client:
        assert client.get("/").status_code == 302
        login = client.get("/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text).group(1)
        response = client.post(
            "/login/",
            data={"username": "admin", "password": password, "csrfmiddlewaretoken": token},
            headers={"Referer": f"{base}/login/"},
        )
        assert response.status_code == 302
        dashboard = client.get("/")
        assert dashboard.status_code == 200 and "support-desk" in dashboard.text
        prices = client.get("/prices/")
        assert "anthropic/claude-haiku-4-5" in prices.text
        assert client.get("/static/css/app.css").status_code == 200

    os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    assert process.wait(timeout=40) == 0
    deadline = time.monotonic() + 10
    while group_alive(process.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not group_alive(process.pid), "a worker process outlived serve"


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid`, from /proc."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    return state != "Z"


def test_a_worker_stops_when_serve_is_killed_outright(served):
    process, _ = served
    read_until(process, r"serving on")
    deadline = time.monotonic() + 30
    while not (workers := children(process.pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    (worker,) = workers  # in its own session: killing serve's group does not reach it
    cluster = children(worker)

    process.send_signal(signal.SIGKILL)  # serve alone, as the OOM killer would
    process.wait()

    deadline = time.monotonic() + 40
    while any(alive(pid) for pid in (worker, *cluster)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(worker), "the worker outlived the serve that started it"
    assert not any(alive(pid) for pid in cluster), "the worker's cluster outlived serve"


def test_ctrl_c_stops_serve_even_when_it_was_started_with_ctrl_c_ignored(tmp_path):
    """A background job of a non-interactive shell (`cmd &` in a script, or CI's) starts
    with SIGINT ignored; serve used to keep it so and ran on through Ctrl-C."""
    env = cli_env(tmp_path / "data")
    command = f"trap '' INT; exec '{EVALSITE}' serve --port {free_port()} --no-worker"
    process = subprocess.Popen(
        ["sh", "-c", command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=env, start_new_session=True,
    )  # fmt: skip
    try:
        read_until(process, r"serving on")
        os.killpg(process.pid, signal.SIGINT)
        assert process.wait(timeout=40) == 0
        assert "evalsite stopped." in process.stdout.read()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_a_second_start_prints_no_new_credentials(served, tmp_path):
    process, _ = served
    read_until(process, r"serving on")
    os.killpg(process.pid, signal.SIGINT)
    process.wait(timeout=40)
    env = {**os.environ, "EVALSITE_DATA_DIR": str(tmp_path / "data")}
    env.pop("DATABASE_URL", None)
    again = subprocess.Popen(
        [str(EVALSITE), "serve", "--port", str(free_port()), "--no-worker"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        output = "".join(read_until(again, r"serving on"))
        assert "password" not in output
    finally:
        os.killpg(again.pid, signal.SIGINT)
        again.wait(timeout=40)


def test_serve_makes_a_data_dir_others_could_read_private_and_says_so(tmp_path):
    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "EVALSITE_REDIS_URL"}}
    env["EVALSITE_DATA_DIR"] = str(data)
    subprocess.run([str(EVALSITE), "migrate", "-v0"], env=env, check=True, timeout=120)
    for path in (data, data / "evalsite.sqlite3", data / "secret_key"):
        path.chmod(0o755 if path.is_dir() else 0o644)  # as an older evalsite left them
    process = subprocess.Popen(
        [str(EVALSITE), "serve", "--port", str(free_port()), "--no-worker"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        output = "".join(read_until(process, r"serving on"))
    finally:
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=40)
    notes = [line for line in output.splitlines() if "private (other users could read it)" in line]
    assert len(notes) == 1, output
    assert "evalsite.sqlite3 0644 -> 0600" in notes[0] and "secret_key 0644 -> 0600" in notes[0]
    assert data.stat().st_mode & 0o777 == 0o700
    assert {p.stat().st_mode & 0o777 for p in data.glob("evalsite.sqlite3*")} == {0o600}


class _InterruptedAtOnce:
    """A server that gets Ctrl-C as its loop starts, outside waitress's own handling of it:
    the signal that lands between "serving on" and the loop on a busy machine."""

    def run(self):
        raise KeyboardInterrupt


@pytest.mark.django_db
def test_a_ctrl_c_just_after_serving_on_is_the_same_clean_stop(monkeypatch):
    import waitress.server
    from django.core.management import call_command

    monkeypatch.setattr(waitress.server, "create_server", lambda *a, **k: _InterruptedAtOnce())
    out = io.StringIO()
    try:
        call_command("serve", "--no-worker", "--port", str(free_port()), stdout=out)
    except KeyboardInterrupt:
        pytest.fail("the Ctrl-C escaped serve: the console prints 'interrupted' and exits 3")
    lines = out.getvalue().splitlines()
    assert lines[-2].startswith("evalsite is serving on http://127.0.0.1:")
    assert lines[-1] == "evalsite stopped."
