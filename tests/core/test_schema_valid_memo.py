"""A document found valid is not validated again in the same process (evalsite run reads
its suite from the file, then runs the stored version: the same values)."""

from __future__ import annotations

from unittest import mock

from evalsite.core import schema_errors
from evalsite.core.problems import SourceMap

SUITE = {"suite": "memo", "version": 1, "models": ["fake/small"],
         "tasks": [{"id": "t", "prompt": "Say {{q}}", "cases": [{"id": "c", "vars": {"q": "hi"}}]}]}  # fmt: skip


def _validations(instance) -> int:
    with mock.patch.object(schema_errors, "_validator", wraps=schema_errors._validator) as made:
        assert schema_errors.schema_problems(instance, SourceMap("s.yaml", {})) == []
    return made.call_count


def test_the_same_values_are_validated_once_and_changed_ones_again():
    schema_errors._VALID.clear()
    assert _validations(SUITE) == 1
    assert _validations({**SUITE}) == 0
    assert _validations({**SUITE, "description": "changed"}) == 1


def test_a_document_json_would_not_tell_apart_is_never_remembered():
    schema_errors._VALID.clear()
    tagged = {**SUITE, "tasks": [{**SUITE["tasks"][0], "tags": ("a",)}]}
    assert schema_errors._digest(tagged) is None
    assert schema_errors._digest({1: "x"}) is None
    assert schema_errors._digest(SUITE) is not None


def test_a_document_with_problems_is_validated_every_time():
    schema_errors._VALID.clear()
    broken = {**SUITE, "modles": []}
    for _ in range(2):
        assert schema_errors.schema_problems(broken, SourceMap("s.yaml", {}))
    assert not schema_errors._VALID
