"""`evalsite serve`: migrate, load defaults, then run a worker and the web server."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

from django.conf import settings

from evalsite.management import EvalsiteCommand
from runs.setup import ensure_admin, ensure_demo_suite


class Command(EvalsiteCommand):
    help = "Start evalsite: the web app on 127.0.0.1:8000 and one background worker."
    requires_system_checks = "__all__"  # it serves the pages: every check

    def add_arguments(self, parser):
        parser.add_argument(
            "--host", default="127.0.0.1", help="Address to bind (default 127.0.0.1)."
        )
        parser.add_argument("--port", type=int, default=8000, help="Port (default 8000).")
        parser.add_argument("--threads", type=int, default=8, help="Web server threads.")
        parser.add_argument("--no-worker", action="store_true", help="Do not start a worker.")

    def handle(self, *args, host: str, port: int, threads: int, no_worker: bool, **options):
        if ensure_demo_suite():
            self.stdout.write("Registered the demo suite support-desk.")
        password = ensure_admin()
        if password:
            self.stdout.write(
                "\nCreated the first user. Log in with these credentials (shown only once):\n"
                f"  username: admin\n  password: {password}\n"
            )
        self._warn_about_host(host)
        worker = None if no_worker else self._start_worker()
        try:
            self._serve(host, port, threads)
        except KeyboardInterrupt:
            # Waitress stops on Ctrl-C inside its loop; this is the Ctrl-C that lands between
            # "serving on" and the loop (a busy machine, a script that signals at once): the
            # same clean stop, not "interrupted" and exit 3.
            pass
        finally:
            if worker is not None:
                self._stop_worker(worker)
        self.stdout.write("evalsite stopped.")

    def check_migrations(self) -> None:
        self._keep_data_dir_private(Path(settings.DATA_DIR))  # before the database is prepared
        super().check_migrations()

    def _keep_data_dir_private(self, data_dir: Path) -> None:
        if is_shared_folder(data_dir):
            self.stderr.write(
                f"note: the data dir {data_dir} is a shared folder; left as it is. Set "
                "EVALSITE_DATA_DIR to a folder of its own."
            )
        try:
            changed = tighten_data_dir(data_dir)
        except OSError as error:
            self.stderr.write(f"note: could not make the data dir private: {error}")
            return
        if changed:
            listed = ", ".join(changed)
            self.stdout.write(f"Made {data_dir} private (other users could read it): {listed}")

    def _warn_about_host(self, host: str) -> None:
        if host not in {"127.0.0.1", "localhost", "::1"} and host not in settings.ALLOWED_HOSTS:
            self.stderr.write(
                f"note: {host} is not in EVALSITE_ALLOWED_HOSTS; set it to the names "
                "people will use to reach this machine."
            )

    def _start_worker(self) -> subprocess.Popen:
        # Its own session, so a Ctrl-C in the terminal reaches serve alone and the worker
        # gets exactly one signal, serve's SIGTERM. django-q2 handles SIGINT and SIGTERM in
        # the same handler, which deadlocks when the second arrives while the first is
        # still setting the cluster's stop event (the worker's processes were then left
        # running after serve had exited).
        # And stopped (SIGTERM, gracefully) if serve itself dies without stopping it: killed
        # outright or by the OOM killer, serve cannot, and the worker ran on, orphaned.
        command = [sys.executable, "-m", "evalsite", "worker", "--stop-with", str(os.getpid())]
        return subprocess.Popen(command, start_new_session=True)

    def _stop_worker(self, worker: subprocess.Popen) -> None:
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=settings.EVALSITE_WORKER_STOP_GRACE_S + 20)
        except subprocess.TimeoutExpired:
            # Its own session: the group is the worker and its cluster (not yet reaped, so
            # the id cannot have been reused).
            with contextlib.suppress(ProcessLookupError):
                os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()

    def _serve(self, host: str, port: int, threads: int) -> None:
        from waitress.server import create_server

        from evalsite.wsgi import application

        server = create_server(application, host=host, port=port, threads=threads, ident="evalsite")
        signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
        # Ctrl-C stops serve however it was started: a background job of a non-interactive
        # shell inherits SIGINT ignored, Python then leaves it ignored, and serve ran on
        # through every Ctrl-C and `kill -INT`.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        self.stdout.write(f"evalsite is serving on http://{host}:{port}/  (Ctrl-C stops it)")
        self.stdout.flush()
        server.run()


def _raise_keyboard_interrupt(signum, frame):
    raise KeyboardInterrupt


# In the data dir, what must be the owner's alone: the database (session keys, password
# hashes) with its WAL files, and the generated secret key.
PRIVATE_FILES = (
    "evalsite.sqlite3",
    "evalsite.sqlite3-wal",
    "evalsite.sqlite3-shm",
    "evalsite.sqlite3-journal",
    "secret_key",
)


def tighten_data_dir(data_dir: Path) -> list[str]:
    """Take group and other permissions off the data dir, its reports folder and the files
    in PRIVATE_FILES (a data dir made by an older evalsite or by hand); what changed, as
    "name 0644 -> 0600". A shared folder (see is_shared_folder) keeps its own mode."""
    paths = [data_dir, data_dir / "reports", *(data_dir / name for name in PRIVATE_FILES)]
    changed = []
    for path in paths:
        if path == data_dir and is_shared_folder(path):
            continue
        try:
            mode = stat.S_IMODE(path.lstat().st_mode)
        except FileNotFoundError:
            continue
        if mode & 0o077 and not path.is_symlink():
            path.chmod(mode & ~0o077)
            changed.append(f"{path.name} {mode:04o} -> {mode & ~0o077:04o}")
    return changed


def is_shared_folder(path: Path) -> bool:
    """A folder others may write in (/tmp, a sticky or world-writable one): never chmod it."""
    mode = path.stat().st_mode
    return bool(mode & (stat.S_ISVTX | stat.S_IWOTH))
