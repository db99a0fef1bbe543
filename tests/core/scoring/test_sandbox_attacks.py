"""Answers that attack the machine. Each is contained, reported, and the runner goes on.

Every test here fails if the sandbox is weakened: the attack is real (a socket, a write, a
read of a file the test put there), and the assertion is made on the host side.
"""

from __future__ import annotations

import pathlib
import resource
import socket
import threading
import time
import uuid

import pytest

from evalsite.core.scoring.execution import run_execution_check, run_many
from evalsite.core.scoring.sandbox import LIMITS, OUTPUT_TAIL_BYTES
from tests.helpers.sandbox import block, next_check_works, no_processes_left

pytestmark = pytest.mark.serial  # cgroups, memory bounds, fork bombs: runs alone
RUN_PYTHON = {"run": 'python3 "$ANSWER"', "timeout_s": 20}
RUN_BASH = {"run": 'bash "$ANSWER"', "timeout_s": 20}
REPO = pathlib.Path(__file__).resolve().parents[3]


def attack(sandbox, code: str, check=RUN_PYTHON, language: str = "python"):
    result = run_execution_check(block(code, language), check, sandbox=sandbox)
    next_check_works(sandbox)
    return result


# --- network -----------------------------------------------------------------------------


def test_no_route_to_the_internet(sandbox):
    code = """
import socket
socket.create_connection(("1.1.1.1", 53), timeout=5)
print("CONNECTED")
"""
    result = attack(sandbox, code)
    assert result.verdict == "fail"
    assert "CONNECTED" not in result.output_tail
    assert "Network is unreachable" in result.output_tail


@pytest.fixture
def host_server():
    """A TCP server on the host's 127.0.0.1 counting the connections it accepts."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[object] = []

    def serve() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            accepted.append(connection)
            connection.close()

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1], accepted
    server.close()


def test_no_reaching_a_server_on_the_hosts_loopback(sandbox, host_server):
    port, accepted = host_server
    socket.create_connection(("127.0.0.1", port), timeout=5).close()  # it does listen
    time.sleep(0.1)
    assert len(accepted) == 1
    code = f"""
import socket
socket.create_connection(("127.0.0.1", {port}), timeout=5)
print("CONNECTED")
"""
    result = attack(sandbox, code)
    assert result.verdict == "fail"
    assert "Connection refused" in result.output_tail
    time.sleep(0.1)
    assert len(accepted) == 1


# --- secrets -----------------------------------------------------------------------------


def test_the_environment_holds_no_keys(sandbox, monkeypatch):
    canary = "canary-" + uuid.uuid4().hex
    monkeypatch.setenv("FOO_API_KEY", canary)
    code = """
env
for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < "$f"; done
ps -e -o pid,user,args
exit 1
"""
    result = attack(sandbox, code, RUN_BASH, "bash")
    assert result.verdict == "fail"
    assert canary not in result.output_tail
    assert "FOO_API_KEY" not in result.output_tail
    assert "ANSWER_TEXT=" in result.output_tail  # the listing did run
    assert "pytest" not in result.output_tail  # no host process is visible


def test_the_project_database_cannot_be_read(sandbox, tmp_path):
    secret = uuid.uuid4().hex
    canary = "canary-db-" + secret
    database = tmp_path / "data" / "evalsite.sqlite3"
    database.parent.mkdir()
    database.write_text(f"SQLite format 3\0{canary}")
    database.chmod(0o644)
    code = f"""
cat {database}
find / -path /proc -prune -o -name 'evalsite.sqlite3' -print 2>/dev/null
prefix=canary-db-  # the canary is never written whole into the answer
grep -rs "$prefix{secret}" /tmp /work /check /etc /dev/shm
exit 1
"""
    result = attack(sandbox, code, RUN_BASH, "bash")
    assert result.verdict == "fail"
    assert canary not in result.output_tail
    assert "No such file or directory" in result.output_tail


def test_root_home_and_the_repository_cannot_be_read(sandbox):
    code = f"""
set -e
ls -la /root {REPO} || true
cat {REPO / "pyproject.toml"}
"""
    result = attack(sandbox, code, RUN_BASH, "bash")
    assert result.verdict == "fail"
    assert 'name = "evalsite"' not in result.output_tail
    assert f"cannot access '{REPO}': No such file or directory" in result.output_tail
    assert "cannot access '/root': No such file or directory" in result.output_tail


# --- writes ------------------------------------------------------------------------------


def test_writes_outside_the_work_dir_never_reach_the_host(sandbox, tmp_path):
    name = "evalsite-escape-" + uuid.uuid4().hex
    targets = [
        pathlib.Path("/tmp") / name,
        REPO / name,
        tmp_path / name,
        pathlib.Path("/usr") / name,
    ]
    code = f"""
import pathlib
failed = 0
for target in {[str(t) for t in targets]!r}:
    try:
        pathlib.Path(target).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path(target).write_text("escaped")
        print("wrote", target)
    except OSError as error:
        failed += 1
        print("refused", target, error)
raise SystemExit(failed)
"""
    result = attack(sandbox, code)
    assert result.verdict == "fail"  # /usr is read-only
    assert "Read-only file system" in result.output_tail
    assert [target for target in targets if target.exists()] == []


def test_the_file_size_limit_holds(sandbox):
    size = LIMITS["file_bytes"] + 1024 * 1024
    result = attack(sandbox, f"open('big', 'wb').write(b'x' * {size})")
    assert result.verdict == "fail"
    assert "SIGXFSZ" in result.note or "File too large" in result.output_tail


def test_work_and_tmp_are_small_tmpfs_so_the_disk_and_memory_cannot_fill(sandbox):
    code = """
import sys
for folder in (".", "/tmp"):
    written = 0
    try:
        for n in range(40):
            with open(f"{folder}/part{n}", "wb") as part:
                part.write(b"x" * 5_000_000)
            written += 5
    except OSError as error:
        print(folder, "stopped after", written, "MB:", error.strerror)
    else:
        print(folder, "took all", written, "MB")
sys.exit(1)
"""
    result = attack(sandbox, code)
    assert result.verdict == "fail"
    for folder, limit in ((".", LIMITS["work_bytes"]), ("/tmp", LIMITS["tmp_bytes"])):
        whole_parts_mb = limit // 5_000_000 * 5
        stopped = f"{folder} stopped after {whole_parts_mb} MB: No space left on device"
        assert stopped in result.output_tail


# --- resources ---------------------------------------------------------------------------


def test_the_memory_limit_holds(sandbox):
    result = attack(sandbox, "hog = bytearray(2 * 1024**3)\nprint('ALLOCATED')")
    assert result.verdict == "fail"
    assert "MemoryError" in result.output_tail
    assert "ALLOCATED" not in result.output_tail


def test_forking_without_end_is_bounded_by_the_process_limit(sandbox):
    code = """
import os, time
children = 0
while True:
    try:
        pid = os.fork()
    except OSError as error:
        print("forks refused after", children, error.strerror, flush=True)
        raise SystemExit(1)
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    children += 1
"""
    result = attack(sandbox, code)
    assert result.verdict == "fail"
    refused = result.output_tail.split("forks refused after ")[1].split()
    assert int(refused[0]) < LIMITS["processes"]
    assert no_processes_left(cmdline="python3 /work/answer.py") == []
    assert no_processes_left() == []


def test_a_classic_fork_bomb_is_timed_out_and_cleaned_up(sandbox):
    started = time.monotonic()
    check = {"run": 'bash "$ANSWER"', "timeout_s": 3}
    result = attack(sandbox, "bomb() { bomb | bomb & }; bomb; sleep 30", check, "bash")
    elapsed = time.monotonic() - started
    assert (result.verdict, result.note) == ("fail", "timed out after 3s")
    assert elapsed < 3 + 6
    assert no_processes_left() == []


def test_an_endless_loop_is_timed_out_near_the_timeout(sandbox):
    started = time.monotonic()
    result = run_execution_check(
        block("while True:\n    pass"),
        {"run": 'python3 "$ANSWER"', "timeout_s": 2},
        sandbox=sandbox,
    )
    elapsed = time.monotonic() - started
    assert (result.verdict, result.note) == ("fail", "timed out after 2s")
    assert 2 <= elapsed < 4
    assert no_processes_left() == []
    next_check_works(sandbox)


def test_printing_100_mb_is_cut_and_memory_stays_bounded(sandbox):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    code = """
import sys
chunk = b"y" * 1_000_000
for _ in range(100):
    sys.stdout.buffer.write(chunk)
print("ALL PRINTED")
"""
    started = time.monotonic()
    result = attack(sandbox, code)
    assert time.monotonic() - started < 10
    assert result.verdict == "fail"
    assert "ALL PRINTED" not in result.output_tail
    assert "output cut" in result.output_tail
    assert len(result.output_tail.encode()) < OUTPUT_TAIL_BYTES + 200
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 50 * 1024


def test_a_background_process_does_not_outlive_the_check(sandbox):
    code = "sleep 1000 &\nsetsid sleep 1000 &\nnohup sleep 1000 > /dev/null 2>&1 &\nexit 0"
    result = run_execution_check(block(code, "bash"), RUN_BASH, sandbox=sandbox)
    assert result.verdict == "pass"
    assert no_processes_left(cmdline="sleep 1000") == []
    assert no_processes_left() == []
    next_check_works(sandbox)


# --- privileges --------------------------------------------------------------------------


def test_the_code_runs_unprivileged_and_cannot_make_a_user_namespace(sandbox):
    code = "id -u\ngrep CapEff /proc/self/status\nunshare --user --map-root-user true && echo NESTED\nexit 1"
    result = attack(sandbox, code, RUN_BASH, "bash")
    assert result.verdict == "fail"
    assert result.output_tail.startswith("65534\nCapEff:\t0000000000000000\n")
    assert "NESTED" not in result.output_tail


def test_a_fork_bomb_does_not_starve_a_check_running_beside_it(sandbox):
    hog = """
import os, time
while True:
    try:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
    except OSError:
        time.sleep(3)  # hold every process the limit allows while the neighbour runs
        raise SystemExit(1)
"""
    neighbour = (
        "sleep 0.5\nfor n in $(seq 20); do python3 -c 'print(1)' > /dev/null || exit 1; done"
    )
    jobs = [(block(hog), RUN_PYTHON), (block(neighbour, "bash"), RUN_BASH)]
    hog_result, neighbour_result = run_many(jobs, sandbox=sandbox, max_workers=2)
    assert hog_result.verdict == "fail"
    assert (neighbour_result.verdict, neighbour_result.note) == ("pass", None)
    assert no_processes_left() == []
