"""The fake provider: deterministic, schema-aware, biased as a judge, and quick."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import time
from collections import Counter

import pytest

from evalsite.core.providers import Completion, Request, build_provider, fake
from evalsite.core.providers.fake import (
    JUDGE_BIAS,
    LATENCY_MS,
    PARSE_FAILURE_RATE,
    SCHEMA_FAILURE_RATE,
    FakeProvider,
    FakeRates,
)
from evalsite.core.providers.fake_json import is_valid
from evalsite.core.providers.prompted import SCHEMA_INSTRUCTION
from evalsite.core.scoring.grading import parse_grade
from tests.core.providers.test_fake_json import random_schema
from tests.helpers.providers import SCHEMA, make_request

MODEL = "fake/small"


def complete(request: Request, provider: FakeProvider | None = None) -> Completion:
    return asyncio.run((provider or FakeProvider()).complete(request, None))


def answers(request: Request, count: int) -> list[Completion]:
    provider = FakeProvider()

    async def run() -> list[Completion]:
        return [
            await provider.complete(dataclasses.replace(request, repeat=r), None)
            for r in range(count)
        ]

    return asyncio.run(run())


def parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def test_the_same_request_gets_the_same_completion():
    request = make_request(MODEL, schema=SCHEMA)
    assert complete(request) == complete(request)
    assert complete(make_request(MODEL)) == complete(make_request(MODEL))


def test_the_timeout_does_not_change_the_answer():
    assert complete(make_request(MODEL, timeout_s=5)) == complete(make_request(MODEL, timeout_s=90))


def test_repeats_get_answers_of_their_own():
    texts = {completion.text for completion in answers(make_request(MODEL), 20)}
    assert len(texts) > 1


def test_plain_answers_are_short_prose_from_the_prompt():
    completion = complete(make_request(MODEL))
    assert completion.schema_mode is None
    assert 0 < len(completion.text) < 200
    assert not parses(completion.text)
    assert completion.finish_reason == "stop"
    assert completion.provider_model == "small"


def test_usage_is_characters_over_four():
    request = make_request(MODEL)
    completion = complete(request)
    chars = sum(len(m["content"]) for m in request.messages)
    assert completion.usage is not None
    assert completion.usage.input_tokens == (chars + 3) // 4
    assert completion.usage.output_tokens == (len(completion.text) + 3) // 4
    assert completion.usage.cached_input_tokens == 0


def test_schema_requests_are_prompted_and_the_prompt_carries_the_instruction():
    request = make_request(MODEL, schema=SCHEMA)
    provider = FakeProvider()
    assert provider.schema_mode(request) == "prompted"
    assert SCHEMA_INSTRUCTION in provider.prepare(request).messages[-1]["content"]
    assert complete(request).schema_mode == "prompted"


def test_generated_answers_satisfy_many_schemas():
    rng = random.Random(7)
    provider = FakeProvider(rates=FakeRates(parse_failure=0, schema_failure=0))
    checked = 0
    for index in range(300):
        schema = random_schema(rng)
        request = make_request(MODEL, schema=schema, case_id=f"c{index}")
        completion = complete(request, provider)
        assert is_valid(schema, json.loads(completion.text)), (schema, completion.text)
        checked += 1
    assert checked == 300


def test_failure_rates_roughly_hold_over_two_thousand_requests():
    provider = FakeProvider()
    counts: Counter[str] = Counter()

    async def run() -> None:
        for index in range(2000):
            request = make_request(MODEL, schema=SCHEMA, case_id=f"case-{index}")
            text = (await provider.complete(request, None)).text
            if not parses(text):
                counts["parse"] += 1
            elif not is_valid(SCHEMA, json.loads(text)):
                counts["schema"] += 1
            else:
                counts["ok"] += 1

    asyncio.run(run())
    assert abs(counts["parse"] / 2000 - PARSE_FAILURE_RATE) < 0.02
    assert abs(counts["schema"] / 2000 - SCHEMA_FAILURE_RATE) < 0.02


def test_outcome_says_what_complete_will_do():
    provider = FakeProvider()
    for index in range(200):
        request = make_request(MODEL, schema=SCHEMA, case_id=f"case-{index}")
        text = complete(request, provider).text
        outcome = provider.outcome(request)
        assert (outcome == "parse_failure") is (not parses(text))
        if outcome == "json":
            assert is_valid(SCHEMA, json.loads(text))


def test_rates_can_be_set_per_provider():
    provider = FakeProvider(rates=FakeRates(parse_failure=1.0))
    assert not parses(complete(make_request(MODEL, schema=SCHEMA), provider).text)


def judge(index: int, order: int) -> Request:
    messages = ({"role": "user", "content": f"Compare answer 1 and answer 2 for case {index}."},)
    return Request(
        model="fake/judge", messages=messages, purpose="judge", case_id=f"c{index}", order=order
    )


def test_the_judge_prefers_position_one_so_orders_disagree():
    verdicts: Counter[str] = Counter()
    flips = 0
    provider = FakeProvider(rates=FakeRates(judge_parse_failure=0))
    for index in range(1000):
        first, second = (
            json.loads(complete(judge(index, order), provider).text) for order in (1, 2)
        )
        assert list(first) == ["reason", "winner"]
        verdicts[first["winner"]] += 1
        flips += first["winner"] == second["winner"] != "tie"
    assert verdicts["1"] > verdicts["2"] > verdicts["tie"] > 0
    expected = dict(JUDGE_BIAS)
    assert abs(verdicts["1"] / 1000 - expected["1"]) < 0.06
    assert flips > 100


def test_a_judge_schema_without_winner_gets_schema_valid_json():
    grade = {
        "type": "object",
        "properties": {
            "reason": {"type": "string"},
            "score": {"type": "integer", "minimum": 1, "maximum": 5},
        },
        "required": ["reason", "score"],
    }
    request = dataclasses.replace(judge(1, 0), schema=grade)
    provider = FakeProvider(rates=FakeRates(judge_parse_failure=0))
    assert is_valid(grade, json.loads(complete(request, provider).text))


def test_a_grade_gets_a_usable_score_from_one_to_five():
    # a grade is a judge call of order 0 with no schema: its prompt asks for the score
    provider = FakeProvider(rates=FakeRates(judge_parse_failure=0))
    scores = Counter(
        parse_grade(complete(judge(index, 0), provider).text).score for index in range(500)
    )
    assert sorted(scores) == [1, 2, 3, 4, 5]
    assert all(60 < n < 140 for n in scores.values())  # drawn evenly


def test_some_judge_replies_do_not_parse_to_exercise_that_path():
    provider = FakeProvider()
    texts = [complete(judge(index, 1), provider).text for index in range(500)]
    assert 0 < sum(not parses(text) for text in texts) < 30


def test_latency_is_reported_in_range_and_not_slept_by_default():
    started = time.monotonic()
    completions = answers(make_request(MODEL), 50)
    assert time.monotonic() - started < 5.0  # slept, 50 answers would take far longer
    latencies = [c.simulated_latency_ms for c in completions]
    assert all(LATENCY_MS[0] <= latency <= LATENCY_MS[1] for latency in latencies)
    assert len(set(latencies)) > 10


def test_sleep_is_used_when_asked(monkeypatch: pytest.MonkeyPatch):
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr("evalsite.core.providers.fake.asyncio.sleep", fake_sleep)
    provider = build_provider("openai/gpt-4o", env={}, fake=True, fake_sleep=True)
    completion = asyncio.run(provider.complete(make_request("openai/gpt-4o"), None))
    assert slept == [completion.simulated_latency_ms / 1000]


@pytest.mark.parametrize("schema", [None, SCHEMA])
def test_a_request_reserved_then_completed_is_hashed_and_made_once(
    monkeypatch: pytest.MonkeyPatch, schema
):
    """The engine asks for a call's output tokens as it claims the call, then completes the
    same request: the seed and the text are worked out once, and the completion is the one an
    unasked provider gives."""
    request = make_request(MODEL, schema=schema)
    expected = complete(request)
    counted = Counter()
    for name in ("_seed", "_prompt_words"):
        real = getattr(fake, name)
        monkeypatch.setattr(
            fake, name, lambda r, real=real, name=name: (counted.update([name]), real(r))[1]
        )
    provider = FakeProvider()
    tokens = provider.output_token_limit(request)
    completion = complete(request, provider)
    assert counted == {"_seed": 1, "_prompt_words": 1}
    assert completion == expected and completion.usage.output_tokens == tokens
    complete(dataclasses.replace(request), provider)  # an equal request, another object
    assert counted == {"_seed": 2, "_prompt_words": 2}
