"""Where execution checks run: bubblewrap, or (only when the operator opted out) nothing.

A :class:`Job` is one fenced block's check: the ``setup`` and ``run`` bash snippets, the
block's code (written to ``$ANSWER``) and the whole answer (``$ANSWER_TEXT``). Both phases
run in ONE sandbox invocation, in a fresh working directory, driven by a small bash script:
it writes the answer file, runs ``setup``, reports setup's exit status on a pipe that only
it holds (so the answer cannot forge "setup failed"), closes that pipe and execs ``run``.
``timeout_s`` bounds the two phases together.

:class:`BwrapSandbox` runs (see :meth:`BwrapSandbox.argv` and docs/checks.md)::

    sh -c 'echo $$ > "$1" && shift && exec "$@"' evalsite-cgroup CGROUP/cgroup.procs
                                                         (only with a memory cgroup)
    setpriv --pdeathsig=KILL -- timeout -k 2 T
      setpriv --reuid=65534 --regid=65534 --clear-groups            (only when we are root)
      bwrap --unshare-all --unshare-user --disable-userns --die-with-parent --new-session
        --cap-drop ALL --hostname sandbox --clearenv --setenv PATH /usr/bin:/bin
        --setenv HOME /work --setenv LANG C.UTF-8 --ro-bind /usr /usr
        --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64
        --ro-bind-try /etc/alternatives /etc/alternatives --proc /proc --dev /dev
        --size 16777216 --tmpfs /dev/shm --remount-ro /dev
        --size 67108864 --tmpfs /tmp --size 67108864 --tmpfs /work
        --ro-bind JOBDIR /check --remount-ro / --chdir /work --
      prlimit --as=1073741824 --fsize=10485760 --nofile=256 --nproc=64 --cpu=T+1 --
      bash /check/driver.sh

Root starts bwrap through setpriv because ``prlimit --nproc`` is not enforced while the real
uid is root (FIELD-NOTES). The process limit counts per user namespace, so concurrent checks
sharing uid 65534 do not eat each other's budget (measured: a fork bomb at its limit next
to a check forking 20 times, both finished normally).

bwrap's own root, and the ``/dev`` it makes, are tmpfs with no size (half the host's RAM):
both are remounted read-only, so the only writable places are the three sized tmpfs. A
check's total memory (its processes and its tmpfs pages) is bounded by a memory cgroup made
for it under this process's own cgroup and removed after it (:class:`MemoryCgroups`); where
none can be made, the check runs with :data:`NO_CGROUP_LIMITS` - fewer processes, less
address space each - which bounds the plain case but not memory held outside processes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from evalsite.core.scoring.process import Captured, run_captured

__all__ = [
    "ANSWER_TEXT_MAX_BYTES", "BwrapSandbox", "Job", "LIMITS", "MemoryCgroups",
    "NO_CGROUP_LIMITS", "NoSandbox", "OPT_OUT_SETTING", "Outcome", "Sandbox",
    "SandboxUnavailable", "detect_sandbox", "find_memory_cgroups",
]  # fmt: skip

OPT_OUT_SETTING = "EVALSITE_UNSAFE_NO_SANDBOX"
TOOL_PATH = "/usr/bin:/bin"  # the only PATH the sandbox commands are looked up in
SANDBOX_UID = 65534
ANSWER_TEXT_MAX_BYTES = 100_000  # an environment string must stay under 128 KiB
OUTPUT_TAIL_BYTES = 4096
OUTPUT_MAX_READ = 4 * 1024 * 1024
KILL_GRACE_S = 2
LIMITS = {
    "memory_bytes": 1024**3,  # address space per process (prlimit --as)
    "check_memory_bytes": 1024**3,  # all of a check's processes and tmpfs (memory cgroup)
    "file_bytes": 10 * 1024**2,  # largest file a process may write (--fsize)
    "open_files": 256,  # per process (--nofile)
    "processes": 64,  # per check (--nproc, counted in the check's user namespace)
    "work_bytes": 64 * 1024**2,  # the /work tmpfs
    "tmp_bytes": 64 * 1024**2,  # the /tmp tmpfs
    "shm_bytes": 16 * 1024**2,  # the /dev/shm tmpfs
}
# where no memory cgroup can be made: processes x address space is the worst case (8 GiB)
NO_CGROUP_LIMITS = {**LIMITS, "memory_bytes": 512 * 1024**2, "processes": 16}
CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_REMOVE_S = 5.0  # the kernel takes a moment to let a dead check's cgroup go
# How long removing a check's cgroup first waits when it is still busy, doubled at each try
# up to CGROUP_RETRY_MAX_S. Its last processes leave it within a millisecond or two of the
# check's end; a first wait of 20 ms held each check's slot that much longer about every
# other check (docs/performance.md, start-up, fourth round).
CGROUP_RETRY_S, CGROUP_RETRY_MAX_S = 0.001, 0.02
_ENTER_CGROUP = 'echo $$ > "$1" && shift && exec "$@"'
_DRIVER = """\
IFS= read -r -d '' ANSWER_TEXT < {check}/answer_text
export ANSWER_TEXT ANSWER={work}/{name}
cat {check}/{name} > "$ANSWER"
status=0
if [ -s {check}/setup.sh ]; then bash {check}/setup.sh < /dev/null; status=$?; fi
echo "$status" >&{fd}
exec {fd}>&-
if [ "$status" != 0 ]; then exit 0; fi
exec bash {check}/run.sh < /dev/null
"""


class SandboxUnavailable(RuntimeError):
    """No working sandbox and no opt-out: execution checks must not run."""


@dataclass(frozen=True)
class Job:
    run: str
    setup: str = ""
    code: str = ""
    filename: str = "answer"
    answer_text: str = ""
    timeout_s: float = 30.0


@dataclass(frozen=True)
class Outcome:
    """How far the job got. ``phase`` "start": the sandbox or the driver never reported
    setup's status (it failed to start, or setup was still running at the timeout);
    "setup": setup exited with ``exit_code`` != 0; "run": ``exit_code`` is run's."""

    phase: Literal["start", "setup", "run"]
    exit_code: int | None
    timed_out: bool
    output_tail: str
    output_cut: bool
    duration_ms: int


class Sandbox(Protocol):
    isolation: str  # "bwrap" or "none", shown in the report

    def run(self, job: Job) -> Outcome: ...


class _Base:
    isolation = "none"

    def run(self, job: Job) -> Outcome:
        # TemporaryDirectory's cleanup also resets permissions a check took away
        temp = tempfile.TemporaryDirectory(prefix="evalsite-check-", ignore_cleanup_errors=True)
        with temp as root, self._bounds() as enter:
            check_dir, work_dir = Path(root, "check"), Path(root, "work")
            status_read, status_write = os.pipe()
            try:
                _write_job(job, check_dir, self._paths(check_dir, work_dir), status_write)
                work_dir.mkdir()
                argv, env = self._command(job, check_dir, work_dir)
            except BaseException:
                os.close(status_read)
                os.close(status_write)
                raise
            captured = run_captured(
                [*enter, *argv],
                env=env,
                cwd=str(work_dir),
                deadline_s=job.timeout_s + KILL_GRACE_S + 3,
                status_pipe=(status_read, status_write),
                tail_bytes=OUTPUT_TAIL_BYTES,
                max_read=OUTPUT_MAX_READ,
            )
        return _outcome(captured, job.timeout_s)

    def _bounds(self) -> AbstractContextManager[tuple[str, ...]]:
        """The command prefix that puts a job into its resource bounds, for the job's life."""
        return contextlib.nullcontext(())

    def _paths(self, check_dir: Path, work_dir: Path) -> tuple[str, str]:
        return str(check_dir), str(work_dir)

    def _command(
        self, job: Job, check_dir: Path, work_dir: Path
    ) -> tuple[list[str], dict[str, Any]]:
        raise NotImplementedError


class BwrapSandbox(_Base):
    """bubblewrap, as uid 65534, no network, an empty environment but for the allow-list.

    With ``cgroups``, each job runs in a memory cgroup of its own holding the whole check
    to ``LIMITS["check_memory_bytes"]``; without, under :data:`NO_CGROUP_LIMITS`.
    """

    isolation = "bwrap"

    def __init__(self, cgroups: MemoryCgroups | None = None) -> None:
        self.cgroups = cgroups
        self.limits = LIMITS if cgroups is not None else NO_CGROUP_LIMITS

    @contextlib.contextmanager
    def _bounds(self) -> Iterator[tuple[str, ...]]:
        if self.cgroups is None:
            yield ()
            return
        cgroup = self.cgroups.create(self.limits["check_memory_bytes"])
        try:
            # the first process enters the cgroup before it execs the rest, so every
            # process of the check starts inside it; as uid 65534 none can leave it
            yield ("sh", "-c", _ENTER_CGROUP, "evalsite-cgroup", str(cgroup / "cgroup.procs"))
        finally:
            self.cgroups.remove(cgroup)

    def _paths(self, check_dir: Path, work_dir: Path) -> tuple[str, str]:
        return "/check", "/work"

    def _command(
        self, job: Job, check_dir: Path, work_dir: Path
    ) -> tuple[list[str], dict[str, Any]]:
        check_dir.parent.chmod(0o711)  # bwrap runs as the sandbox uid and must reach it
        return self.argv(job.timeout_s, str(check_dir)), {"PATH": TOOL_PATH}

    def argv(self, timeout_s: float, check_dir: str) -> list[str]:
        """The command line for a job whose files are in ``check_dir`` (inside the memory
        cgroup, when there is one: see :meth:`_bounds`)."""
        limits = self.limits
        as_root = os.geteuid() == 0
        switch = ["setpriv", f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups"]
        uid = [] if as_root else ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
        return [
            *("setpriv", "--pdeathsig=KILL", "--", "timeout", "-k", str(KILL_GRACE_S)),
            _seconds(timeout_s),
            *(switch if as_root else []),
            *("bwrap", "--unshare-all", "--unshare-user", "--disable-userns", *uid),
            *("--die-with-parent", "--new-session", "--cap-drop", "ALL"),
            *("--hostname", "sandbox", "--clearenv", "--setenv", "PATH", "/usr/bin:/bin"),
            *("--setenv", "HOME", "/work", "--setenv", "LANG", "C.UTF-8"),
            *("--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin"),
            *("--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64"),
            *("--ro-bind-try", "/etc/alternatives", "/etc/alternatives"),
            *("--proc", "/proc", "--dev", "/dev"),
            *("--size", str(limits["shm_bytes"]), "--tmpfs", "/dev/shm"),  # noqa: S108 - ours
            *("--remount-ro", "/dev"),  # bwrap's /dev is an unsized tmpfs
            *("--size", str(limits["tmp_bytes"]), "--tmpfs", "/tmp"),  # noqa: S108 - its own tmpfs
            *("--size", str(limits["work_bytes"]), "--tmpfs", "/work"),
            *("--ro-bind", check_dir, "/check", "--remount-ro", "/", "--chdir", "/work", "--"),
            *("prlimit", f"--as={limits['memory_bytes']}", f"--fsize={limits['file_bytes']}"),
            *(f"--nofile={limits['open_files']}", f"--nproc={limits['processes']}"),
            *(f"--cpu={int(timeout_s) + 1}", "--", "bash", "/check/driver.sh"),
        ]


@dataclass(frozen=True)
class MemoryCgroups:
    """Where each check's memory cgroup is made: ``parent``, a directory of the cgroup v1
    memory hierarchy, or of cgroup v2 with the memory controller on for its children."""

    parent: Path
    version: Literal[1, 2]

    def create(self, limit_bytes: int) -> Path:
        """A new, empty cgroup whose processes together may hold ``limit_bytes`` of memory
        (their tmpfs pages and swap included); past it the kernel's OOM killer kills in it."""
        path = self.parent / f"evalsite-check-{uuid.uuid4().hex}"
        path.mkdir()
        try:
            for name, value, required in self._settings(limit_bytes):
                if required or (path / name).exists():
                    (path / name).write_text(value)
        except OSError:
            self.remove(path)
            raise
        return path

    def _settings(self, limit_bytes: int) -> list[tuple[str, str, bool]]:
        if self.version == 1:
            # memory + swap may not be set below memory, so it comes second
            return [
                ("memory.limit_in_bytes", str(limit_bytes), True),
                ("memory.memsw.limit_in_bytes", str(limit_bytes), False),
            ]
        return [
            ("memory.max", str(limit_bytes), True),
            ("memory.swap.max", "0", False),
            ("memory.oom.group", "1", False),  # an OOM kill takes the whole check
        ]

    @staticmethod
    def remove(path: Path) -> None:
        """Remove ``path`` once the processes in it are gone (a dead check's may still be
        exiting); left in place if that takes longer than ``CGROUP_REMOVE_S``."""
        deadline = time.monotonic() + CGROUP_REMOVE_S
        wait = CGROUP_RETRY_S
        while True:
            try:
                path.rmdir()
            except OSError as error:
                if error.errno == errno.EBUSY and time.monotonic() < deadline:
                    time.sleep(wait)
                    wait = min(2 * wait, CGROUP_RETRY_MAX_S)
                    continue
            return


def find_memory_cgroups(
    root: Path = CGROUP_ROOT, membership: Path = Path("/proc/self/cgroup")
) -> MemoryCgroups | None:
    """Memory cgroups for checks, made under the cgroup this process is in (so a check
    stays inside whatever bounds the server itself runs under); None when they cannot be
    made here (no memory controller, not allowed, or cgroup v2 refusing to turn it on)."""
    try:
        own = membership.read_text()
        if (root / "memory" / "memory.limit_in_bytes").exists():
            found = MemoryCgroups(root / "memory" / _own_cgroup(own, "memory"), 1)
        elif "memory" in (root / "cgroup.controllers").read_text().split():
            found = MemoryCgroups(root / _own_cgroup(own, ""), 2)
            control = found.parent / "cgroup.subtree_control"
            if "memory" not in control.read_text().split():
                control.write_text("+memory")
        else:
            return None
        found.remove(found.create(LIMITS["check_memory_bytes"]))
    except (OSError, ValueError):
        return None
    return found


def _own_cgroup(membership: str, controller: str) -> str:
    """This process's cgroup, relative, from /proc/self/cgroup's text: the v1 hierarchy
    holding ``controller``, or with ``controller`` "" the v2 one (``0::/path``)."""
    for line in membership.splitlines():
        number, controllers, path = line.split(":", 2)
        if controller in controllers.split(",") or (not controller and number == "0"):
            return path.lstrip("/")
    raise ValueError(f"no {controller or 'cgroup v2'} line in /proc/self/cgroup")


class NoSandbox(_Base):
    """A plain subprocess in a temp dir with the allow-listed environment and a timeout.

    No isolation at all: the code can read and write what the server's user can, and reach
    the network. Only for operators who set EVALSITE_UNSAFE_NO_SANDBOX.
    """

    isolation = "none"

    def _command(
        self, job: Job, check_dir: Path, work_dir: Path
    ) -> tuple[list[str], dict[str, Any]]:
        env = {"PATH": TOOL_PATH, "HOME": str(work_dir), "LANG": "C.UTF-8"}
        argv = ["timeout", "-k", str(KILL_GRACE_S), _seconds(job.timeout_s)]
        return [*argv, "bash", str(check_dir / "driver.sh")], env


def _write_job(job: Job, check_dir: Path, paths: tuple[str, str], status_fd: int) -> None:
    check, work = (shlex.quote(path) for path in paths)
    text = job.answer_text.replace("\0", "").encode("utf-8", "replace")
    files = {
        "driver.sh": _DRIVER.format(
            check=check, work=work, name=shlex.quote(job.filename), fd=status_fd
        ),
        "setup.sh": job.setup,
        "run.sh": job.run,
        job.filename: job.code,
    }
    check_dir.mkdir()
    check_dir.chmod(0o755)  # explicit: evalsite runs under umask 077 (docs/configuration.md)
    for name, content in files.items():
        (check_dir / name).write_bytes(content.encode("utf-8", "replace"))
    (check_dir / "answer_text").write_bytes(
        text[:ANSWER_TEXT_MAX_BYTES].decode("utf-8", "ignore").encode()
    )
    for path in check_dir.iterdir():
        path.chmod(0o444)


def _outcome(captured: Captured, timeout_s: float) -> Outcome:
    timed_out = captured.returncode is None or (
        captured.returncode in (124, 128 + 9) and captured.duration_s >= timeout_s
    )
    status = captured.status.decode("ascii", "replace").strip()
    phase: Literal["start", "setup", "run"]
    if not status.isdigit():
        phase, exit_code = "start", captured.returncode
    elif status != "0":
        phase, exit_code, timed_out = "setup", int(status), False
    else:
        phase, exit_code = "run", captured.returncode
    tail = captured.tail.decode("utf-8", "replace")
    if len(captured.tail) == OUTPUT_TAIL_BYTES:
        tail = tail.lstrip("\ufffd")  # the cut may have split a character
    if captured.cut:
        tail += f"\n[evalsite: output cut - stopped reading after {OUTPUT_MAX_READ} bytes]"
    duration_ms = round(captured.duration_s * 1000)
    return Outcome(phase, exit_code, timed_out, tail, captured.cut, duration_ms)


def _seconds(timeout_s: float) -> str:
    return f"{timeout_s:g}s"


def detect_sandbox(opt_out: bool) -> Sandbox:
    """The sandbox execution checks run in: bubblewrap when it works here; else NoSandbox
    if the operator opted out (``EVALSITE_UNSAFE_NO_SANDBOX``); else SandboxUnavailable
    saying why. bubblewrap is used whenever it works, opt-out or not."""
    candidate = BwrapSandbox(find_memory_cgroups())
    problem = _bwrap_problem(candidate)
    if problem is None:
        return candidate
    if opt_out:
        return NoSandbox()
    raise SandboxUnavailable(
        f"execution checks need a sandbox and bubblewrap is not usable here: {problem}. "
        "Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) and allow "
        f"unprivileged user namespaces, or set {OPT_OUT_SETTING}=1 to run checks with no "
        "isolation at all (the answer's code can then read your keys and files and reach "
        "the network)"
    )


def _bwrap_problem(sandbox: BwrapSandbox) -> str | None:
    """None when a smoke job runs in ``sandbox`` as the sandbox uid with no network."""
    tools = ["bwrap", "timeout", "prlimit", "setpriv", "bash", "sh"]
    missing = [tool for tool in tools if shutil.which(tool, path=TOOL_PATH) is None]
    if missing:
        return f"{', '.join(missing)} not found in {TOOL_PATH}"
    # as the sandbox uid, and no network interface but loopback
    probe = (
        f'test "$(id -u)" = {SANDBOX_UID} && '
        '! grep -v -e "|" -e "^ *lo:" /proc/net/dev && echo sandbox-ok'
    )
    try:
        outcome = sandbox.run(Job(run=probe, timeout_s=10))
    except OSError as error:
        return f"bwrap could not start: {error}"
    if outcome.exit_code != 0 or "sandbox-ok" not in outcome.output_tail:
        return f"a test job failed: {outcome.output_tail.strip()[-300:] or outcome.exit_code}"
    return None
