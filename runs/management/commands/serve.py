"""`evalsite serve`: migrate, load defaults, then run a worker and the web server."""

from __future__ import annotations

import signal
import subprocess
import sys

from django.conf import settings
from django.core.management.base import BaseCommand

from runs.setup import ensure_admin, ensure_demo_suite, prepare_database


class Command(BaseCommand):
    help = "Start evalsite: the web app on 127.0.0.1:8000 and one background worker."

    def add_arguments(self, parser):
        parser.add_argument(
            "--host", default="127.0.0.1", help="Address to bind (default 127.0.0.1)."
        )
        parser.add_argument("--port", type=int, default=8000, help="Port (default 8000).")
        parser.add_argument("--threads", type=int, default=8, help="Web server threads.")
        parser.add_argument("--no-worker", action="store_true", help="Do not start a worker.")

    def handle(self, *args, host: str, port: int, threads: int, no_worker: bool, **options):
        prepare_database()
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
        finally:
            if worker is not None:
                self._stop_worker(worker)
        self.stdout.write("evalsite stopped.")

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
        command = [sys.executable, "-m", "evalsite", "worker"]
        return subprocess.Popen(command, start_new_session=True)

    def _stop_worker(self, worker: subprocess.Popen) -> None:
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()

    def _serve(self, host: str, port: int, threads: int) -> None:
        from waitress import create_server

        from evalsite.wsgi import application

        server = create_server(application, host=host, port=port, threads=threads, ident="evalsite")
        signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
        self.stdout.write(f"evalsite is serving on http://{host}:{port}/  (Ctrl-C stops it)")
        self.stdout.flush()
        server.run()


def _raise_keyboard_interrupt(signum, frame):
    raise KeyboardInterrupt
