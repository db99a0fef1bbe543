"""Judge self-consistency (judge.consistency: k, issue 19): a seeded sample of pairs asked
again k times in each order past the cache, the share of extra verdicts that agree with
the first, shown beside the flip rate; the first verdicts and the scores are untouched."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from evalsite.core.report.summary import summary_lines
from evalsite.core.suites import parse_suite
from runs.engine.runner import execute
from runs.models import Judgement, Pair, PriceTable, Run, SuiteVersion
from runs.planning.planner import RunOptions, make_plan, store_plan
from tests.helpers.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True)

SUITE = """\
suite: consistent
version: 1
models: [fake/small, fake/large]
judge:
  model: fake/large
{consistency}
tasks:
  - id: greet
    prompt: "Greet {{{{name}}}}"
    cases:
{cases}
"""


def _run(consistency: str = "  consistency: 2") -> Run:
    PriceTable.objects.ensure_default()
    cases = "\n".join(f"      - {{id: c{i}, vars: {{name: N{i}}}}}" for i in range(12))
    text = SUITE.format(consistency=consistency, cases=cases)
    loaded = parse_suite(text.encode(), filename="consistent.yaml", origin="upload")
    version, _ = SuiteVersion.objects.register(loaded, text, origin="upload")
    plan = make_plan(version, loaded, RunOptions())
    run = store_plan(plan)
    return execute(run.id)


def test_sampled_pairs_are_asked_again_past_the_cache_and_the_agreement_is_reported():
    run = _run()
    assert run.status == Run.Status.DONE, run.detail
    included = Pair.objects.included().filter(run=run).count()
    rechecks = Judgement.objects.filter(run=run, kind=Judgement.Kind.RECHECK)
    assert rechecks.count() == 2 * 2 * included  # fewer pairs than the sample of 50
    firsts = {
        (j.pair_id, j.order): j.request_hash
        for j in Judgement.objects.filter(run=run, kind=Judgement.Kind.PAIR)
    }
    for again in rechecks:
        assert again.request["attempt"] in (1, 2)
        assert again.request_hash != firsts[again.pair_id, again.order]
    consistency = run.report["win_rates"]["fake/large"]["consistency"]
    read = [j for j in rechecks if j.parse_status == "ok" and j.status == "done"]
    first_sides = {
        (j.pair_id, j.order): j.side
        for j in Judgement.objects.filter(run=run, kind="pair", parse_status="ok")
    }
    compared = [j for j in read if (j.pair_id, j.order) in first_sides]
    agree = sum(1 for j in compared if j.side == first_sides[j.pair_id, j.order])
    assert consistency["k"] == 2 and consistency["verdicts"] == len(compared)
    assert consistency["agree"] == agree
    assert consistency["agreement"] == pytest.approx(agree / len(compared), abs=1e-6)
    assert any("judge self-consistency" in line for line in summary_lines(run.report))


def test_the_pair_page_and_the_scores_read_the_first_verdicts_only():
    run = _run()
    plain = _run(consistency="")
    scores = dict(Pair.objects.filter(run=run).values_list("case_id", "score"))
    assert scores == dict(Pair.objects.filter(run=plain).values_list("case_id", "score"))
    assert "consistency" not in plain.report["win_rates"]["fake/large"]
    client = Client()
    client.force_login(make_user(username="member"))
    pair = Pair.objects.filter(run=run).first()
    page = client.get(reverse("pair_detail", args=[run.id, pair.pk]))
    assert page.status_code == 200
    judgements = page.context["judgements"]
    assert [j.kind for j in judgements] == ["pair", "pair"]


def test_the_estimate_counts_the_extra_calls():
    PriceTable.objects.ensure_default()
    cases = "\n".join(f"      - {{id: c{i}, vars: {{name: N{i}}}}}" for i in range(12))
    plans = {}
    for name, consistency in (("with", "  consistency: 3"), ("without", "")):
        text = SUITE.format(consistency=consistency, cases=cases).replace("consistent", name)
        loaded = parse_suite(text.encode(), filename=f"{name}.yaml", origin="upload")
        version, _ = SuiteVersion.objects.register(loaded, text, origin="upload")
        plans[name] = make_plan(version, loaded, RunOptions())
    judge_calls = {name: plan.estimate["judge"]["calls"] for name, plan in plans.items()}
    assert judge_calls["with"] == judge_calls["without"] + 3 * 2 * 12
