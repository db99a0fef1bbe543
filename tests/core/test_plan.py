from dataclasses import replace
from decimal import Decimal

import pytest

from evalsite.core.plan import (
    CellCost,
    estimate_answers,
    estimate_judge,
    input_tokens,
    plan_cells,
    request_hash,
    worst_case,
)
from evalsite.core.pricing import PriceRow, Usage, call_cost
from evalsite.core.providers.base import Request
from evalsite.core.suite_params import explicit_params
from evalsite.core.suites import parse_contestant, parse_suite, render_messages, request_params

SUITE = b"""
suite: plan-test
version: 1
defaults: {max_tokens: 100}
models: [fake/a, fake/b]
judge: {model: fake/j, max_tokens: 50}
variants:
  short: {system: "Be brief."}
tasks:
  - id: one
    prompt: "Hello {{who}}"
    cases: [{id: x, vars: {who: Ada}}, {id: y, vars: {who: Bob}}]
  - id: two
    judge: false
    prompt: "Bye {{who}}"
    cases: [{id: z, vars: {who: Cy}}]
"""
ROW = PriceRow("fake/a", Decimal("1"), Decimal("2"))


@pytest.fixture(scope="module")
def suite():
    return parse_suite(SUITE, filename="plan.yaml", origin="upload")


def test_a_plan_has_one_cell_per_task_case_repeat_and_contestant(suite):
    cells = plan_cells(suite, ["fake/a", "fake/b@short"], repeats=2)
    assert len(cells) == 3 * 2 * 2
    first = cells[0]
    assert (first.task_id, first.case_id, first.repeat, first.contestant) == (
        "one",
        "x",
        0,
        "fake/a",
    )
    variant = next(c for c in cells if c.contestant == "fake/b@short")
    assert variant.request.messages[0] == {"role": "system", "content": "Be brief."}
    assert variant.request.model == "fake/b" and variant.request.max_tokens == 100


def test_a_contestants_parameters_are_fitted_once_a_task_not_once_a_cell(suite, monkeypatch):
    """A 100,000-answer plan fitted the same parameters to the same model 100,000 times; the
    cells' requests are the same as when each was built on its own."""
    fitted = []
    from_params = Request.from_params

    def counted(model, messages, params, **fields):
        fitted.append((fields["task_id"], model))
        return from_params(model, messages, params, **fields)

    monkeypatch.setattr(Request, "from_params", counted)
    cells = plan_cells(suite, ["fake/a", "fake/b@short"], repeats=3)
    assert len(cells) == 3 * 2 * 3
    assert sorted(fitted) == [
        ("one", "fake/a"),
        ("one", "fake/b"),
        ("two", "fake/a"),
        ("two", "fake/b"),
    ]
    monkeypatch.undo()
    for cell in cells:
        contestant = parse_contestant(cell.contestant)
        alone = Request.from_params(
            contestant.model,
            render_messages(suite, cell.task_id, cell.case_id, contestant),
            request_params(suite, cell.task_id, contestant),
            explicit=explicit_params(suite, contestant),
            task_id=cell.task_id,
            case_id=cell.case_id,
            repeat=cell.repeat,
        )
        assert cell.request == alone


def test_only_narrows_the_plan_and_names_an_unknown_task(suite):
    assert {c.case_id for c in plan_cells(suite, ["fake/a"], repeats=1, only=["one"])} == {"x", "y"}
    assert [c.case_id for c in plan_cells(suite, ["fake/a"], repeats=1, only=["one/y"])] == ["y"]
    with pytest.raises(ValueError, match="nope"):
        plan_cells(suite, ["fake/a"], repeats=1, only=["nope"])
    with pytest.raises(ValueError, match="case 'q'"):
        plan_cells(suite, ["fake/a"], repeats=1, only=["one/q"])


def test_only_selectors_add_up(suite):
    cells = plan_cells(suite, ["fake/a"], repeats=1, only=["one/y", "two"])
    assert [(c.task_id, c.case_id) for c in cells] == [("one", "y"), ("two", "z")]


def test_the_request_hash_covers_what_changes_the_answer(suite):
    cells = plan_cells(suite, ["fake/a", "fake/b"], repeats=2)
    base = dict(provider="fake", adapter_version="1", mode=None)
    hashes = {request_hash(c.request, **base) for c in cells}
    assert len(hashes) == len(cells)
    req = cells[0].request
    assert request_hash(req, **base) == request_hash(req, **base)
    assert request_hash(req, **base) != request_hash(req, **{**base, "adapter_version": "2"})
    assert request_hash(req, **base) != request_hash(req, **{**base, "mode": "prompted"})
    assert request_hash(req, **base) != request_hash(req, **{**base, "provider": "openai"})


def test_the_worst_case_bounds_any_call_a_byte_level_tokenizer_can_make():
    request = Request("fake/a", ({"role": "user", "content": "héllo wörld ✓" * 10},), max_tokens=50)
    worst = worst_case(request, ROW).cost_usd
    every_byte_a_token = Usage(len(request.messages[0]["content"].encode()), 50)
    assert worst >= call_cost(ROW, every_byte_a_token)
    assert input_tokens(request) < input_tokens(request, worst=True)
    assert worst_case(request, None).cost_usd == 0


def test_the_estimate_prices_uncached_cells_and_prefers_cache_history(suite):
    cells = plan_cells(suite, ["fake/a", "fake/b"], repeats=1)
    costs = [
        CellCost(
            cell,
            ROW,
            cached=(i == 0),
            seen_output_tokens=20 if cell.contestant == "fake/b" else None,
        )
        for i, cell in enumerate(cells)
    ]
    lines = estimate_answers(costs)
    assert lines["fake/a"].calls == 3 and lines["fake/a"].cached_calls == 1
    assert lines["fake/a"].output_tokens == 2 * 100  # max_tokens for the two uncached
    assert lines["fake/b"].output_tokens == 3 * 20  # what the cache has seen
    assert lines["fake/b"].output_source == {"cache history"}
    assert lines["fake/a"].cost_usd > 0


def test_the_judge_estimate_is_two_calls_per_judged_pair(suite):
    cells = plan_cells(suite, ["fake/a", "fake/b"], repeats=1)
    lines = estimate_answers(CellCost(c, ROW, False, None) for c in cells)
    judge = estimate_judge(
        lines,
        cells,
        ["fake/a", "fake/b"],
        judge_row=ROW,
        judge_max_tokens=50,
        judged_tasks={"one"},
        rubric_chars=0,
    )
    assert judge.calls == 4  # task one has 2 cases, 1 candidate, 2 orders
    assert judge.output_tokens == 4 * 50 and judge.cost_usd > 0


def test_a_cells_repeats_are_sized_once_and_priced_as_each_alone(suite, monkeypatch):
    import evalsite.core.plan as plan

    cells = plan_cells(suite, ["fake/a", "fake/b"], repeats=4)
    alone = [estimate_answers([CellCost(c, ROW, False, None)])[c.contestant] for c in cells]
    sized = []
    measure = plan.input_tokens
    monkeypatch.setattr(plan, "input_tokens", lambda r, **k: sized.append(r) or measure(r, **k))
    lines = estimate_answers(CellCost(c, ROW, False, None) for c in cells)
    assert len(sized) == 3 * 2  # a case and contestant: not each of its 4 repeats
    for name, line in lines.items():
        mine = [one for one, c in zip(alone, cells, strict=True) if c.contestant == name]
        assert line.input_tokens == sum(one.input_tokens for one in mine)
        assert line.cost_usd == sum((one.cost_usd for one in mine), Decimal(0))


def test_the_judge_estimate_measures_no_prompt_of_a_cell_nobody_judges(suite, monkeypatch):
    import evalsite.core.plan as plan

    cells = plan_cells(suite, ["fake/a", "fake/b"], repeats=2)
    lines = estimate_answers(CellCost(c, ROW, False, None) for c in cells)
    measured = []
    measure = plan.prompt_chars
    monkeypatch.setattr(plan, "prompt_chars", lambda r: measured.append(r) or measure(r))
    judge = estimate_judge(
        lines, cells, ["fake/a", "fake/b"], judge_row=ROW, judge_max_tokens=50,
        judged_tasks={"one"}, rubric_chars=0,
    )  # fmt: skip
    assert judge.calls == 2 * 2 * 2  # task one: 2 cases x 2 repeats x 2 orders
    assert len(measured) == 2 * 2 * 2  # task one's cells (2 contestants), not task two's


def test_a_repeats_request_is_its_first_repeats_with_its_number(suite, monkeypatch):
    import evalsite.core.providers.base as base

    normalised = []
    normal = base._normal_messages
    monkeypatch.setattr(base, "_normal_messages", lambda m: normalised.append(m) or normal(m))
    cells = plan_cells(suite, ["fake/a", "fake/b@short"], repeats=5)
    assert len(normalised) == 3 * 2  # once a case and contestant, not for each of 5 repeats
    firsts = {(c.task_id, c.case_id, c.contestant): c.request for c in cells if not c.repeat}
    for cell in cells:
        made = replace(firsts[cell.task_id, cell.case_id, cell.contestant], repeat=cell.repeat)
        assert cell.request == made and cell.request.to_json() == made.to_json()
