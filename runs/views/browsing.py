"""What a run's list pages share: the run with what its pages show, the page size, and the
filters read from the query string and written back into the pagination links."""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import HttpRequest
from django.shortcuts import get_object_or_404

from runs.models import Run

PAGE_SIZE = 50


def run_or_404(run_id: str) -> Run:
    """The run with its suite, price table and creator, or a 404."""
    return get_object_or_404(
        Run.objects.select_related("suite_version__suite", "price_table", "created_by"), pk=run_id
    )


def filters_of(request: HttpRequest, names: tuple[str, ...]) -> dict[str, str]:
    """The named filters of the query string, trimmed and bounded."""
    return {name: request.GET.get(name, "").strip()[:300] for name in names}


def filter_query(filters: dict[str, str]) -> str:
    """The active filters as a query string for the pagination links."""
    return urlencode({key: value for key, value in filters.items() if value})


def task_ids(run: Run) -> list[str]:
    """The ids of the run's tasks, for the task filter."""
    return [task["id"] for task in run.suite_version.tasks]
