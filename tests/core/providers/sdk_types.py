"""Checking a request body sent by an adapter against an official SDK's request type.

The SDKs (openai, anthropic) describe their request bodies as TypedDicts. A pydantic
``TypeAdapter`` over one ignores keys the type does not name and validates ``Iterable``
fields lazily, only when iterated, so :func:`problems` walks the body against the type
itself: every required key present, no key the type does not name, each value of its type
(``Literal`` values, unions by whichever branch fits, lists item by item). :func:`conforms`
adds pydantic's own strict validation, with every lazy iterator drained.

The requests every adapter is checked with: :data:`CONVERSATION` (system, multi-turn) and
:func:`media` (a user message of text and files, as a run plans them); :func:`sent_body`
and :func:`answer` go through the provider's public path, ``complete``.
"""

from __future__ import annotations

import collections.abc
import types
import typing
from collections.abc import Mapping
from typing import Any

import httpx
import pydantic
import typing_extensions

from evalsite.core.providers import (
    Completion,
    ErrorKind,
    ProviderError,
    Request,
    build_provider,
)
from tests.core.providers.test_media_parts import part as media_part
from tests.helpers.providers import ENV, call, fail, make_request, sent_json

__all__ = [
    "CONVERSATION", "SUITE_DEFAULTS", "answer", "conforms", "failure", "media", "media_part",
    "named_error", "problems", "sent_body", "sent_for_suite",
]  # fmt: skip

CONVERSATION = (
    {"role": "system", "content": "You triage support tickets."},
    {"role": "user", "content": "I was charged twice."},
    {"role": "assistant", "content": "Billing."},
    {"role": "user", "content": "And the parcel never came."},
)
# A suite's defaults as the reasoning models met them: each model is sent what it takes
SUITE_DEFAULTS = {"temperature": 0, "top_p": 0.9, "stop": ["END"], "max_tokens": 2000}
_LISTS = {list, tuple, collections.abc.Iterable, collections.abc.Sequence}
_WRAPPERS = {typing.Required, typing.NotRequired, typing_extensions.ReadOnly, typing.Annotated}
_ALIASES = (typing.TypeAliasType, typing_extensions.TypeAliasType)


def media(*parts: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    """A system message and a user message of a question and ``parts``."""
    content = [{"type": "text", "text": "What is the total due?"}, *parts]
    system = {"role": "system", "content": "Answer in one line."}
    return (system, {"role": "user", "content": content})


def sent_body(model: str, response: httpx.Response, **fields: Any) -> dict[str, Any]:
    """The JSON body ``model``'s provider sends for a request of ``fields``."""
    _, sent = call(build_provider(model, env=ENV), make_request(model, **fields), response)
    return sent_json(sent)


def sent_for_suite(
    model: str, response: httpx.Response, params: Mapping[str, Any], **fields: Any
) -> dict[str, Any]:
    """The JSON body sent for a suite's resolved ``params``, as every entry point builds the
    request (``Request.from_params``: the parameters fitted to the model)."""
    request = Request.from_params(model, make_request(model).messages, params, **fields)
    _, sent = call(build_provider(model, env=ENV), request, response)
    return sent_json(sent)


def answer(model: str, response: httpx.Response, **fields: Any) -> Completion:
    """What ``model``'s provider makes of ``response`` to a request of ``fields``."""
    completion, _ = call(build_provider(model, env=ENV), make_request(model, **fields), response)
    return completion


def failure(model: str, response: httpx.Response) -> ProviderError:
    """The error ``model``'s provider raises for ``response``."""
    return fail(build_provider(model, env=ENV), make_request(model), response)


def named_error(model: str, response: httpx.Response, kind: ErrorKind) -> None:
    """Assert an error reply is ``kind`` and its message quotes the provider's."""
    error = failure(model, response)
    assert error.kind is kind
    assert response.json()["error"]["message"] in error.message


def problems(value: Any, tp: Any, path: str = "body") -> list[str]:
    """What in ``value`` (a JSON value) the type ``tp`` does not allow; [] when it conforms."""
    tp = _unwrap(tp)
    origin = typing.get_origin(tp)
    if tp in (Any, object):
        return []
    if tp is type(None):
        return [] if value is None else [f"{path}: {value!r:.60} is not null"]
    if origin in (typing.Union, types.UnionType):
        return _union(value, typing.get_args(tp), path)
    if origin is typing.Literal:
        allowed = typing.get_args(tp)
        return [] if value in allowed else [f"{path}: {value!r:.60} is not one of {allowed}"]
    if typing_extensions.is_typeddict(tp):
        return _typed_dict(value, tp, path)
    if origin in _LISTS or getattr(origin, "__name__", "") == "SequenceNotStr":
        if not isinstance(value, list):
            return [f"{path}: {type(value).__name__} is not a list"]
        (item,) = typing.get_args(tp)[:1] or (Any,)
        return [p for i, v in enumerate(value) for p in problems(v, item, f"{path}[{i}]")]
    if origin in (dict, collections.abc.Mapping):
        if not isinstance(value, dict):
            return [f"{path}: {type(value).__name__} is not an object"]
        item = typing.get_args(tp)[1]
        return [p for k, v in value.items() for p in problems(v, item, f"{path}.{k}")]
    return _scalar(value, origin or tp, path)


def conforms(value: Any, tp: Any, *, beyond: Mapping[str, Any] | None = None) -> None:
    """Assert ``value`` is a ``tp`` by :func:`problems` and by pydantic's strict validation.

    ``beyond`` names top-level fields (and their types) the API takes that the SDK's type
    no longer names, which the SDK itself sends through ``extra_body``."""
    beyond = beyond or {}
    rest = {key: item for key, item in value.items() if key not in beyond}
    found = problems(rest, tp)
    for key in beyond.keys() & value.keys():
        found += problems(value[key], beyond[key], f"body.{key}")
    assert not found, "\n".join(found)
    adapter = pydantic.TypeAdapter(tp)  # held while draining: its iterators refer to it
    _drain(adapter.validate_python(rest, strict=True))


def _unwrap(tp: Any) -> Any:
    while typing.get_origin(tp) in _WRAPPERS:
        tp = typing.get_args(tp)[0]
    if isinstance(tp, _ALIASES):
        return _unwrap(tp.__value__)
    return tp


def _union(value: Any, branches: tuple[Any, ...], path: str) -> list[str]:
    found = [problems(value, branch, path) for branch in branches]
    if any(not each for each in found):
        return []
    return min(found, key=lambda each: (_mismatches(each, path), len(each)))


def _mismatches(found: list[str], path: str) -> int:
    """How far a union's branch is from the value: a wrong literal (``type``, ``role``) or a
    wrong kind of value at the union itself weighs most, so the report names the branch the
    value meant to be."""
    return sum(" is not one of " in p or p.startswith(f"{path}: ") for p in found)


def _typed_dict(value: Any, tp: Any, path: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: {type(value).__name__} is not an object ({tp.__name__})"]
    fields = typing_extensions.get_type_hints(tp, include_extras=True)
    out = [f"{path}.{key}: not a field of {tp.__name__}" for key in value if key not in fields]
    out += [
        f"{path}.{key}: required by {tp.__name__}" for key in _required(tp, fields) - set(value)
    ]
    for key, item in value.items():
        if key in fields:
            out += problems(item, fields[key], f"{path}.{key}")
    return out


def _required(tp: Any, fields: dict[str, Any]) -> set[str]:
    """The keys ``tp`` requires, read from the resolved hints: the SDKs write their
    annotations as strings, so the class's own ``__required_keys__`` cannot see ``Required``."""
    marked = {key: typing.get_origin(hint) for key, hint in fields.items()}
    if getattr(tp, "__total__", True):
        return {key for key, origin in marked.items() if origin is not typing.NotRequired}
    return {key for key, origin in marked.items() if origin is typing.Required}


def _scalar(value: Any, tp: Any, path: str) -> list[str]:
    if not isinstance(tp, type):
        raise TypeError(f"{path}: the checker does not know the type {tp!r}")
    if tp is float:
        fits = isinstance(value, int | float) and not isinstance(value, bool)
    elif tp is int:
        fits = isinstance(value, int) and not isinstance(value, bool)
    else:
        fits = isinstance(value, tp)
    return [] if fits else [f"{path}: {value!r:.60} is not {tp.__name__}"]


def _drain(value: Any) -> None:
    """Iterate every lazily validated iterable, so its items are validated too."""
    if isinstance(value, dict):
        for item in value.values():
            _drain(item)
    elif isinstance(value, list | tuple) or type(value).__name__ == "ValidatorIterator":
        for item in value:
            _drain(item)
