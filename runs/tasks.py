"""Background jobs. The only module that imports django_q."""

from __future__ import annotations

from django_q.cluster import Cluster


def run_worker() -> None:
    """Run a django-q2 cluster in the foreground until SIGINT or SIGTERM."""
    Cluster().start()
