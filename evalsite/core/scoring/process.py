"""Run one sandbox command: bounded output, a status pipe, a hard deadline, no leftovers.

:func:`run_captured` is the plain-subprocess part both sandboxes share. It never holds more
than ``tail_bytes`` of output in memory and stops reading after ``max_read`` bytes (closing
the pipe, so a writer that keeps going gets SIGPIPE). It starts the command in a new
session; when the command exits, or at the hard deadline, it SIGKILLs that whole process
group before reaping the leader (so the group id cannot have been reused), then drains what
is left in the pipes for at most a second.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Captured", "run_captured"]

DRAIN_S = 1.0
CHUNK = 65536
STATUS_BYTES = 64  # the status pipe carries one small number


@dataclass(frozen=True)
class Captured:
    """``returncode`` is None when the hard deadline killed the command."""

    returncode: int | None
    tail: bytes
    read: int
    cut: bool
    status: bytes
    duration_s: float


class _Reader:
    def __init__(self, tail_bytes: int, max_read: int) -> None:
        self.tail = bytearray()
        self.read = 0
        self.cut = False
        self.status = bytearray()
        self._tail_bytes = tail_bytes
        self._max_read = max_read

    def output(self, data: bytes) -> bool:
        """Keep the tail of ``data``; False once ``max_read`` bytes have been read."""
        self.read += len(data)
        self.tail += data
        del self.tail[: -self._tail_bytes]
        self.cut = self.read >= self._max_read
        return not self.cut


def run_captured(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str,
    deadline_s: float,
    status_pipe: tuple[int, int],
    tail_bytes: int,
    max_read: int,
) -> Captured:
    """Run ``argv`` with stdout and stderr combined; ``status_pipe`` (read, write) is a pipe
    whose write end the command inherits; both ends are closed here."""
    status_read, status_write = status_pipe
    start = time.monotonic()
    try:
        process = subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=(status_write,),
            start_new_session=True,
        )
    except OSError:
        os.close(status_read)
        raise
    finally:
        os.close(status_write)
    reader = _Reader(tail_bytes, max_read)
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector, contextlib.ExitStack() as closing:
        pidfd = os.pidfd_open(process.pid)
        closing.callback(os.close, pidfd)
        closing.callback(os.close, status_read)
        closing.callback(process.stdout.close)
        selector.register(process.stdout, selectors.EVENT_READ, "out")
        selector.register(status_read, selectors.EVENT_READ, "status")
        selector.register(pidfd, selectors.EVENT_READ, "exit")
        exited = _pump(selector, reader, start + deadline_s)
        _kill_group(process.pid)
        returncode: int | None = process.wait()
        if not exited:
            returncode = None
        selector.unregister(pidfd)
        _pump(selector, reader, time.monotonic() + DRAIN_S)
    return Captured(
        returncode,
        bytes(reader.tail),
        reader.read,
        reader.cut,
        bytes(reader.status),
        time.monotonic() - start,
    )


def _pump(selector: selectors.BaseSelector, reader: _Reader, until: float) -> bool:
    """Read until the process exits (True), the pipes close, or ``until`` passes (False)."""
    while selector.get_map():
        remaining = until - time.monotonic()
        if remaining <= 0:
            return False
        for key, _ in selector.select(remaining):
            if key.data == "exit":
                return True
            data = os.read(key.fd, CHUNK)
            if key.data == "status":
                reader.status += data[: max(0, STATUS_BYTES - len(reader.status))]
            keep = bool(data) and (key.data == "status" or reader.output(data))
            if not keep:
                selector.unregister(key.fileobj)
                if key.data == "out" and data:
                    key.fileobj.close()  # type: ignore[union-attr]  # stop the writer
    return False


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
