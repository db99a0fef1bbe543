"""The seeds' habits of issue 28 (part 2): what evalblink, evalpin and evaling users type
works as they expect it to, with evalsite's own words."""

from __future__ import annotations

import pytest

from runs.models import CachedResponse
from tests.factories import run_command

pytestmark = pytest.mark.django_db(transaction=True)


def _cache(*models: str) -> None:
    for i, model in enumerate(models):
        CachedResponse.objects.create(
            request_hash=f"{i:064d}", provider="scripted", model=model, text="t"
        )


# --- evalblink's cache verbs ----------------------------------------------------------------


def test_cache_clear_without_yes_counts_and_deletes_nothing():
    _cache("a", "a", "b")
    code, out, err = run_command("cache", "clear")
    assert code == 0, err
    assert out.splitlines() == [
        "3 cached responses would be cleared; nothing was deleted: pass --yes to clear them"
    ]
    assert CachedResponse.objects.count() == 3


def test_cache_clear_yes_clears_and_model_narrows_it():
    _cache("a", "a", "b")
    code, out, _ = run_command("cache", "clear", "--yes", "--model", "a")
    assert (code, out.strip()) == (0, "cleared 2 cached responses")
    assert list(CachedResponse.objects.values_list("model", flat=True)) == ["b"]
    code, out, _ = run_command("cache", "clear", "--yes")
    assert (code, out.strip(), CachedResponse.objects.count()) == (
        0, "cleared 1 cached responses", 0
    )  # fmt: skip


def test_cache_stats_is_cache_info():
    _cache("a", "a", "b")
    info, stats = run_command("cache", "info"), run_command("cache", "stats")
    assert stats == info
    assert info[1].splitlines()[0] == "3 cached responses, 3 characters of text"
