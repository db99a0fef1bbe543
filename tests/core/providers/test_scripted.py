"""Scripted replies: the file format, cycling by repeat, scripted failures, missing cases."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from evalsite.core.providers import (
    ErrorKind,
    ProviderError,
    RepliesFileError,
    Request,
    ScriptedError,
    ScriptedReplies,
    build_provider,
)
from tests.helpers.providers import make_request

REPLIES = """\
good:
  ticket-triage/charged-twice: ['{"category": "billing"}', {error: "rate limited"}, "third"]
  ticket-triage/lost-parcel: "only one reply"
  judge/ticket-triage/charged-twice: ['{"winner": "2"}', '{"winner": "1"}']
flaky:
  ticket-triage/charged-twice: [{error: "try later", kind: rate_limited, retry_after: 3}]
"""


def replies() -> ScriptedReplies:
    return ScriptedReplies.parse(REPLIES, "replies.yaml")


def answer(repeat: int = 0, **fields):
    request = make_request(
        "scripted/good", task_id="ticket-triage", case_id="charged-twice", repeat=repeat, **fields
    )
    provider = build_provider(request.model, env={}, replies=replies())
    return asyncio.run(provider.complete(request, None))


def test_replies_cycle_through_the_list_by_repeat():
    assert answer(0).text == '{"category": "billing"}'
    assert answer(2).text == "third"
    assert answer(3).text == '{"category": "billing"}'


def test_an_error_item_raises_a_scripted_error():
    with pytest.raises(ProviderError) as info:
        answer(1)
    assert info.value.kind is ErrorKind.SCRIPTED
    assert info.value.message == "rate limited"
    assert not info.value.retryable


def test_an_error_item_may_script_a_retryable_kind():
    request = make_request("scripted/flaky", task_id="ticket-triage", case_id="charged-twice")
    provider = build_provider(request.model, env={}, replies=replies())
    with pytest.raises(ProviderError) as info:
        asyncio.run(provider.complete(request, None))
    assert (info.value.kind, info.value.retry_after, info.value.retryable) == (
        ErrorKind.RATE_LIMITED,
        3.0,
        True,
    )


def test_a_single_string_is_a_one_item_list():
    assert replies().models["good"]["ticket-triage/lost-parcel"] == ("only one reply",)
    assert replies().models["flaky"]["ticket-triage/charged-twice"] == (
        ScriptedError("try later", ErrorKind.RATE_LIMITED, 3.0),
    )


def test_usage_is_estimated_and_the_mode_is_prompted_with_a_schema():
    completion = answer(0, schema={"type": "object"})
    assert completion.schema_mode == "prompted"
    assert completion.usage is not None and completion.usage.output_tokens == 6
    assert completion.provider_model == "good"


def test_judge_calls_are_keyed_under_judge_and_numbered_by_repeat_and_order():
    provider = build_provider("scripted/good", env={}, replies=replies())

    def verdict(repeat: int, order: int) -> str:
        request = Request(
            model="scripted/good",
            messages=({"role": "user", "content": "compare"},),
            purpose="judge",
            task_id="ticket-triage",
            case_id="charged-twice",
            repeat=repeat,
            order=order,
        )
        return asyncio.run(provider.complete(request, None)).text

    assert [verdict(0, 1), verdict(0, 2), verdict(1, 1)] == [
        '{"winner": "2"}',
        '{"winner": "1"}',
        '{"winner": "2"}',
    ]


def test_a_case_without_an_entry_is_a_config_error_naming_it():
    request = make_request("scripted/good", task_id="ticket-triage", case_id="refund")
    provider = build_provider(request.model, env={}, replies=replies())
    with pytest.raises(ProviderError) as info:
        asyncio.run(provider.complete(request, None))
    assert info.value.kind is ErrorKind.CONFIG
    assert "ticket-triage/refund" in info.value.message and "replies.yaml" in info.value.message


def test_missing_lists_the_cases_without_an_entry():
    cases = [("ticket-triage", "charged-twice"), ("ticket-triage", "refund"), ("other", "x")]
    assert replies().missing("good", cases) == ["ticket-triage/refund", "other/x"]
    assert replies().missing("scripted/good", cases[:1]) == []
    assert replies().missing("nobody", cases[:1]) == ["ticket-triage/charged-twice"]
    assert replies().missing_judge("good", cases[:2]) == ["judge/ticket-triage/refund"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("- just a list", "replies.yaml:1: expected a mapping of scripted model names"),
        ("good: [a, b]", "replies.yaml:1: good: expected a mapping of task/case"),
        ("good:\n  no-slash: [a]", "replies.yaml:2: good.no-slash: expected a key 'task/case'"),
        ("good:\n  t/c: []", 'replies.yaml:2: good["t/c"]: expected a non-empty list'),
        (
            "good:\n  t/c: [42]",
            'replies.yaml:2: good["t/c"][0]: a reply must be text or {error: message}, not int',
        ),
        ("good:\n  t/c: [yes]", "not true/false; quote it"),
        ("good:\n  t/c: [{eror: x}]", "a scripted failure is {error: message}"),
        ("good:\n  t/c: [{error: x, kind: fatal}]", "kind must be one of auth, bad_request"),
        ("good:\n  t/c: [a]\nscripted/good:\n  t/d: [b]", "model 'good' appears twice"),
        ("good: {t/c: [a]\n", "replies.yaml:"),
        ("good:\n  t/c: [a]\ngood:\n  t/d: [b]", "duplicate"),
    ],
)
def test_bad_shapes_are_refused_naming_the_file_line_and_key(text, expected):
    with pytest.raises(ValueError) as info:
        ScriptedReplies.parse(text, "replies.yaml")
    assert isinstance(info.value, RepliesFileError)
    assert expected in str(info.value)


def test_every_problem_is_reported_at_once():
    with pytest.raises(RepliesFileError) as info:
        ScriptedReplies.parse("good:\n  a/b: []\n  c/d: [1]\nbad: 3\n", "r.yaml")
    assert len(info.value.problems) == 3


def test_a_replies_file_is_loaded_from_disk(tmp_path):
    path = tmp_path / "replies.yaml"
    path.write_text(REPLIES)
    assert ScriptedReplies.load(path) == dataclasses.replace(replies(), filename=str(path))
    with pytest.raises(RepliesFileError, match="file not found"):
        ScriptedReplies.load(tmp_path / "missing.yaml")


def test_a_scripted_model_without_replies_cannot_be_built():
    with pytest.raises(ProviderError) as info:
        build_provider("scripted/good", env={})
    assert info.value.kind is ErrorKind.CONFIG and "replies" in info.value.message
