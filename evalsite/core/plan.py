"""A run's plan as plain values: its cells, their cache keys, and what they may cost.

A *cell* is one answer to produce: (task, case, contestant, repeat) with the request that
answers it. The pre-flight estimate and the per-call spend reservation both price cells
from here, so the two cannot disagree about what a call may cost.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from evalsite.core.judging import CONSISTENCY_SAMPLE_PAIRS
from evalsite.core.media import hashed_part, token_ceiling, token_estimate
from evalsite.core.pricing import PriceRow, Usage, call_cost
from evalsite.core.prompts import Piece, case_messages, variant_pieces
from evalsite.core.providers.base import Provider, Request, message_text, request_media
from evalsite.core.scoring.aggregate import answer_tags
from evalsite.core.suite_params import explicit_params
from evalsite.core.suite_parts import Case, Task
from evalsite.core.suites import Contestant, Suite, parse_contestant, request_params

DEFAULT_MAX_TOKENS = 1024
# Tokens are estimated from characters: the usual 4 characters a token. The worst case
# counts one token per UTF-8 byte (a byte-level tokenizer never does worse), so a spend
# reservation is a true upper bound of the input side.
ESTIMATE_CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 8


@dataclass(frozen=True)
class Cell:
    task_id: str
    case_id: str
    contestant: str
    repeat: int
    request: Request


class SelectionError(ValueError):
    """A case selection that names nothing: `option` is the one at fault (only, tag, limit)."""

    def __init__(self, option: str, message: str):
        super().__init__(message)
        self.option = option


def plan_cells(
    suite: Suite,
    contestants: Sequence[str],
    *,
    repeats: int,
    only: Sequence[str] = (),
    tags: Sequence[str] = (),
    limit: int | None = None,
) -> list[Cell]:
    """Every cell of a run, in a stable order: task, case, repeat, contestant.

    ``only`` holds ``task`` or ``task/case`` selectors (a case is kept when any selector
    names it); ``tags`` keeps a case when it or its task has any of them; ``limit`` keeps
    the first N cases of each task after both. SelectionError names an unknown task, case
    or tag, a limit below 1, or a selection that leaves no case.
    """
    cells = []
    made: dict[tuple[str, str], Request] = {}  # a task's request of a contestant: _cell
    messages = _Messages(suite)
    for task, case in selected_cases(suite, only=only, tags=tags, limit=limit):
        firsts = [_cell(suite, task, case.id, text, messages.of(task, case, text), made)
                  for text in contestants]  # fmt: skip
        cells += firsts
        for repeat in range(1, repeats):  # a repeat's request differs in its number alone
            cells += [_repeated(cell, repeat) for cell in firsts]
    return cells


def selected_cases(
    suite: Suite, *, only: Sequence[str] = (), tags: Sequence[str] = (), limit: int | None = None
) -> list[tuple[Task, Case]]:
    """The (task, case) pairs a run with these filters answers, in suite order."""
    wanted = [_selector(suite, text) for text in only]
    wanted_tags = _known_tags(suite, tags)
    if limit is not None and limit < 1:
        raise SelectionError("limit", f"must be 1 or more, not {limit}")
    kept = []
    for task in suite.tasks:
        cases = [
            case
            for case in task.cases
            if (not wanted or any(t == task.id and c in ("", case.id) for t, c in wanted))
            and (not wanted_tags or wanted_tags & set(answer_tags(task.tags, case.tags)))
        ]
        kept += [(task, case) for case in cases[:limit]]
    if not kept and tags:
        shown = ", ".join(repr(tag) for tag in tags)
        raise SelectionError("tag", f"no case that --only selects has any of the tags {shown}")
    return kept


def _known_tags(suite: Suite, tags: Sequence[str]) -> set[str]:
    """`tags` as a set; SelectionError for one that no task or case of the suite has."""
    known = {tag for task in suite.tasks for case in task.cases
             for tag in answer_tags(task.tags, case.tags)}  # fmt: skip
    for tag in tags:
        if tag not in known:
            listed = ", ".join(sorted(known)[:20]) or "none"
            raise SelectionError("tag", f"no case has the tag {tag!r} (tags: {listed})")
    return set(tags)


class _Messages:
    """The messages of each case for each contestant of a plan: a contestant text is parsed
    once, a task's templates are gathered once for each variant, and a case renders once
    for each variant, not for each cell."""

    def __init__(self, suite: Suite) -> None:
        self.suite = suite
        self.indexes = {task.id: index for index, task in enumerate(suite.tasks)}
        self.parsed: dict[str, Contestant] = {}
        self.pieces: dict[tuple[str, str | None], list[Piece]] = {}
        self.case: tuple[str, str] = ("", "")
        self.rendered: dict[str | None, list[Any]] = {}  # that case's, by variant

    def of(self, task: Task, case: Case, text: str) -> tuple[Contestant, list[Any]]:
        if text not in self.parsed:
            self.parsed[text] = parse_contestant(text)
        contestant = self.parsed[text]
        if (task.id, case.id) != self.case:
            self.case, self.rendered = (task.id, case.id), {}
        variant = contestant.variant
        if variant not in self.rendered:
            if (task.id, variant) not in self.pieces:
                index = self.indexes[task.id]
                self.pieces[task.id, variant] = variant_pieces(self.suite, index, variant)
            self.rendered[variant] = case_messages(self.suite, self.pieces[task.id, variant], case)
        return contestant, self.rendered[variant]


def _cell(
    suite: Suite,
    task: Task,
    case_id: str,
    text: str,
    rendered: tuple[Contestant, list[Any]],
    made: dict[tuple[str, str], Request],
) -> Cell:
    """The first repeat's cell of a case and contestant (`text`; `rendered`: it parsed, and
    its messages for the case). Its request is the one `made` for another case of the task
    with this contestant, with this case's messages: what a contestant is sent besides them
    (its fitted parameters, the schema) is the task's."""
    contestant, messages = rendered
    if (task.id, text) in made:
        request = made[task.id, text].for_case(case_id, messages)
    else:
        request = made[task.id, text] = Request.from_params(
            contestant.model,
            messages,
            request_params(suite, task.id, contestant),
            explicit=explicit_params(suite, contestant),
            schema=task.schema if isinstance(task.schema, Mapping) else None,
            task_id=task.id,
            case_id=case_id,
            repeat=0,
        )
    return Cell(task.id, case_id, str(contestant), 0, request)


def _repeated(cell: Cell, repeat: int) -> Cell:
    return Cell(cell.task_id, cell.case_id, cell.contestant, repeat, cell.request.repeated(repeat))


def _selector(suite: Suite, text: str) -> tuple[str, str]:
    """(task, case or "") of one ``--only`` selector; SelectionError for an unknown one."""
    task_id, _, case_id = text.strip().partition("/")
    try:
        task = suite.task(task_id)
        if case_id:
            task.case(case_id)
    except ValueError as error:
        raise SelectionError("only", str(error)) from None
    return task_id, case_id


def call_hash(request: Request, provider: Provider) -> str:
    """The cache key of `request` answered by `provider` (answers and judge calls alike):
    what it sends, and for a provider whose reply comes from elsewhere than the model (a
    scripted reply) what it would reply, so an edited replies file is never served stale."""
    return request_hash(provider.prepare(request), **_key_context(request, provider))


def _key_context(request: Request, provider: Provider) -> dict[str, Any]:
    """What a cache key holds besides the prepared request (:func:`request_hash`'s
    keywords)."""
    return {
        "provider": provider.name,
        "adapter_version": provider.version,
        "mode": provider.schema_mode(request),
        "reply_source": provider.reply_source(request),
    }


def request_hash(
    request: Request,
    *,
    provider: str,
    adapter_version: str,
    mode: str | None,
    reply_source: str | None = None,
) -> str:
    """The cache key: provider, model, messages, params, schema and mode, repeat, adapter,
    and the reply's source where the provider has one beside the model.

    The timeout is left out: waiting longer does not change the answer.
    """
    return _sha256(
        _canonical(
            request,
            provider=provider,
            adapter_version=adapter_version,
            mode=mode,
            reply_source=reply_source,
        )
    )


def _canonical(
    request: Request,
    *,
    provider: str,
    adapter_version: str,
    mode: str | None,
    reply_source: str | None,
) -> str:
    """The canonical JSON a cache key is the sha256 of."""
    fields = request.answer_json()
    fields["messages"] = [
        {**m, "content": [hashed_part(p) for p in m["content"]]}
        if isinstance(m["content"], list)
        else m
        for m in fields["messages"]
    ]
    payload = {
        "provider": provider,
        "adapter": adapter_version,
        "schema_mode": mode,
        "request": fields,
    }
    if reply_source is not None:
        payload["reply_source"] = reply_source
    return json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _sha256(canonical: str) -> str:
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


class _First:
    """A cell's first repeat: its prepared request, key context and key's canonical JSON,
    and once another repeat asks, that JSON before and after the repeat's number."""

    def __init__(
        self, cell: Cell, prepared: Request, context: dict[str, Any], canonical: str
    ) -> None:
        self.cell, self.prepared, self.context, self.canonical = cell, prepared, context, canonical
        self.fields: tuple[tuple[str, ...], list[int]] | None = None  # once a repeat asks
        self.around: tuple[str, str] | None = None

    def key_of(self, cell: Cell, prepared: Request, context: dict[str, Any]) -> str | None:
        """The key of another repeat of this cell, when its prepared request is this one's
        but for its number (every other field the same object) and its context the same;
        else None."""
        same = (cell.task_id, cell.case_id) == (self.cell.task_id, self.cell.case_id)
        if not same or context != self.context:
            return None
        if self.fields is None:
            self.fields = _fields_but_repeat(self.prepared)
        if _fields_but_repeat(prepared) != self.fields:
            return None
        if self.around is None:
            zero, one = self.canonical, _canonical(self.prepared.repeated(1), **context)
            at = _first_difference(zero, one)  # where "0" and "1" were written: the number
            self.around = zero[:at], zero[at + 1 :]
        head, tail = self.around
        return _sha256(f"{head}{prepared.repeat}{tail}")


def _fields_but_repeat(request: Request) -> tuple[tuple[str, ...], list[int]]:
    """Which objects a request's fields hold (their ids, in field order), its repeat left
    out: two requests with the same are the same request but for its number."""
    fields = request.__dict__
    names, ids = tuple(fields), list(map(id, fields.values()))
    ids[names.index("repeat")] = 0
    return names, ids


def _first_difference(one: str, other: str) -> int:
    """The first index where two texts of the same length differ (they must)."""
    low, high = 0, len(one)  # one[:low] == other[:low], one[:high] != other[:high]
    while high - low > 1:
        middle = (low + high) // 2
        if one[:middle] == other[:middle]:
            low = middle
        else:
            high = middle
    return low


def call_hashes(cells: Sequence[Cell], providers: Mapping[str, Provider]) -> list[str]:
    """:func:`call_hash` of each cell of a plan (`providers`: by contestant), in order.

    A plan's repeats follow their cell's first repeat (:func:`plan_cells`) and differ from
    it in their number alone, so a repeat's key is the first's canonical JSON with its
    number written in: that JSON is made twice a cell, not once a repeat (100,000 answers
    in 20 repeats spent most of their planning on it). A repeat whose prepared request or
    key context is not the first's but for its number is hashed whole.
    """
    hashes = []
    firsts: dict[str, _First] = {}  # by contestant: the last first repeat seen
    for cell in cells:
        provider = providers[cell.contestant]
        prepared, context = provider.prepare(cell.request), _key_context(cell.request, provider)
        first = firsts.get(cell.contestant) if cell.repeat else None
        key = first.key_of(cell, prepared, context) if first is not None else None
        if key is None:
            canonical = _canonical(prepared, **context)
            key = _sha256(canonical)
            if prepared.repeat == 0:
                firsts[cell.contestant] = _First(cell, prepared, context, canonical)
        hashes.append(key)
    return hashes


def prompt_chars(request: Request) -> int:
    text = sum(len(message_text(message)) for message in request.messages)
    return text + (len(json.dumps(request.schema)) if request.schema else 0)


def prompt_bytes(request: Request) -> int:
    text = sum(len(message_text(m).encode("utf-8", "surrogatepass")) for m in request.messages)
    return text + (len(json.dumps(request.schema).encode()) if request.schema else 0)


def input_tokens(request: Request, *, worst: bool = False) -> int:
    """The input tokens of a call: expected, or with ``worst`` at most (text a token a
    byte, each media part at its ceiling, :mod:`evalsite.core.media`)."""
    overhead = MESSAGE_OVERHEAD_TOKENS * len(request.messages)
    media = request_media(request)
    if worst:
        return prompt_bytes(request) + overhead + sum(map(token_ceiling, media))
    text = math.ceil(prompt_chars(request) / ESTIMATE_CHARS_PER_TOKEN)
    return text + overhead + sum(map(token_estimate, media))


def max_output_tokens(request: Request) -> int:
    return request.max_tokens or DEFAULT_MAX_TOKENS


@dataclass(frozen=True)
class WorstCase:
    """The most one call may report and cost: what its spend reservation holds."""

    input_tokens: int
    output_tokens: int
    cost_usd: Decimal


def worst_case(
    request: Request, row: PriceRow | None, *, output_tokens: int | None = None
) -> WorstCase:
    """What one call can report and cost at most: every prompt byte a token, every output
    token allowed (`output_tokens` when the provider knows better than ``max_tokens``),
    the input at the dearer of the fresh and the cached rate."""
    tokens_in = input_tokens(request, worst=True)
    tokens_out = max_output_tokens(request) if output_tokens is None else output_tokens
    cost = Decimal(0)
    if row is not None:
        fresh = call_cost(row, Usage(tokens_in, tokens_out)) or Decimal(0)
        cached = call_cost(row, Usage(0, tokens_out, tokens_in)) or Decimal(0)
        cost = max(fresh, cached)
    return WorstCase(tokens_in, tokens_out, cost)


# --- the pre-flight estimate -------------------------------------------------------------


@dataclass
class EstimateLine:
    """One contestant's (or the judge's) share of the estimate."""

    name: str
    calls: int = 0
    cached_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Decimal = Decimal(0)
    priced: bool = True
    output_source: set[str] = field(default_factory=set)
    priced_as: str = ""  # the row that prices it, when another model's (a dated snapshot's)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "uncached_calls": self.calls - self.cached_calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": str(self.cost_usd.quantize(Decimal("0.000001"))),
            "priced": self.priced,
            "priced_as": self.priced_as,
            "output_tokens_from": sorted(self.output_source),
        }


@dataclass(frozen=True)
class CellCost:
    """What the estimate needs to know about one cell."""

    cell: Cell
    row: PriceRow | None
    cached: bool
    seen_output_tokens: float | None  # mean output tokens the cache has seen, if any


def estimate_answers(costs: Iterable[CellCost]) -> dict[str, EstimateLine]:
    """Calls, tokens and cost per contestant; cached cells count as calls costing nothing."""
    lines: dict[str, EstimateLine] = {}
    # A cell's repeats differ in their number alone, and a plan has them one after another
    # (plan_cells): sized and priced once, added each time. One case kept a contestant, not
    # every case (100,000 cells of one repeat each would keep 100,000).
    sizes: dict[str, tuple[tuple[str, str], tuple[int, int, str, Decimal | None]]] = {}
    for item in costs:
        cell = item.cell
        line = lines.setdefault(cell.contestant, EstimateLine(cell.contestant))
        line.calls += 1
        line.priced = line.priced and item.row is not None
        if item.row is not None and item.row.model != cell.request.model:
            line.priced_as = item.row.model
        if item.cached:
            line.cached_calls += 1
            continue
        case = (cell.task_id, cell.case_id)
        kept = sizes.get(cell.contestant)
        if kept is None or kept[0] != case:
            kept = sizes[cell.contestant] = (case, _size(item))
        tokens_in, output, source, cost = kept[1]
        line.output_source.add(source)
        line.input_tokens += tokens_in
        line.output_tokens += output
        if cost is not None:
            line.cost_usd += cost
    return lines


def _size(item: CellCost) -> tuple[int, int, str, Decimal | None]:
    """A cell's expected input and output tokens, where the output's figure comes from,
    and their cost (None when it is not priced)."""
    output, source = _expected_output(item)
    tokens_in = input_tokens(item.cell.request)
    if item.row is None:
        return tokens_in, output, source, None
    return tokens_in, output, source, call_cost(item.row, Usage(tokens_in, output)) or Decimal(0)


def _expected_output(item: CellCost) -> tuple[int, str]:
    ceiling = max_output_tokens(item.cell.request)
    if item.seen_output_tokens is not None:
        return min(ceiling, math.ceil(item.seen_output_tokens)), "cache history"
    return ceiling, "max_tokens"


def estimate_judge(
    answer_lines: Mapping[str, EstimateLine],
    cells: Sequence[Cell],
    contestants: Sequence[str],
    *,
    judge_row: PriceRow | None,
    judge_max_tokens: int,
    judged_tasks: set[str],
    rubric_chars: int,
    graded_tasks: AbstractSet[str] = frozenset(),
    pairing: str = "baseline",
    graded_cases: AbstractSet[tuple[str, str]] = frozenset(),
    consistency: int = 0,
) -> EstimateLine:
    """Two judge calls per pair of a judged task (the baseline against each candidate, or
    with ``pairing: all`` every two contestants), and one grade call per answer of a graded
    task or of a graded case (``graded_cases``: (task, case)); exclusions and retries are
    unknown yet. With ``consistency`` k, 2k more calls for each pair of the sample asked
    again, at the mean pair's size."""
    line = EstimateLine("judge", priced=judge_row is not None)
    mean_output = {
        name: (est.output_tokens / max(1, est.calls - est.cached_calls))
        for name, est in answer_lines.items()
    }

    def add(calls: int, prompt: int, answers: float) -> None:
        tokens_in = math.ceil(prompt / ESTIMATE_CHARS_PER_TOKEN + answers) + 200
        line.calls += calls
        line.input_tokens += calls * tokens_in
        line.output_tokens += calls * judge_max_tokens
        if judge_row is not None:
            usage = Usage(calls * tokens_in, calls * judge_max_tokens)
            line.cost_usd += call_cost(judge_row, usage) or Decimal(0)

    sizes: list[tuple[int, float]] = []  # (prompt, answers) of each pair: for consistency
    for cell in cells:
        graded = cell.task_id in graded_tasks or (cell.task_id, cell.case_id) in graded_cases
        judged = cell.task_id in judged_tasks and cell.contestant in contestants
        if not graded and not judged:
            continue  # no judge call: its prompt is not measured
        prompt = prompt_chars(cell.request) + rubric_chars
        own = mean_output.get(cell.contestant, 0)
        if graded:
            add(1, prompt, own)
        if not judged:
            continue
        index = contestants.index(cell.contestant)
        partners = contestants[:index] if pairing == "all" else contestants[:1] if index else []
        for partner in partners:
            add(2, prompt, own + mean_output.get(partner, 0))
            sizes.append((prompt, own + mean_output.get(partner, 0)))
    if consistency and sizes:
        sampled = min(CONSISTENCY_SAMPLE_PAIRS, len(sizes))
        prompts, answers = (sum(column) / len(sizes) for column in zip(*sizes, strict=True))
        add(2 * consistency * sampled, math.ceil(prompts), answers)
    line.output_source.add("max_tokens")
    return line
