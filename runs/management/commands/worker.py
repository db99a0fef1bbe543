"""`evalsite worker`: one django-q2 cluster that runs queued shards until stopped."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from runs.setup import prepare_database
from runs.tasks import run_worker


class Command(BaseCommand):
    help = "Run a background worker (a django-q2 cluster) until Ctrl-C or SIGTERM."

    def handle(self, *args, **options):
        prepare_database()
        run_worker()
