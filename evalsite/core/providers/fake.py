"""The fake provider: a real, selectable provider whose answers come from a hash.

Every choice is a pure function of the sha256 of the prepared request's JSON
(:meth:`Request.answer_json`: without ``timeout_s``, which never changes an answer): the same
request always gets the same completion, and another repeat or judge order gets its own.
Nothing is random outside that hash.

- Answers without a schema: one or two short sentences built from words of the prompt.
- Answers with a schema (prompted mode): JSON valid against it (:mod:`fake_json`), except
  that a :data:`PARSE_FAILURE_RATE` share are prose that is not JSON and a
  :data:`SCHEMA_FAILURE_RATE` share are JSON the schema rejects.
- Judge requests (purpose "judge") with no schema, or a schema with a ``winner`` property:
  ``{"reason": …, "winner": "1" | "2" | "tie"}`` drawn with :data:`JUDGE_BIAS` (position
  bias toward "1", so the two orders of a pair disagree and flips occur);
  :data:`JUDGE_PARSE_FAILURE_RATE` are prose. A single-answer grade (a judge request of
  order 0 with no schema, whose prompt asks for ``{"reasoning", "score"}``) gets that JSON,
  the score a whole number 1–5 drawn evenly, with the same share of prose. Other judge
  schemas get schema-valid JSON, with the same share of prose.
- Usage: input ≈ characters of the messages ÷ 4, output ≈ characters of the text ÷ 4; the
  text is known before the call, so a spend reservation holds its real size
  (:meth:`FakeProvider.output_token_limit`).
- ``simulated_latency_ms`` in :data:`LATENCY_MS`; slept only when built with ``sleep=True``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import random
import re
from typing import TYPE_CHECKING, Any

from evalsite.core.providers import fake_json
from evalsite.core.providers.base import (
    Completion,
    Request,
    clean_text,
    estimate_tokens,
    estimated_completion,
    message_text,
)
from evalsite.core.providers.prompted import SCHEMA_INSTRUCTION, SchemaModes

if TYPE_CHECKING:
    from evalsite.core.providers.http_clients import HttpClient

PARSE_FAILURE_RATE = 0.05
SCHEMA_FAILURE_RATE = 0.05
JUDGE_PARSE_FAILURE_RATE = 0.02
JUDGE_BIAS = (("1", 0.60), ("2", 0.25), ("tie", 0.15))
LATENCY_MS = (300, 1500)
MADE_KEPT = 10_000  # texts made for output_token_limit and not completed yet, at most

REASONS = {
    "1": "Answer 1 is more complete and follows the rubric more closely.",
    "2": "Answer 2 is more accurate and better organised.",
    "tie": "Both answers are about equally good.",
}
SENTENCES = (
    "The answer is {a}.",
    "In short: {a}, then {b}.",
    "{A} matters most here; {b} matters less.",
    "It depends on {a}, but usually {b}.",
)
FALLBACK_WORDS = ("the request", "the main point", "the result", "the details")
NOT_JSON = "Sorry, I could not put that into the requested format, but the gist is {a}."
GRADE_REASON = "The answer meets some of the rubric and misses some."
UNDECIDED = "Both answers have merits and I cannot decide between {a} and {b}."


@dataclasses.dataclass(frozen=True)
class FakeRates:
    """Failure rates and judge bias; the module constants are the defaults."""

    parse_failure: float = PARSE_FAILURE_RATE
    schema_failure: float = SCHEMA_FAILURE_RATE
    judge_parse_failure: float = JUDGE_PARSE_FAILURE_RATE
    judge_bias: tuple[tuple[str, float], ...] = JUDGE_BIAS


class FakeProvider(SchemaModes):
    """Deterministic answers, prompted schema mode, no key, no network."""

    name = "fake"
    version = "fake-2"  # fake-2: a grade gets {reasoning, score}, not a pairwise verdict

    def __init__(self, *, sleep: bool = False, rates: FakeRates | None = None) -> None:
        self.sleep = self.waits = sleep
        self.rates = rates or FakeRates()
        # The seed and text of each request whose output tokens were asked for (the engine
        # reserves before it calls), until that same request is completed: hashed and made
        # once, not twice. Keyed by the request object's id; the entry holds the request,
        # so the id stays its own while the entry is kept.
        self._made: dict[int, tuple[Request, bytes, str]] = {}

    def __repr__(self) -> str:
        return f"<FakeProvider sleep={self.sleep}>"

    def outcome(self, request: Request) -> str:
        """What the fake does with this request: "text", "json", "verdict", "grade",
        "parse_failure" or "schema_failure" (the last may still give valid JSON for a schema
        that accepts anything)."""
        request = self.prepare(request)
        return self._outcome(request, _seed(request))

    def _outcome(self, request: Request, seed: bytes) -> str:
        roll = _fraction(seed, "outcome")
        if request.purpose == "judge":
            if roll < self.rates.judge_parse_failure:
                return "parse_failure"
            if request.schema is None and not request.order:
                return "grade"
            return "verdict" if _is_verdict(request) else "json"
        if request.schema is None:
            return "text"
        if roll < self.rates.parse_failure:
            return "parse_failure"
        if roll < self.rates.parse_failure + self.rates.schema_failure:
            return "schema_failure"
        return "json"

    def output_token_limit(self, request: Request) -> int:
        """The output tokens the completion of `request` will be counted at."""
        prepared = self.prepare(request)
        seed = _seed(prepared)
        text = self._text(prepared, seed)
        if len(self._made) >= MADE_KEPT:
            self._made.clear()  # asked for and never completed (a cancelled run): forgotten
        self._made[id(request)] = (request, seed, text)
        return estimate_tokens(clean_text(text))

    async def complete(self, request: Request, client: HttpClient | None = None) -> Completion:
        """The deterministic completion for ``request``; sleeps only if built with sleep."""
        made = self._made.pop(id(request), None)
        asked, request = request, self.prepare(request)
        if made is not None and made[0] is asked:
            _, seed, text = made
        else:
            seed = _seed(request)
            text = self._text(request, seed)
        low, high = LATENCY_MS
        latency = low + int(_fraction(seed, "latency") * (high - low + 1))
        if self.sleep:
            await asyncio.sleep(latency / 1000)
        return estimated_completion(
            text,
            request,
            provider=self.name,
            schema_mode=self.schema_mode(request),
            provider_model=request.model_name,
            simulated_latency_ms=latency,
        )

    def _text(self, request: Request, seed: bytes) -> str:
        rng = random.Random(seed)
        words = _prompt_words(request)
        outcome = self._outcome(request, seed)
        if outcome == "text":
            count = 1 + int(_fraction(seed, "sentences") * 2)
            return " ".join(_sentence(rng, words) for _ in range(count))
        if outcome == "parse_failure":
            template = UNDECIDED if request.purpose == "judge" else NOT_JSON
            return template.format(a=rng.choice(words), b=rng.choice(words))
        if outcome == "verdict":
            winner = _weighted(self.rates.judge_bias, _fraction(seed, "winner"))
            return json.dumps({"reason": REASONS.get(winner, REASONS["tie"]), "winner": winner})
        if outcome == "grade":
            score = 1 + int(_fraction(seed, "score") * 5)
            return json.dumps({"reasoning": GRADE_REASON, "score": score})
        value = fake_json.generate(request.schema, rng)
        if outcome == "schema_failure":
            broken = fake_json.violate(request.schema, value)
            value = value if broken is None else broken
        return json.dumps(value, ensure_ascii=False)


def _seed(request: Request) -> bytes:
    text = json.dumps(request.answer_json(), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def _fraction(seed: bytes, label: str) -> float:
    """A number in [0, 1) from the seed, independent for each label."""
    digest = hashlib.sha256(seed + label.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _weighted(choices: tuple[tuple[str, float], ...], roll: float) -> str:
    total = sum(weight for _, weight in choices)
    running = 0.0
    for value, weight in choices:
        running += weight / total
        if roll < running:
            return value
    return choices[-1][0]


def _is_verdict(request: Request) -> bool:
    properties: Any = (request.schema or {}).get("properties")
    return request.schema is None or (isinstance(properties, dict) and "winner" in properties)


def _prompt_words(request: Request) -> list[str]:
    users = [message_text(m) for m in request.messages if m["role"] == "user"]
    prompt = (users[-1] if users else "").split(SCHEMA_INSTRUCTION)[0]
    found = re.findall(r"[A-Za-z]{4,}", prompt)
    words = list(dict.fromkeys(word.lower() for word in found))[:40]
    return words or list(FALLBACK_WORDS)


def _sentence(rng: random.Random, words: list[str]) -> str:
    a, b = rng.choice(words), rng.choice(words)
    return rng.choice(SENTENCES).format(a=a, b=b, A=a[:1].upper() + a[1:])
