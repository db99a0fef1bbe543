"""The judge lab (SPEC §10.5) where the ORM meets the core: importing a pair set, running a
judge configuration over it through the run engine, and the lab's figures.

A lab run is an ordinary :class:`~runs.models.Run` whose answers were given, not generated:
its suite (``lab-<pair set>``, one case per pair, prompt ``{{question}}``) is registered
like an uploaded one, its contestants are ``given/a`` (the baseline side) and ``given/b``,
and its Answer rows are stored already done with the pair's texts. The engine then scores
them, forms the pairs and makes the two judge calls of each through the cache, the spend
reservation against the cap and the retries, and writes a report. Before anything is
stored the judge is resolved (price, key, replies) and its calls estimated; over the cap
nothing is stored or spent.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from evalsite.core.exitcodes import ExitCode
from evalsite.core.judging import PairSide, judge_config
from evalsite.core.pairsets import (
    PREFER,
    LabCase,
    LabVerdict,
    PairSetError,
    lab_cases,
    lab_figures,
    lab_suite_yaml,
    pairset_name,
    parse_pairset,
)
from evalsite.core.plan import EstimateLine, call_hash, input_tokens, max_output_tokens
from evalsite.core.pricing import Usage, call_cost, suggest, unknown_model_message
from evalsite.core.problems import Problem
from evalsite.core.prompts import render_messages
from evalsite.core.providers import (
    Provider,
    ProviderError,
    RepliesFileError,
    Request,
    ScriptedReplies,
    build_provider,
)
from evalsite.core.suite_schema import MODEL
from evalsite.core.suites import Suite, SuiteError, parse_suite
from labels.models import PairSet, PairSetItem, PairSetJudgeRun
from runs.calibration import run_calibration
from runs.judging import pair_requests, task_text
from runs.models import (
    Answer,
    CachedResponse,
    Call,
    Judgement,
    Pair,
    PriceTable,
    Run,
    SuiteVersion,
    text_sha,
)
from runs.planner import DEFAULT_CAP_USD, endpoint_configs, new_run_id
from runs.prices import NoActivePriceTable, active_table
from runs.scoring import stored_suite

CONTESTANTS = ["given/a", "given/b"]
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,59}$")
_UNPRICED_PROVIDERS = ("scripted", "command")


class LabError(Exception):
    """The lab cannot do what was asked; ``problems`` say why, ``code`` is the exit code
    (2 input, 4 refused over the cap)."""

    def __init__(self, problems: Sequence[Problem | str], code: ExitCode = ExitCode.INPUT_ERROR):
        self.problems = tuple(problems)
        self.code = code
        super().__init__("\n".join(str(problem) for problem in self.problems))


# --- importing ----------------------------------------------------------------------------


def import_pairset(
    data: bytes, *, filename: str, name: str | None = None, user=None
) -> tuple[PairSet, tuple[Problem, ...]]:
    """Store the pairs of a JSONL file as a pair set named ``name`` (default: the file's
    stem); returns it and the file's warnings. LabError with every problem, nothing stored."""
    chosen = name if name is not None else pairset_name(filename)
    if not _NAME.match(chosen):
        raise LabError([f"the name {chosen!r} is not usable: use lowercase letters, digits "
                        "and '-', at most 60 characters"])  # fmt: skip
    try:
        parsed = parse_pairset(data, filename=filename)
    except PairSetError as error:
        raise LabError(error.problems) from None
    cases = lab_cases(parsed.pairs)
    try:
        with transaction.atomic():
            pairset = PairSet.objects.create(
                name=chosen,
                source_name=filename[-255:],
                sha256=parsed.sha256,
                created_by=user if user is not None and user.is_authenticated else None,
            )
            PairSetItem.objects.bulk_create(
                (
                    _item(pairset, pair, case)
                    for pair, case in zip(parsed.pairs, cases, strict=True)
                ),
                batch_size=500,
            )
    except IntegrityError:
        message = f"a pair set named {chosen!r} exists already: choose another name"
        raise LabError([message]) from None
    return pairset, parsed.warnings


def _item(pairset: PairSet, pair, case: LabCase) -> PairSetItem:
    return PairSetItem(
        pairset=pairset,
        line=pair.line,
        pair_id=pair.id,
        task=pair.task or "",
        task_id=case.task_id,
        case_id=case.case_id,
        question=pair.question,
        answer_a=pair.answer_a,
        answer_b=pair.answer_b,
        model_a=pair.model_a,
        model_b=pair.model_b,
        votes=[{"labeller": v.labeller, "prefer": v.prefer} for v in pair.votes],
        verdicts=[{"judge": v.judge, "order": v.order, "prefer": v.prefer} for v in pair.verdicts],
    )


# --- a judge configuration over a pair set --------------------------------------------------


@dataclass
class JudgeConfig:
    model: str
    rubric: str = ""
    fake: bool = False
    replies: str | None = None  # a scripted judge's replies file
    max_cost: Decimal | None = None
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))


@dataclass
class LabPlan:
    """A judge run resolved and estimated, nothing stored yet."""

    pairset: PairSet
    config: JudgeConfig
    name: str
    suite: Suite
    yaml_text: str
    table: PriceTable
    estimate: dict
    cap: Decimal

    @property
    def over_cap(self) -> bool:
        return Decimal(self.estimate["total_usd"]) > self.cap

    def refusal(self) -> str:
        return (
            f"refused: the estimate ${Decimal(self.estimate['total_usd']):.4f} for "
            f"{self.estimate['calls']} judge calls is over the cap ${self.cap:.4f}; nothing "
            "was stored or spent (raise --max-cost)"
        )


def judge_name(model: str, rubric: str = "", *, fake: bool = False) -> str:
    """The judge's name in the lab: the model, ``+<rubric sha256 8>`` with a rubric, and
    ``+fake`` when a real model string was answered by the fake adapter."""
    name = model
    if rubric.strip():
        name += "+" + _rubric_sha(rubric)
    if fake and not model.startswith("fake/"):
        name += "+fake"
    return name


def _rubric_sha(rubric: str) -> str:
    return hashlib.sha256(rubric.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def plan_judge_run(pairset: PairSet, config: JudgeConfig) -> LabPlan:
    """Resolve the judge (model string, price row, key or replies) and estimate its calls;
    LabError (exit 2) for anything unusable. Nothing is stored."""
    model = config.model.strip()
    if not re.match(MODEL, model) or model.startswith("given/"):
        raise LabError([f"{model!r} is not a judge model: expected 'provider/model', "
                        "e.g. openai/gpt-4o-mini"])  # fmt: skip
    try:
        table = active_table()
    except NoActivePriceTable as error:
        raise LabError([str(error)]) from None
    rows = {price.model: price.to_row() for price in table.prices.all()}
    priced_elsewhere = model.partition("/")[0] in _UNPRICED_PROVIDERS
    if model not in rows and not (config.fake or priced_elsewhere):
        raise LabError([unknown_model_message(model, suggest(model, rows), table.name)])
    fields = ("task_id", "case_id", "question", "answer_a", "answer_b")
    items = list(pairset.items.values_list(*fields))
    cases = [LabCase(t, c, q) for t, c, q, _, _ in items]
    text = lab_suite_yaml(pairset.name, cases, judge=model, rubric=config.rubric)
    try:
        suite = parse_suite(text.encode("utf-8"), filename=f"{pairset.suite_name}.yaml",
                            origin="upload")  # fmt: skip
    except SuiteError as error:
        raise LabError(error.problems) from None
    provider = _judge_provider(model, config, [(c.task_id, c.case_id) for c in cases])
    requests = judge_requests(suite, model, [(t, c, a, b) for t, c, _, a, b in items])
    estimate = _estimate(requests, provider, rows.get(model))
    name = judge_name(model, config.rubric, fake=config.fake)
    cap = config.max_cost or DEFAULT_CAP_USD
    return LabPlan(pairset, config, name, suite, text, table, estimate, cap)


def _judge_provider(model: str, config: JudgeConfig, cases: list[tuple[str, str]]) -> Provider:
    replies = None
    try:
        if config.replies:
            replies = ScriptedReplies.load(config.replies)
        provider = build_provider(
            model, env=config.env, endpoints=endpoint_configs(), replies=replies,
            fake=config.fake,
        )  # fmt: skip
    except (ProviderError, RepliesFileError) as error:
        raise LabError([str(error)]) from None
    if replies is not None and provider.name == "scripted":
        missing = replies.missing_judge(model.partition("/")[2], cases)
        if missing:
            shown = ", ".join(missing[:10]) + (" …" if len(missing) > 10 else "")
            raise LabError([f"{replies.filename} has no reply for the judge {model} on: {shown}"])
    return provider


def judge_requests(
    suite: Suite, model: str, pairs: Sequence[tuple[str, str, str, str]]
) -> list[Request]:
    """The judge calls the engine will make for ``(task, case, answer a, answer b)`` pairs
    (a is the baseline), built by the engine's own `pair_requests`, so their hashes find the
    cache and the estimate counts the calls that will be paid."""
    return [
        request
        for task_id, case_id, answer_a, answer_b in pairs
        for _, request in pair_requests(
            suite, model, (task_id, case_id, 0), PairSide(answer_a), PairSide(answer_b)
        )
    ]


def _estimate(requests: list[Request], provider: Provider, row) -> dict:
    """The pre-flight estimate of the judge calls not already cached: prompt characters ÷ 4
    in, ``max_tokens`` out (the planner's rule), priced by the judge's row."""
    hashes = [call_hash(request, provider) for request in requests]
    cached = set(
        CachedResponse.objects.filter(request_hash__in=hashes).values_list(
            "request_hash", flat=True
        )
    )
    line = EstimateLine("judge", priced=row is not None, output_source={"max_tokens"})
    for request, digest in zip(requests, hashes, strict=True):
        line.calls += 1
        if digest in cached:
            line.cached_calls += 1
            continue
        prepared = provider.prepare(request)
        usage = Usage(input_tokens(prepared), max_output_tokens(prepared))
        line.input_tokens += usage.input_tokens
        line.output_tokens += usage.output_tokens
        if row is not None:
            line.cost_usd += call_cost(row, usage) or Decimal(0)
    return {
        "contestants": [],
        "judge": line.as_dict(),
        "answers_usd": "0",
        "total_usd": str(line.cost_usd),
        "cached_calls": line.cached_calls,
        "calls": line.calls,
    }


@transaction.atomic
def start_judge_run(plan: LabPlan, *, user=None) -> Run:
    """Store the lab run (suite version, run, its given answers, the link to the pair set)
    ready for the engine: ``runs.runner.execute`` or ``runs.tasks.enqueue_run``. Over the
    cap: LabError (exit 4) and nothing is stored."""
    if plan.over_cap:
        raise LabError([plan.refusal()], ExitCode.REFUSED)
    member = user if user is not None and user.is_authenticated else None
    version, _ = SuiteVersion.objects.register(
        plan.suite, plan.yaml_text, origin=SuiteVersion.Origin.LAB, user=member
    )
    config = plan.config
    run = Run.objects.create(
        id=new_run_id(version.sha256, CONTESTANTS),
        suite_version=version,
        contestants=CONTESTANTS,
        judge=judge_config(plan.suite, config.model.strip()),
        price_table=plan.table,
        options={
            "fake": config.fake,
            "no_cache": False,
            "replies": os.path.abspath(config.replies) if config.replies else "",
            "only": "",
            "concurrency": settings.EVALSITE_MAX_CONCURRENCY,
            "lab": plan.pairset.pk,
        },
        estimate=plan.estimate,
        cap_usd=plan.cap,
        created_by=member,
    )
    Answer.objects.bulk_create(_given_answers(run, plan), batch_size=500)
    PairSetJudgeRun.objects.create(
        pairset=plan.pairset, run=run, name=plan.name, judge=config.model.strip(),
        rubric=config.rubric, fake=config.fake,
    )  # fmt: skip
    return run


def _given_answers(run: Run, plan: LabPlan):
    now = timezone.now()
    items = plan.pairset.items.values_list("task_id", "case_id", "answer_a", "answer_b")
    for task_id, case_id, *texts in items.iterator(chunk_size=500):
        messages = render_messages(plan.suite, task_id, case_id)
        for contestant, text in zip(CONTESTANTS, texts, strict=True):
            request = Request.from_params(contestant, messages, {}, task_id=task_id,
                                          case_id=case_id)  # fmt: skip
            yield Answer(
                run=run, task_id=task_id, case_id=case_id, contestant=contestant, repeat=0,
                status=Call.Status.DONE, request=request.to_json(), request_hash=text_sha(text),
                text=text, cost_usd=Decimal(0), cost_if_uncached_usd=Decimal(0),
                finished_at=now,
            )  # fmt: skip


# --- the figures --------------------------------------------------------------------------


def lab_report(pairset: PairSet) -> dict[str, Any]:
    """The lab's figures for ``pairset``: the humans' agreement and, for each judge (the
    imported ones, then each judge configuration's latest finished lab run), kappa of order
    1, order 2 and the combined verdict against the human consensus, flips and cost."""
    items = list(pairset.items.values_list("pair_id", "case_id", "votes", "verdicts"))
    votes = {pair: {v["labeller"]: v["prefer"] for v in given} for pair, _, given, _ in items}
    verdicts = [
        LabVerdict(v["judge"], pair, v["order"], v["prefer"])
        for pair, _, _, given in items
        for v in given
    ]
    imported = list(dict.fromkeys(verdict.judge for verdict in verdicts))
    by_case = {case: pair for pair, case, _, _ in items}
    runs = latest_lab_runs(pairset)
    lab_names = {}
    for lab in runs:
        name = lab.name if lab.name not in imported else f"{lab.name} (lab)"
        lab_names[name] = lab
        verdicts += _lab_verdicts(name, lab.run, by_case)
    figures = lab_figures(votes, verdicts, judges=[*imported, *lab_names])
    for name, judge in figures["judges"].items():
        lab = lab_names.get(name)
        judge |= _lab_cost(lab) if lab else {"source": "imported", "cost_usd": None}
    return {"name": pairset.name} | figures


def latest_lab_runs(pairset: PairSet) -> list[PairSetJudgeRun]:
    """Each judge configuration's latest finished (done) lab run, in the order the
    configurations were first run."""
    done = pairset.judge_runs.filter(run__status=Run.Status.DONE).select_related("run")
    latest: dict[str, PairSetJudgeRun] = {}
    for lab in done.order_by("created_at", "pk"):
        latest[lab.name] = lab  # a key keeps its first place when its value is replaced
    return list(latest.values())


def _lab_verdicts(name: str, run: Run, by_case: Mapping[str, str]) -> list[LabVerdict]:
    rows = Judgement.objects.filter(
        run=run, kind=Judgement.Kind.PAIR, status=Call.Status.DONE,
        parse_status=Judgement.Parse.OK,
    ).values_list("case_id", "order", "side")  # fmt: skip
    return [
        LabVerdict(name, by_case[case], order, PREFER[side])
        for case, order, side in rows
        if case in by_case
    ]


def _lab_cost(lab: PairSetJudgeRun) -> dict[str, Any]:
    """What the run's judge calls cost: this run (cache hits cost nothing) and if uncached;
    None when the judge has no price row (scripted/…, command/…)."""
    totals = Judgement.objects.filter(run=lab.run).aggregate(
        cost=Sum("cost_usd"),
        uncached=Sum("cost_if_uncached_usd"),
        calls=Count("pk"),
        cached=Count("pk", filter=Q(cached=True)),
    )
    return {
        "source": "lab",
        "judge_model": lab.judge,
        "rubric_sha": _rubric_sha(lab.rubric) if lab.rubric.strip() else None,
        "run_id": lab.run_id,
        "simulated": lab.fake,
        "calls": totals["calls"],
        "cache_hits": totals["cached"],
        "cost_usd": _usd(totals["cost"]),
        "cost_if_uncached_usd": _usd(totals["uncached"]),
    }


def _usd(value: Decimal | None) -> float | None:
    return None if value is None else round(float(value), 6)


# --- a suite's labelled pairs as a pair set -----------------------------------------------------


_SIDE_TO_PAIRSET = {"baseline": "a", "candidate": "b", "tie": "tie"}


def suite_pairs_jsonl(suite) -> bytes:
    """The labelled, judged pairs of the suite's calibration run in the pair-set format
    (SPEC §10.5): answer_a is the baseline's answer, the votes are the labels that apply to
    the pair (the same matching as the run's calibration: one entry per judged item, at its
    first pair), and the run's judge verdicts are kept as given, in both orders. LabError
    when there is nothing labelled to take."""
    run = Run.objects.calibration_run(suite)
    if run is None:
        raise LabError([f"suite {suite.name} has no judged run"])
    core = stored_suite(run.suite_version)
    votes = {item.pair: item.votes for item in run_calibration(run, core).judged}
    if not votes:
        raise LabError(
            [f"no labelled, judged pair in the calibration run {run.id} of {suite.name}"]
        )
    pairs = Pair.objects.filter(pk__in=list(votes)).select_related("baseline", "candidate")
    verdicts: dict[int, list[dict]] = {}
    for call in Judgement.objects.filter(pair__in=list(votes), kind=Judgement.Kind.PAIR):
        if call.side:
            verdicts.setdefault(call.pair_id, []).append(
                {
                    "judge": call.judge_model,
                    "order": call.order,
                    "prefer": _SIDE_TO_PAIRSET[call.side],
                }  # fmt: skip
            )
    lines = []
    for pair in pairs.order_by("pk"):
        row = {
            "id": f"{pair.task_id}/{pair.case_id}/{pair.repeat}",
            "task": pair.task_id,
            "question": task_text(core, pair.task_id, pair.case_id),
            "answer_a": pair.baseline.text,
            "answer_b": pair.candidate.text,
            "model_a": pair.baseline_contestant,
            "model_b": pair.candidate_contestant,
            "votes": [
                {"labeller": who, "prefer": _SIDE_TO_PAIRSET[prefer]}
                for who, prefer in sorted(votes[pair.pk].items())
            ],
            "judge": sorted(verdicts.get(pair.pk, []), key=lambda v: v["order"]),
        }
        lines.append(json.dumps(row, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode()


def import_suite_pairs(suite, *, name: str | None = None, user=None) -> PairSet:
    """A pair set of the suite's labelled pairs, to compare judges on the team's own labels."""
    data = suite_pairs_jsonl(suite)
    pairset, _ = import_pairset(data, filename=f"{suite.name}-labelled.jsonl", name=name, user=user)
    return pairset
