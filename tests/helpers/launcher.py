"""`evalsite` commands forked from a process that imported their libraries once.

A command the tests start spends most of its time importing Django, Jinja2, jsonschema,
httpx, numpy and the rest before it reads its first argument (about 0.5 s of CPU here),
and the tests start a few hundred. So :func:`run` asks a launcher, one per pytest worker,
that imported those libraries at its start, to fork the command: the child takes the
test's environment, working directory, stdin, stdout and stderr, and then runs
`evalsite.console.main` exactly as the console script does, and exits through the
interpreter's own exit (threads joined, atexit run). No settings, and nothing
is imported before the fork but libraries and evalsite's pure core: a module that read the
environment as it is imported would read the launcher's, so only modules that read it when
called are preloaded (tests/core/test_import_reads_no_environment.py holds the core to it).

Tests of a process as such (signals, process groups, a first start) start the console
script itself; this is for commands whose output and exit status are the subject.

The protocol, over a Unix socket: the test sends one JSON line (argv, env, cwd) with its
three stdio descriptors; a handler forked for that request forks the command, sends its
pid as a line, waits for it, and sends its exit status (negative: the signal that ended
it, as `subprocess` reports it).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import pkgutil
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Imported before any fork: libraries only, each reading the environment when called.
PRELOAD = (
    "asyncio",
    "decimal",
    "email.message",
    "sqlite3",
    "django.core.management",
    "django.db.models",
    "django.http",
    "django.urls",
    "django.template",
    "django.core.serializers.json",
    "django.contrib.auth.hashers",
    "jinja2",
    "jinja2.sandbox",
    "jsonschema",
    "referencing",
    "yaml",
    "httpx",
    "aiohttp",
    "numpy",
)


def serve(path: str) -> bool:
    """The launcher: preload, then fork a handler per connection until stdin closes. True
    only in a command's process, which then runs :func:`command`."""
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    import evalsite.core  # the pure core: no Django, no environment read as it is imported

    for module in pkgutil.walk_packages(evalsite.core.__path__, "evalsite.core."):
        importlib.import_module(module.name)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(sys.stdin, selectors.EVENT_READ)  # the test process's end of a pipe
    while True:
        for key, _ in selector.select(timeout=1.0):
            if key.fileobj is sys.stdin:
                return False  # the pytest worker has gone: so do we
            connection, _ = listener.accept()
            if os.fork() == 0:
                listener.close()
                selector.close()
                _handle(connection)  # returns only in the command's process
                return True
            connection.close()
        _reap()


def _reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _handle(connection: socket.socket) -> None:
    """In a handler: read the request, fork the command and report on it. Returns only in
    the command's process, ready to run it; the handler itself exits here."""
    message, fds, _, _ = socket.recv_fds(connection, 1 << 16, 3)
    while not message.endswith(b"\n"):  # a stream: the line may come in parts
        part = connection.recv(1 << 16)
        if not part:  # the test went away mid-request
            os._exit(1)
        message += part
    request = json.loads(message)
    pid = os.fork()
    if pid == 0:
        connection.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        sys.argv = ["evalsite", *request["args"]]
        # sys.path as the console script's own: its folder first, then PYTHONPATH.
        extra = [entry for entry in request["env"].get("PYTHONPATH", "").split(os.pathsep) if entry]
        sys.path[0:1] = [str(Path(sys.executable).parent), *extra]
        os.setpgid(0, 0)  # a group of its own, which a timeout kills whole
        return
    for fd in fds:
        os.close(fd)
    with contextlib.suppress(OSError):  # a test that timed out has stopped listening
        connection.sendall(f"{pid}\n".encode())
        _, status = os.waitpid(pid, 0)
        connection.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
    os._exit(0)


def command() -> None:
    """The command's process, after the fork: the console script's main, and its exit."""
    from evalsite.console import main

    main()


@cache
def _launcher() -> str:
    """The socket path of this process's launcher, started on first use."""
    folder = tempfile.mkdtemp(prefix="evalsite-launcher-")
    path = os.path.join(folder, "socket")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "EVALSITE_"))}
    env["OPENBLAS_NUM_THREADS"] = env["OMP_NUM_THREADS"] = "1"  # no pool threads to fork
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import {__name__} as launcher\nif launcher.serve({path!r}): launcher.command()",
        ],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "ready\n", "the test launcher did not start"

    def stop() -> None:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(10)

    atexit.register(stop)
    return path


def run(
    args: list[str],
    *,
    env: dict[str, str],
    cwd: Path | str = ROOT,
    timeout: float = 120,
    input: str | None = None,
    text: bool = True,
) -> subprocess.CompletedProcess:
    """`evalsite ARGS` as `subprocess.run(..., capture_output=True, text=text)` would give
    it; ``input`` is its stdin (else nothing: /dev/null)."""
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    if input is None:
        stdin = os.open(os.devnull, os.O_RDONLY)
    else:  # a few answers to prompts: well inside a pipe's buffer
        stdin, stdin_write = os.pipe()
        os.write(stdin_write, input.encode())
        os.close(stdin_write)
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(_launcher())
        request = json.dumps({"args": list(args), "env": env, "cwd": str(cwd)}).encode() + b"\n"
        socket.send_fds(connection, [request], [stdin, out_write, err_write])
    finally:
        for fd in (stdin, out_write, err_write):
            os.close(fd)
    replies = connection.makefile("r")
    connection.settimeout(timeout)
    pid: int | None = None
    try:
        pid = int(replies.readline())
        out, err = _read_both(out_read, err_read, timeout)
        returncode = int(replies.readline())
    except TimeoutError:
        _kill(pid)
        raise subprocess.TimeoutExpired(["evalsite", *args], timeout) from None
    finally:
        replies.close()
        connection.close()
        os.close(out_read)
        os.close(err_read)
    if text:
        return subprocess.CompletedProcess(["evalsite", *args], returncode, _text(out), _text(err))
    return subprocess.CompletedProcess(["evalsite", *args], returncode, out, err)


def _kill(pid: int | None) -> None:
    if pid:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)


def _read_both(out_fd: int, err_fd: int, timeout: float) -> tuple[bytes, bytes]:
    """Both pipes to their ends, read together (a full pipe would stop the command); the
    caller closes them."""
    chunks: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
    selector = selectors.DefaultSelector()
    for fd in chunks:
        os.set_blocking(fd, False)
        selector.register(fd, selectors.EVENT_READ)
    try:
        while selector.get_map():
            ready = selector.select(timeout)
            if not ready:
                raise TimeoutError
            for key, _ in ready:
                data = os.read(key.fd, 1 << 16)
                if data:
                    chunks[key.fd].append(data)
                else:
                    selector.unregister(key.fd)
    finally:
        selector.close()
    return b"".join(chunks[out_fd]), b"".join(chunks[err_fd])


def _text(data: bytes) -> str:
    """Bytes as `subprocess`'s text mode reads them: decoded, with universal newlines."""
    return data.decode().replace("\r\n", "\n").replace("\r", "\n")
