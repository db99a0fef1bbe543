"""Planning does per case only what differs by case: a contestant is parsed once and a
task's templates gathered once for each variant, and each cell's messages are still what
render_messages gives for it (no database)."""

from __future__ import annotations

from unittest import mock

from evalsite.core import plan, prompts
from evalsite.core.plan import plan_cells
from evalsite.core.providers.base import Request
from evalsite.core.suites import parse_contestant, parse_document, render_messages

CONTESTANTS = ["fake/small", "fake/small@terse", "fake/large@base", "fake/large@own"]


def _suite(cases: int):
    rows = [{"id": f"c{n:04}", "vars": {"q": f"question {n}"}} for n in range(cases)]
    document = {
        "suite": "many", "version": 1, "models": CONTESTANTS,
        "variants": {"terse": {"system": "Answer in a word about {{q}}."}, "own": {}},
        "tasks": [
            {"id": "t", "prompt": "Say {{q}}", "system": "Be kind.", "cases": rows,
             "variants": {"own": {"prompt": [{"role": "user", "content": "Own {{q}}"}]}}},
            {"id": "u", "prompt": [{"role": "system", "content": "S {{q}}"},
                                   {"role": "user", "content": "U {{q}}"}], "cases": rows[:3]},
        ],
    }  # fmt: skip
    return parse_document(document, filename="many.json")


def test_each_cell_has_the_messages_render_messages_gives_it():
    suite = _suite(5)
    cells = plan_cells(suite, CONTESTANTS, repeats=2)
    assert len(cells) == (5 + 3) * 4 * 2
    for cell in cells:
        text = CONTESTANTS[[str(parse_contestant(c)) for c in CONTESTANTS].index(cell.contestant)]
        rendered = render_messages(suite, cell.task_id, cell.case_id, parse_contestant(text))
        assert cell.request.messages == Request("m/m", rendered).messages


def test_a_contestant_is_parsed_and_a_tasks_templates_gathered_once_not_once_a_case():
    suite = _suite(500)
    parsed = mock.patch.object(plan, "parse_contestant", wraps=parse_contestant)
    gathered = mock.patch.object(prompts, "message_pieces", wraps=prompts.message_pieces)
    with parsed as parses, gathered as gathers:
        cells = plan_cells(suite, CONTESTANTS, repeats=1)
    assert len(cells) == 503 * 4
    assert parses.call_count == 4
    assert gathers.call_count == 2 * 3  # two tasks, three variants (base twice: None)
