"""`evalsite worker`: one django-q2 cluster that runs queued shards until stopped."""

from __future__ import annotations

import argparse

from evalsite.management import EvalsiteCommand
from evalsite.management.worker_process import run_worker


class Command(EvalsiteCommand):
    help = "Run a background worker (a django-q2 cluster) until Ctrl-C or SIGTERM."
    requires_system_checks = "__all__"  # every check, as `serve` runs them

    def add_arguments(self, parser) -> None:
        # `serve` starts its worker with its own pid here: the worker stops when serve dies.
        parser.add_argument("--stop-with", type=int, metavar="PID", help=argparse.SUPPRESS)

    def handle(self, *args, stop_with: int | None, **options):
        run_worker(stop_with=stop_with)
