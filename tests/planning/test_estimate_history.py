"""A plan's estimate reads what each contestant answered before on each task (the mean output
tokens of its cached responses) in one query, not one a contestant and task."""

from __future__ import annotations

import pytest

from runs.models import CachedResponse

pytestmark = pytest.mark.django_db


def cached(number: int, model: str, task_id: str, output_tokens: int | None) -> CachedResponse:
    return CachedResponse.objects.create(
        request_hash=f"{number:064x}",
        provider="fake",
        model=model,
        task_id=task_id,
        text="…",
        output_tokens=output_tokens,
    )


def test_the_history_of_every_model_and_task_is_one_query(django_assert_num_queries):
    cached(1, "small", "greet", 10)
    cached(2, "small", "greet", 30)
    cached(3, "small", "sum", None)  # a provider that reported no usage
    cached(4, "large", "sum", 7)
    keys = {("fake", model, task) for model in ("small", "large") for task in ("greet", "sum")}

    with django_assert_num_queries(1):
        history = CachedResponse.objects.mean_output_tokens(keys)

    assert history == {
        ("fake", "small", "greet"): 20.0,
        ("fake", "small", "sum"): None,
        ("fake", "large", "greet"): None,  # never answered: the estimate uses max_tokens
        ("fake", "large", "sum"): 7.0,
    }


def test_no_key_asks_nothing(django_assert_num_queries):
    with django_assert_num_queries(0):
        assert CachedResponse.objects.mean_output_tokens(set()) == {}
