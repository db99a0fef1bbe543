"""Judge runs over a pair set (SPEC §10.5) and the lab's figures, where the ORM meets the core.

A lab run is an ordinary :class:`~runs.models.Run` whose answers were given, not generated:
its suite (``lab-<pair set>``, one case per pair, prompt ``{{question}}``) is registered
like an uploaded one, its contestants are ``given/a`` (the baseline side) and ``given/b``,
and its Answer rows are stored already done with the pair's texts. It is planned by the run
planner (:func:`runs.planning.planner.make_plan` with the given answers), which resolves the judge
(price, key, replies), estimates its calls and creates the run as for a suite's run; the
engine then scores the answers, forms the pairs and makes the two judge calls of each
through the cache, the spend reservation against the cap and the retries, and writes a
report. Over the cap nothing is stored or spent.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import Count, Q, Sum

from evalsite.core.exitcodes import ExitCode
from evalsite.core.pairsets import PREFER, LabCase, LabVerdict, lab_figures, lab_suite_yaml
from evalsite.core.problems import Problem
from evalsite.core.suite_schema import MODEL
from evalsite.core.suites import SuiteError, parse_suite
from lab.models import PairSet, PairSetJudgeRun
from runs.models import Call, Judgement, Run, SuiteVersion
from runs.planning.launch import launch
from runs.planning.start import Plan, PlanError, RunOptions, make_plan, store_plan

CONTESTANTS = ["given/a", "given/b"]


class LabError(Exception):
    """The lab cannot do what was asked; ``problems`` say why, ``code`` is the exit code
    (2 input, 4 refused over the cap)."""

    def __init__(self, problems: Sequence[Problem | str], code: ExitCode = ExitCode.INPUT_ERROR):
        self.problems = tuple(problems)
        self.code = code
        super().__init__("\n".join(str(problem) for problem in self.problems))


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
    """A judge run of a pair set as the run planner resolved and estimated it (``plan``);
    nothing stored yet, not even its suite."""

    pairset: PairSet
    config: JudgeConfig
    name: str
    yaml_text: str
    plan: Plan

    def refusal(self) -> str:
        estimate = self.plan.estimate
        return (
            f"refused: the estimate ${Decimal(estimate['total_usd']):.4f} for "
            f"{estimate['calls']} judge calls is over the cap ${self.plan.cap:.4f}; nothing "
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
    """The lab run's suite and given answers, planned by the run planner (the judge's
    model string, price row, key or replies, and the estimate of its calls); LabError
    (exit 2) for anything unusable. Nothing is stored."""
    model = config.model.strip()
    if not re.match(MODEL, model) or model.startswith("given/"):
        raise LabError([f"{model!r} is not a judge model: expected 'provider/model', "
                        "e.g. openai/gpt-4o-mini"])  # fmt: skip
    fields = ("task_id", "case_id", "question", "answer_a", "answer_b")
    items = list(pairset.items.values_list(*fields))
    cases = [LabCase(t, c, q) for t, c, q, _, _ in items]
    text = lab_suite_yaml(pairset.name, cases, judge=model, rubric=config.rubric)
    try:
        suite = parse_suite(text.encode("utf-8"), filename=f"{pairset.suite_name}.yaml",
                            origin="upload")  # fmt: skip
    except SuiteError as error:
        raise LabError(error.problems) from None
    given = {
        (task_id, case_id, contestant): answer
        for task_id, case_id, _, *answers in items
        for contestant, answer in zip(CONTESTANTS, answers, strict=True)
    }
    options = RunOptions(
        fake=config.fake, replies=config.replies, max_cost=config.max_cost, env=dict(config.env)
    )
    try:
        plan = make_plan(None, suite, options, given=given)
    except PlanError as error:
        raise LabError([str(error)], error.code) from None
    return LabPlan(pairset, config, judge_name(model, config.rubric, fake=config.fake), text, plan)


@transaction.atomic
def start_judge_run(lab: LabPlan, *, user=None) -> Run:
    """Register the lab suite and store the run with its given answers (the planner's
    `store_plan`) and its link to the pair set, to execute here (``pairs judge``:
    ``runs.engine.local.execute_here``). Over the cap: LabError (exit 4) and nothing is
    stored."""
    member = _member(user)
    run = store_plan(_registered(lab, member), user=member)
    _link(lab, run)
    return run


def launch_judge_run(lab: LabPlan, *, user, form_nonce: str = "") -> tuple[Run, bool]:
    """The lab page's judge run, launched as the new-run form launches a run
    (:func:`runs.planning.launch.launch`): stored with its link to the pair set and queued
    for the workers; the same rendering of the form posted again gets the run it started
    (False). Over the cap, or a key the server lacks: LabError and nothing is stored."""
    member = _member(user)
    with transaction.atomic():
        plan = _registered(lab, member)
        try:
            return launch(plan, user=member, form_nonce=form_nonce, then=partial(_link, lab))
        except PlanError as error:
            raise LabError([str(error)], error.code) from None


def _member(user):
    return user if user is not None and user.is_authenticated else None


def _registered(lab: LabPlan, member) -> Plan:
    """The lab's plan with its suite registered (LabError when over the cap)."""
    if lab.plan.over_cap:
        raise LabError([lab.refusal()], ExitCode.REFUSED)
    version, _ = SuiteVersion.objects.register(
        lab.plan.suite, lab.yaml_text, origin=SuiteVersion.Origin.LAB, user=member
    )
    return dataclasses.replace(lab.plan, version=version)


def _link(lab: LabPlan, run: Run) -> None:
    """The run's link to its pair set and judge configuration."""
    config = lab.config
    PairSetJudgeRun.objects.create(
        pairset=lab.pairset, run=run, name=lab.name, judge=config.model.strip(),
        rubric=config.rubric, fake=config.fake,
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
    lab_names: dict[str, PairSetJudgeRun] = {}
    for lab in runs:
        name = lab.name if lab.name not in imported else f"{lab.name} (lab)"
        lab_names[name] = lab
        verdicts += _lab_verdicts(name, lab.run, by_case)
    figures = lab_figures(votes, verdicts, judges=[*imported, *lab_names])
    for name, judge in figures["judges"].items():
        ran = lab_names.get(name)
        judge |= _lab_cost(ran) if ran else {"source": "imported", "cost_usd": None}
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
