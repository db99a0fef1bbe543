"""`evalsite worker`: one django-q2 cluster that runs queued shards until stopped."""

from __future__ import annotations

from evalsite.management import EvalsiteCommand
from runs.setup import prepare_database
from runs.tasks import run_worker


class Command(EvalsiteCommand):
    help = "Run a background worker (a django-q2 cluster) until Ctrl-C or SIGTERM."
    requires_system_checks = "__all__"  # every check, as `serve` runs them

    def handle(self, *args, **options):
        prepare_database()
        run_worker()
