"""Scripted replies for offline CI: answers read from a file, cycled by repeat.

The replies file (SPEC §4) is YAML keyed by the model name after ``scripted/``, then by
``task/case``; each value is a list of items, an item being the reply text or
``{error: "message"}`` (optionally with ``kind:`` one of the error kinds, default
``scripted``, and ``retry_after:`` seconds, to script retryable failures)::

    good:
      ticket-triage/charged-twice: ['{"category": "billing"}', {error: "rate limited"}]
      judge/ticket-triage/charged-twice: ['{"reason": "…", "winner": "2"}',
                                          '{"reason": "…", "winner": "1"}']

A contestant with a prompt variant (``scripted/good@concise``) answers from the entry
``good@concise`` when the file has one, so a variants × models matrix can be scripted; without
it, from ``good`` like the bare model.

Repeat ``r`` of an answer gets ``items[r % len(items)]``. A scripted model used as the judge
is looked up under ``judge/<task>/<case>``; its calls are numbered ``2·repeat + order − 1``
(order 1 shows the baseline as "Answer 1", order 2 swaps), so the list above says "the
candidate wins in both orders". Its single-answer grades are under ``grade/<task>/<case>``,
numbered by repeat. The one retry after an unreadable reply is read from
``judge-retry/…`` (or ``grade-retry/…``) with the same numbering when that key exists, else
it gets the same item again. A single string stands for a one-item list.

Usage is estimated like the fake's (characters ÷ 4), so a scripted model that has a price
row can be costed; without a row it costs nothing. The reply is known before the call, so a
spend reservation holds its real size (:meth:`ScriptedProvider.output_token_limit`), not
``max_tokens``. Schema mode is "prompted".
"""

from __future__ import annotations

import pathlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalsite.core.problems import Problem, SourceMap, SuiteError, format_problems
from evalsite.core.providers.base import (
    Completion,
    ErrorKind,
    ProviderError,
    Request,
    clean_text,
    estimate_tokens,
    estimated_completion,
)
from evalsite.core.providers.prompted import SchemaModes
from evalsite.core.suite_files import UnreadableFile, read_bounded
from evalsite.core.yamlsafe import load_yaml

if TYPE_CHECKING:
    from evalsite.core.providers.http_clients import HttpClient

_CASE_KEY = re.compile(r"[^/\s]+/[^/\s]+")
_JUDGE_KEY = re.compile(r"(judge|grade)(-retry)?/[^/\s]+/[^/\s]+")
_ITEM_KEYS = {"error", "kind", "retry_after"}
EXAMPLE = "{good: {ticket-triage/charged-twice: [reply text, {error: message}]}}"


@dataclass(frozen=True)
class ScriptedError:
    """A scripted failure: raised as ProviderError(kind, message)."""

    message: str
    kind: ErrorKind = ErrorKind.SCRIPTED
    retry_after: float | None = None


Item = str | ScriptedError


class RepliesFileError(ValueError):
    """A replies file that cannot be used; ``problems`` names the file, line and key of each."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__(format_problems(self.problems))


@dataclass(frozen=True)
class ScriptedReplies:
    """Parsed replies: model name → ``task/case`` (or ``judge/task/case``) → items."""

    filename: str
    models: Mapping[str, Mapping[str, tuple[Item, ...]]]

    @classmethod
    def parse(cls, text: str, filename: str) -> ScriptedReplies:
        """Parse the YAML text; RepliesFileError (a ValueError) lists every problem found."""
        try:
            document = load_yaml(text.encode("utf-8", "surrogatepass"), filename=filename)
        except SuiteError as error:
            raise RepliesFileError(error.problems) from None
        sources = SourceMap(filename, document.lines)
        problems: list[Problem] = []
        models = _models(document.data, sources, problems)
        if problems:
            raise RepliesFileError(problems)
        return cls(filename, models)

    @classmethod
    def load(cls, path: str | pathlib.Path) -> ScriptedReplies:
        """Read and parse the file at ``path`` (bounded like suite files)."""
        try:
            data = read_bounded(pathlib.Path(path))
        except UnreadableFile as error:
            raise RepliesFileError([Problem(str(path), None, "", str(error))]) from None
        return cls.parse(data.decode("utf-8", "surrogateescape"), str(path))

    def missing(
        self, model_name: str, cases: Iterable[tuple[str, str]], variant: str | None = None
    ) -> list[str]:
        """``task/case`` for each case with no entry for ``model_name`` (with `variant`, as
        :meth:`entries` chooses), in the order given."""
        entries = self.entries(_bare(model_name), variant)
        return [f"{t}/{c}" for t, c in dict.fromkeys(cases) if f"{t}/{c}" not in entries]

    def entries(self, name: str, variant: str | None = None) -> Mapping[str, tuple[Item, ...]]:
        """The replies of the scripted model `name`: its variant's own (``name@variant``)
        when the file has them, else the model's."""
        if variant and f"{name}@{variant}" in self.models:
            return self.models[f"{name}@{variant}"]
        return self.models.get(name, {})

    def has_variant(self, name: str, variant: str | None) -> bool:
        return bool(variant) and f"{_bare(name)}@{variant}" in self.models

    def missing_judge(self, model_name: str, cases: Iterable[tuple[str, str]]) -> list[str]:
        """``judge/task/case`` for each case a scripted judge has no entry for."""
        entries = self.models.get(_bare(model_name), {})
        keys = [f"judge/{t}/{c}" for t, c in dict.fromkeys(cases)]
        return [key for key in keys if key not in entries]

    def item(self, request: Request, variant: str | None = None) -> Item:
        """The item for this request (of a contestant with `variant`); ProviderError(CONFIG)
        when the file has none."""
        entries = self.entries(request.model_name, variant)
        cell = f"{request.task_id}/{request.case_id}"
        key, index = cell, request.repeat
        if request.purpose == "judge":
            kind = "judge" if request.order else "grade"
            key = f"{kind}/{cell}"
            if request.order:
                index = 2 * request.repeat + request.order - 1
            retried = any(message["role"] == "assistant" for message in request.messages)
            if retried and f"{kind}-retry/{cell}" in entries:
                key = f"{kind}-retry/{cell}"
        items = entries.get(key)
        if not items:
            own = self.has_variant(request.model, variant)
            name = f"{request.model}@{variant}" if own else request.model
            message = f"replies file {self.filename} has no entry {key} for {name}"
            raise ProviderError(ErrorKind.CONFIG, message)
        return items[index % len(items)]


class ScriptedProvider(SchemaModes):
    """Replies from a :class:`ScriptedReplies`; never touches the network."""

    name = "scripted"
    version = "scripted-1"
    waits = False

    def __init__(self, replies: ScriptedReplies, variant: str | None = None) -> None:
        self.replies = replies
        self.variant = variant  # a contestant's variant with its own entry in the file

    def __repr__(self) -> str:
        return f"<ScriptedProvider {self.replies.filename}>"

    def reply_source(self, request: Request) -> str | None:
        """The scripted item this request gets, so editing it changes the cache key."""
        try:
            item = self.replies.item(self.prepare(request), self.variant)
        except ProviderError as error:
            return f"missing: {error.message}"
        if isinstance(item, ScriptedError):
            return f"error: {item.kind.value}: {item.message}: {item.retry_after}"
        return f"reply: {item}"

    def output_token_limit(self, request: Request) -> int:
        """The output tokens the reply to `request` will be counted at (0 for a scripted
        failure or a missing entry: neither is a completion)."""
        try:
            item = self.replies.item(self.prepare(request), self.variant)
        except ProviderError:
            return 0
        return 0 if isinstance(item, ScriptedError) else estimate_tokens(clean_text(item))

    async def complete(self, request: Request, client: HttpClient | None = None) -> Completion:
        """The scripted reply; a scripted failure raises ProviderError of its kind."""
        request = self.prepare(request)
        item = self.replies.item(request, self.variant)
        if isinstance(item, ScriptedError):
            raise ProviderError(item.kind, item.message, retry_after=item.retry_after)
        return estimated_completion(
            item,
            request,
            provider=self.name,
            schema_mode=self.schema_mode(request),
            provider_model=request.model_name,
        )


def _bare(model_name: str) -> str:
    return model_name.removeprefix("scripted/")


def _models(
    data: Any, sources: SourceMap, problems: list[Problem]
) -> dict[str, dict[str, tuple[Item, ...]]]:
    if not isinstance(data, dict):
        problems.append(
            sources.problem(
                (), f"expected a mapping of scripted model names to their replies, e.g. {EXAMPLE}"
            )
        )
        return {}
    models: dict[str, dict[str, tuple[Item, ...]]] = {}
    for raw_name, cases in data.items():
        name = _bare(raw_name)
        if name in models:
            problems.append(sources.problem((raw_name,), f"model '{name}' appears twice"))
        elif not isinstance(cases, dict):
            problems.append(
                sources.problem(
                    (raw_name,),
                    f"expected a mapping of task/case to a list of replies, e.g. {EXAMPLE}",
                )
            )
        else:
            models[name] = _cases(raw_name, cases, sources, problems)
    return models


def _cases(
    model: str, cases: dict[str, Any], sources: SourceMap, problems: list[Problem]
) -> dict[str, tuple[Item, ...]]:
    out: dict[str, tuple[Item, ...]] = {}
    for key, items in cases.items():
        path = (model, key)
        if not (_CASE_KEY.fullmatch(key) or _JUDGE_KEY.fullmatch(key)):
            problems.append(
                sources.problem(
                    path,
                    "expected a key 'task/case' (or 'judge/task/case', 'grade/task/case' for a "
                    "scripted judge)",
                )
            )
            continue
        if isinstance(items, str):
            items = [items]
        if not isinstance(items, list) or not items:
            problems.append(sources.problem(path, "expected a non-empty list of replies"))
            continue
        parsed = [
            _item(item, (*path, index), sources, problems) for index, item in enumerate(items)
        ]
        out[key] = tuple(item for item in parsed if item is not None)
    return out


def _item(
    item: Any, path: tuple[str | int, ...], sources: SourceMap, problems: list[Problem]
) -> Item | None:
    problem = _item_problem(item)
    if problem is not None:
        problems.append(sources.problem(path, problem))
        return None
    if isinstance(item, str):
        return item
    retry_after = item.get("retry_after")
    return ScriptedError(
        item["error"],
        ErrorKind(item.get("kind", "scripted")),
        None if retry_after is None else float(retry_after),
    )


def _item_problem(item: Any) -> str | None:
    """Why ``item`` is neither reply text nor a well-formed scripted failure, or None."""
    if isinstance(item, str):
        return None
    if not isinstance(item, dict):
        kind = "true/false" if isinstance(item, bool) else type(item).__name__
        return f"a reply must be text or {{error: message}}, not {kind}; quote it to make it text"
    if set(item) - _ITEM_KEYS or not isinstance(item.get("error"), str):
        return "a scripted failure is {error: message} with optional kind and retry_after"
    if item.get("kind", "scripted") not in {kind.value for kind in ErrorKind}:
        return f"kind must be one of {', '.join(kind.value for kind in ErrorKind)}"
    retry_after = item.get("retry_after")
    if retry_after is not None and (
        isinstance(retry_after, bool) or not isinstance(retry_after, int | float)
    ):
        return "retry_after must be a number of seconds"
    return None
