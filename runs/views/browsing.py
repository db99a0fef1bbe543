"""What a run's list pages share: the run with what its pages show, the page size, and the
filters read from the query string and written back into the pagination links."""

from __future__ import annotations

from functools import cached_property
from urllib.parse import urlencode

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import HttpRequest
from django.shortcuts import get_object_or_404

from runs.models import Run
from runs.results.memo import FinishedRunMemo

PAGE_SIZE = 50
# How many rows of each kind a done run has: they no longer change once it is done.
_ALL_ROWS: dict[type, FinishedRunMemo[int]] = {}


def run_or_404(run_id: str) -> Run:
    """The run with its suite, price table and creator, without its report and its suite's
    document (:meth:`~runs.models.run.RunQuerySet.for_pages`), or a 404."""
    return get_object_or_404(Run.objects.for_pages(), pk=run_id)


def page_of(request: HttpRequest, rows: QuerySet, run: Run, *, every: bool) -> Page:
    """The page of `rows` that ``?page=`` asks for (PAGE_SIZE a page; the first when it is
    not a number, the last when past the end). `every`: `rows` are all of the run's rows of
    their kind, unfiltered, whose number a done run's pages count once a process (a COUNT
    over the 200,000 answers of a big run took 10 to 15 ms a page)."""
    if every:
        counted = _ALL_ROWS.setdefault(rows.model, FinishedRunMemo()).get(run, rows.count)
        return _Counted(rows, PAGE_SIZE, counted).get_page(request.GET.get("page"))
    return Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))


class _Counted(Paginator):
    """A paginator told how many rows there are."""

    def __init__(self, rows: QuerySet, per_page: int, count: int):
        super().__init__(rows, per_page)
        self._count = count

    @cached_property
    def count(self) -> int:
        return self._count


def filters_of(request: HttpRequest, names: tuple[str, ...]) -> dict[str, str]:
    """The named filters of the query string, trimmed and bounded."""
    return {name: request.GET.get(name, "").strip()[:300] for name in names}


def filter_query(filters: dict[str, str]) -> str:
    """The active filters as a query string for the pagination links."""
    return urlencode({key: value for key, value in filters.items() if value})


def task_ids(run: Run) -> list[str]:
    """The ids of the run's tasks, for the task filter."""
    return [task.id for task in run.suite_version.core_suite().tasks]
