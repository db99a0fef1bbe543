"""A template text is read once, not once a case: validating and planning a 2,000-case
suite scan its few texts a fixed number of times, and render gives what one regex
substitution gave (no database)."""

from __future__ import annotations

import re

import pytest

from evalsite.core import templating
from evalsite.core.plan import plan_cells
from evalsite.core.suites import parse_document
from evalsite.core.templating import TemplateError, format_value, render

TEXTS = [
    "", "plain", "{{a}}", "{{ a }}|{{a}}|{{   a}}", "x {{a}} y {{b}} z {{a}}", "{{a}}{{b}}",
    "{{b}} {{a-b}} {{_c}}", "{ {a} } {{a", "{{a}}\n{{b}}", "{{\na}}", "é {{a}} ü", "{{{a}}}",
]  # fmt: skip
VARS = {"a": "{{b}}", "b": 2, "a-b": None, "_c": True}


def _substituted(text: str, variables) -> str:
    """What render returned before: one regex substitution over the whole text."""
    token = re.compile(r"\{\{([^{}\n]*)\}\}")
    return token.sub(lambda m: format_value(variables[m.group(1).strip()]), text)


@pytest.mark.parametrize("text", TEXTS)
def test_render_gives_what_one_substitution_gave(text: str) -> None:
    assert render(text, VARS) == _substituted(text, VARS)


def test_a_missing_var_and_a_malformed_token_are_refused_as_before() -> None:
    with pytest.raises(TemplateError) as caught:
        render("{{a}} {{x}} {{ a | upper }} {% if %} {{y}}", {"a": 1})
    assert caught.value.missing == ("x", "y")
    assert caught.value.invalid == ("{{ a | upper }}", "{% if %}")


class _Counted:
    """The token pattern, counting the scans of a text."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern, self.scans = pattern, 0

    def __getattr__(self, name: str):
        self.scans += 1
        return getattr(self.pattern, name)


def _suite(cases: int):
    rows = [{"id": f"c{n:05}", "vars": {"q": f"question {n}"}} for n in range(cases)]
    document = {
        "suite": "many", "version": 1, "models": ["fake/small", "fake/small@terse"],
        "variants": {"terse": {"system": "Answer in a word about {{q}}."}},
        "tasks": [{"id": "t", "prompt": "Say {{q}}", "system": "Be kind.", "cases": rows}],
    }  # fmt: skip
    return parse_document(document, filename="many.json")


@pytest.mark.parametrize("cases", [20, 2000])
def test_validating_and_planning_scan_each_text_a_fixed_number_of_times(monkeypatch, cases):
    templating._read.cache_clear()  # texts read by an earlier test count here too
    counted = _Counted(templating._TOKEN)
    monkeypatch.setattr(templating, "_TOKEN", counted)
    suite = _suite(cases)
    cells = plan_cells(suite, list(suite.models), repeats=1)
    assert len(cells) == 2 * cases
    assert (
        cells[-1].request.messages[0]["content"] == f"Answer in a word about question {cases - 1}."
    )
    assert counted.scans <= 8  # four texts (prompt, two systems), read and split once each
