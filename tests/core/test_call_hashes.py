"""A plan's cache keys (evalsite.core.plan.call_hashes) are each cell's call_hash, and a
repeat's key is its first repeat's canonical JSON with its number written in, not a JSON
of its own (no database)."""

from __future__ import annotations

import json
from unittest import mock

from evalsite.core import plan
from evalsite.core.plan import call_hash, call_hashes, plan_cells
from evalsite.core.providers.base import Request
from evalsite.core.providers.fake import FakeProvider
from evalsite.core.suites import parse_document

CONTESTANTS = ["fake/small", "fake/small@terse"]


def _suite(cases: int, **task):
    rows = [{"id": f"c{n:04}", "vars": {"q": f'question {n} \u00e9 "q"'}} for n in range(cases)]
    document = {
        "suite": "keys", "version": 1, "models": CONTESTANTS, "repeats": 20,
        "defaults": {"temperature": 1, "max_tokens": 9, "stop": ["END"]},
        "variants": {"terse": {"system": "Answer in a word about {{q}}."}},
        "tasks": [{"id": "t", "prompt": "Say {{q}}", "cases": rows, **task}],
    }  # fmt: skip
    return parse_document(document, filename="keys.json")


class _Sourced(FakeProvider):
    """A provider whose reply source depends on the repeat (as a scripted reply may)."""

    def reply_source(self, request: Request) -> str | None:
        return f"reply {request.repeat % 3}" if request.repeat < 7 else None


def _same_as_each_call_hash(suite, provider) -> None:
    cells = plan_cells(suite, CONTESTANTS, repeats=suite.repeats)
    providers = dict.fromkeys(CONTESTANTS, provider)
    assert call_hashes(cells, providers) == [call_hash(c.request, provider) for c in cells]


def test_the_keys_are_each_cells_call_hash():
    _same_as_each_call_hash(_suite(6), FakeProvider())


def test_a_schema_prompted_and_a_reply_source_by_repeat_keep_their_own_keys():
    schema = {"type": "object", "properties": {"repeat": {"const": 0}}}
    _same_as_each_call_hash(_suite(4, schema=schema), FakeProvider())  # prepared anew each call
    _same_as_each_call_hash(_suite(4), _Sourced())


def test_a_repeat_is_not_written_out_as_json_again():
    suite = _suite(50)
    cells = plan_cells(suite, CONTESTANTS, repeats=20)
    providers = dict.fromkeys(CONTESTANTS, FakeProvider())
    with mock.patch.object(plan.json, "dumps", wraps=json.dumps) as dumps:
        hashes = call_hashes(cells, providers)
    assert len(hashes) == len(set(hashes)) == 2000
    assert dumps.call_count == 2 * 100  # each cell's first repeat, and its number moved once
