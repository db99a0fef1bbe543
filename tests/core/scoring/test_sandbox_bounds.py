"""A check's disk and memory are bounded as a whole, not just per process and per file.

The attacks are the ones found against the sandbox (FIELD-NOTES, "bubblewrap's root"): a
loop writing 10 MB files into bwrap's unsized root, and six processes of one check each
holding hundreds of MB. The assertions are made on what the check reports and, where the
kernel can tell, on the host side.
"""

from __future__ import annotations

import os
import pathlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from evalsite.core.scoring.execution import run_execution_check, run_many
from evalsite.core.scoring.sandbox import (
    LIMITS,
    NO_CGROUP_LIMITS,
    BwrapSandbox,
    MemoryCgroups,
    find_memory_cgroups,
)
from tests.helpers.sandbox import block, next_check_works, running_processes

pytestmark = pytest.mark.serial  # cgroups, memory bounds, fork bombs: runs alone
RUN_BASH = {"run": 'bash "$ANSWER"', "timeout_s": 30}
RUN_PYTHON = {"run": 'python3 "$ANSWER"', "timeout_s": 30}
MiB = 1024**2


def mem_available() -> int:
    for line in pathlib.Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no MemAvailable in /proc/meminfo")


@contextmanager
def host_memory_drop() -> Iterator[list[int]]:
    """Yields a list that holds, afterwards, how far the host's MemAvailable fell below
    where it started, sampled every 20 ms while the block ran."""
    start = lowest = mem_available()
    done = threading.Event()

    def sample() -> None:
        nonlocal lowest
        while not done.wait(0.02):
            lowest = min(lowest, mem_available())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    drop: list[int] = []
    try:
        yield drop
    finally:
        done.set()
        sampler.join()
        drop.append(start - lowest)


def needs_cgroup(sandbox) -> MemoryCgroups:
    if sandbox.cgroups is None:
        pytest.skip("no memory cgroup can be made here: NO_CGROUP_LIMITS apply instead")
    return sandbox.cgroups


# --- disk --------------------------------------------------------------------------------

FILL = """
# the attacker's loop in /, then the same loop in each place a check may write
for dir in "" /dev/shm /tmp /work; do
  n=0
  for i in $(seq 1 150); do head -c 10000000 /dev/zero > $dir/fill$i || break; n=$i; done
  echo "filled ${dir:-/}: $n files"
done
sleep 1  # hold it all while the host looks
exit 1
"""


def test_the_fill_loop_fails_with_no_space_left_and_the_hosts_memory_stays_put(sandbox):
    with host_memory_drop() as drop:
        result = run_execution_check(block(FILL, "bash"), RUN_BASH, sandbox=sandbox)
    tail = result.output_tail
    assert result.verdict == "fail"
    assert "/fill1: Read-only file system" in tail
    assert "filled /: 0 files" in tail
    sizes = {"/dev/shm": LIMITS["shm_bytes"], "/tmp": LIMITS["tmp_bytes"]}
    for folder, size in {**sizes, "/work": LIMITS["work_bytes"]}.items():
        assert f"filled {folder}: {size // 10_000_000} files" in tail
    assert tail.count("No space left on device") == 3
    writable = LIMITS["shm_bytes"] + LIMITS["tmp_bytes"] + LIMITS["work_bytes"]
    assert drop[0] < writable + 256 * MiB  # before: 150 x 10 MB in / alone
    next_check_works(sandbox)


def test_the_root_etc_usr_and_dev_are_read_only(sandbox):
    code = """
import os
for folder in ("/", "/etc", "/usr", "/bin", "/lib", "/dev", "/check", "/dev/shm", "/tmp", "/work"):
    for make in (lambda path: open(path, "w").close(), os.mkdir):
        try:
            make(os.path.join(folder, "probe-" + make.__name__))
            print(folder, "written")
        except OSError as error:
            print(folder, error.strerror)
raise SystemExit(1)
"""
    result = run_execution_check(block(code), RUN_PYTHON, sandbox=sandbox)
    assert result.verdict == "fail"
    lines = result.output_tail.splitlines()
    for folder in ("/", "/etc", "/usr", "/bin", "/lib", "/dev", "/check"):
        assert lines.count(f"{folder} Read-only file system") == 2
    for folder in ("/dev/shm", "/tmp", "/work"):
        assert lines.count(f"{folder} written") == 2


def test_a_check_runs_under_evalsites_private_umask(sandbox):
    """evalsite's processes run with umask 077 (its files are private); the sandbox uid must
    still read the check's files."""
    before = os.umask(0o077)
    try:
        result = run_execution_check(block("print('fine')"), RUN_PYTHON, sandbox=sandbox)
    finally:
        os.umask(before)
    assert result.verdict == "pass", result.output_tail


def test_dev_shm_is_small_and_still_serves_posix_semaphores(sandbox):
    code = """
import multiprocessing
lock = multiprocessing.Lock()  # a POSIX semaphore, made in /dev/shm
with lock:
    print("semaphore ok")
written = 0
try:
    while written < 200:  # a sandbox gone wrong stops here, not at half the host's RAM
        with open(f"/dev/shm/part{written}", "wb") as part:
            part.write(b"x" * 1_000_000)
        written += 1
    print("shm took all", written, "MB")
except OSError as error:
    print("shm stopped after", written, "MB:", error.strerror)
"""
    result = run_execution_check(block(code), RUN_PYTHON, sandbox=sandbox)
    assert result.verdict == "pass"
    assert "semaphore ok" in result.output_tail
    whole_mb = LIMITS["shm_bytes"] // 1_000_000
    stopped = "shm stopped after {} MB: No space left on device"
    assert any(stopped.format(n) in result.output_tail for n in (whole_mb - 1, whole_mb))


# --- memory ------------------------------------------------------------------------------

SIX_HOLDERS = """
for n in 1 2 3 4 5 6; do
  python3 -c 'import time; held = b"x" * (300 * 1024**2); time.sleep(3); print("held 300 MiB")' &
done
held=0
for job in $(jobs -p); do wait "$job" && held=$((held + 1)); done
echo "$held of 6 held 300 MiB"
test "$held" = 6
"""


def test_processes_of_one_check_together_cannot_exceed_its_memory_bound(sandbox):
    needs_cgroup(sandbox)
    assert 6 * 300 * MiB > LIMITS["check_memory_bytes"] >= 300 * MiB
    assert 300 * MiB < LIMITS["memory_bytes"]  # each alone is within its own limit
    result = run_execution_check(block(SIX_HOLDERS, "bash"), RUN_BASH, sandbox=sandbox)
    assert result.verdict == "fail"
    held = int(result.output_tail.split(" of 6 held")[0].split()[-1])
    assert 0 < held < 6
    assert held * 300 * MiB <= LIMITS["check_memory_bytes"]
    assert "Killed" in result.output_tail
    next_check_works(sandbox)


def memory_cgroup_of(pid: int, cgroups: MemoryCgroups) -> pathlib.Path:
    """The memory cgroup process ``pid`` is in, read from the host's /proc."""
    for line in pathlib.Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        number, controllers, path = line.split(":", 2)
        if ("memory" in controllers.split(",")) if cgroups.version == 1 else number == "0":
            cgroup = pathlib.PurePosixPath(path)
            assert str(cgroups.parent).endswith(str(cgroup.parent)), (path, cgroups.parent)
            return cgroups.parent / cgroup.name
    raise AssertionError(f"process {pid} is in no memory cgroup")


def checks_cgroups(cgroups: MemoryCgroups) -> list[str]:
    return sorted(p.name for p in cgroups.parent.iterdir() if p.name.startswith("evalsite-"))


def test_each_check_runs_in_a_memory_cgroup_of_its_own_removed_after_it(sandbox):
    cgroups = needs_cgroup(sandbox)
    limit_file = "memory.limit_in_bytes" if cgroups.version == 1 else "memory.max"
    before = checks_cgroups(cgroups)
    jobs = [(block(f"sleep 2.{n}", "bash"), RUN_BASH) for n in (1, 2)]
    seen: dict[str, tuple[pathlib.Path, str]] = {}  # its cgroup and that cgroup's limit

    def look() -> None:
        deadline = time.monotonic() + 5
        while len(seen) < 2 and time.monotonic() < deadline:
            for process in running_processes(cmdline="sleep 2."):
                pid, *_, command = process.split()
                if command in ("2.1", "2.2") and command not in seen:
                    cgroup = memory_cgroup_of(int(pid), cgroups)
                    seen[command] = cgroup, (cgroup / limit_file).read_text().strip()
            time.sleep(0.05)

    looker = threading.Thread(target=look)
    looker.start()
    results = run_many(jobs, sandbox=sandbox, max_workers=2)
    looker.join()
    assert [r.verdict for r in results] == ["pass", "pass"]
    assert sorted(seen) == ["2.1", "2.2"]
    (first, first_limit), (second, second_limit) = seen["2.1"], seen["2.2"]
    assert first != second
    assert first.name.startswith("evalsite-check-") and second.name.startswith("evalsite-check-")
    assert first_limit == second_limit == str(LIMITS["check_memory_bytes"])
    assert not first.exists() and not second.exists()
    assert checks_cgroups(cgroups) == before


def test_a_cgroup_that_cannot_be_made_is_an_error_not_a_check_without_bounds(tmp_path):
    sandbox = BwrapSandbox(MemoryCgroups(tmp_path / "no-such-cgroup", 1))
    result = run_execution_check(block("print(1)"), RUN_PYTHON, sandbox=sandbox)
    assert result.verdict == "error"
    assert result.note.startswith("the sandbox could not start: ")


# --- without a memory cgroup ------------------------------------------------------------


def test_without_a_memory_cgroup_checks_get_fewer_processes_and_less_memory_each(tmp_path):
    assert find_memory_cgroups(root=tmp_path) is None  # no memory controller there
    sandbox = BwrapSandbox(None)
    assert NO_CGROUP_LIMITS["memory_bytes"] < LIMITS["memory_bytes"]
    assert NO_CGROUP_LIMITS["processes"] < LIMITS["processes"]
    size = NO_CGROUP_LIMITS["memory_bytes"] + 100 * MiB
    code = f"""
import os
try:
    hog = b"x" * {size}
    print("ALLOCATED")
except MemoryError:
    print("refused")
children = 0
while True:
    try:
        pid = os.fork()
    except OSError:
        raise SystemExit(f"forks refused after {{children}}")
    if pid == 0:
        import time
        time.sleep(30)
        os._exit(0)
    children += 1
"""
    result = run_execution_check(block(code), RUN_PYTHON, sandbox=sandbox)
    assert result.verdict == "fail"
    assert "refused\n" in result.output_tail
    assert "ALLOCATED" not in result.output_tail
    refused = int(result.output_tail.split("forks refused after ")[1].split()[0])
    assert refused < NO_CGROUP_LIMITS["processes"]


def test_on_cgroup_v2_check_cgroups_go_under_this_processes_own_cgroup(tmp_path):
    membership = tmp_path / "self-cgroup"
    membership.write_text("0::/system.slice/evalsite.service\n")
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    own = tmp_path / "system.slice" / "evalsite.service"
    own.mkdir(parents=True)
    (own / "cgroup.subtree_control").write_text("")
    found = find_memory_cgroups(root=tmp_path, membership=membership)
    assert found == MemoryCgroups(own, 2)
    assert (own / "cgroup.subtree_control").read_text() == "+memory"
    (probe,) = own.glob("evalsite-check-*")  # a plain folder here: it stays
    assert (probe / "memory.max").read_text() == str(LIMITS["check_memory_bytes"])
