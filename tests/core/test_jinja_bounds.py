"""Issue 25: every way a Jinja template can grow a value or spend work is bounded, per render
and per suite, and a template nested too deeply is a problem at its line (no database)."""

from __future__ import annotations

from typing import Any

import pytest

from evalsite.core import jinja, jinja_budget, prompts
from evalsite.core.plan import plan_cells
from evalsite.core.suites import SuiteError, parse_suite

JINJA = "suite: s\nversion: 1\ntemplating: jinja2\nmodels: [fake/small]\n"
BIG = "y" * 100_000  # a var of 100,000 characters
DOUBLING = (
    "{% set a = namespace(s='x') %}{% for i in range(24) %}"
    "{% set a.s = a.s OP a.s %}{% endfor %}{{ a.s|length }}"
)


def refusal(template: str, **variables: Any) -> jinja.JinjaError:
    with pytest.raises(jinja.JinjaError) as caught:
        jinja.render(template, variables)
    return caught.value


def bounded(error: jinja.JinjaError) -> bool:
    """Whether rendering stopped at the value bound or the work bound."""
    value = f"would hold more than {jinja.MAX_CHARS:,} characters or items"
    work = f"the template's rendering exceeds {jinja.MAX_WORK:,} units of work"
    return error.over_budget and (value in error.message or work in error.message)


def problems_of(text: str, origin: str = "file") -> list[str]:
    with pytest.raises(SuiteError) as caught:
        parse_suite(text.encode(), filename="s.yaml", origin=origin)
    return [f"{problem.line}: {problem.message}" for problem in caught.value.problems]


# --- values: every way a string or list grows ------------------------------------------------


@pytest.mark.parametrize("operator", ["~", "+"])
def test_doubling_a_namespace_string_stops_at_a_bound(operator: str) -> None:
    error = refusal(DOUBLING.replace("OP", operator))
    assert bounded(error), error.message
    assert error.line == 1


@pytest.mark.parametrize(
    "template",
    [
        "{% set ns = namespace(l=[1]) %}{% for i in range(24) %}{% set ns.l = ns.l + ns.l %}"
        "{% endfor %}",
        "{% set ns = namespace(l=[1]) %}{% for i in range(24) %}{% set ns.l = ns.l * 2 %}"
        "{% endfor %}",
        "{{ x" + " ~ x" * 60 + " }}",
        "{% set l = [x, x, x, x, x, x, x, x, x, x] %}{{ (l * 6)|join }}",
        "{% set l = [x, x, x, x, x, x, x, x, x, x] %}{{ (l * 6)|string }}",
        "{{ ('%s' * 60)|format(*([x] * 60)) }}",
        "{{ ('%s' * 60) % ((x,) * 50) }}",
        "{{ ('{0}' * 60).format(x) }}",
        "{{ ' '.join([x] * 50) }}",
        "{{ x.replace('y', 'yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy') }}",
        "{{ (x|replace('y', '\t')).expandtabs(99999) }}",
        "{{ x|replace('y', 'yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy') }}",
        "{{ x|wordwrap(1, break_long_words=true, wrapstring='-----------------------------------"
        "-------------------------------') }}",
        "{{ x|replace('y', 'y\n')|indent(99999) }}",
        "{% set t %}{% for i in range(100) %}{{ x }}{% endfor %}{% endset %}{{ t|length }}",
        "{% macro m() %}{% for i in range(100) %}{{ x }}{% endfor %}{% endmacro %}{{ m()|length }}",
        "{% filter upper %}{% for i in range(100) %}{{ x }}{% endfor %}{% endfilter %}",
        "{% set l = [] %}{% for i in range(100) %}{% set _ = l.append(x) %}{% endfor %}{{ l }}",
        "{{ [x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x,"
        " x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x] }}",
    ],
)
def test_every_way_to_grow_a_value_stops_at_a_bound(template: str) -> None:
    assert bounded(refusal(template, x=BIG))


# --- work: what a render reads and builds, in all ---------------------------------------------


def test_the_issue_s_upper_loop_stops_at_the_work_bound_at_its_line() -> None:
    error = refusal('\n{% for i in range(300) %}{% set s = ("x" * 5000000)|upper %}{% endfor %}')
    assert error.over_budget
    assert error.line == 2
    assert error.message == (
        f"the template's rendering exceeds {jinja.MAX_WORK:,} units of work "
        "(text read or built, operations run; a loop doing too much?)"
    )


@pytest.mark.parametrize(
    "template",
    [
        "{% for i in range(10000) %}{% set t = x[1:] %}{% endfor %}",  # slices
        "{% for i in range(10000) %}{% if x == y %}{% endif %}{% endfor %}",  # comparisons
        "{% for i in range(10000) %}{% if 'z' in x %}{% endif %}{% endfor %}",
        "{% for i in range(10000) %}{% if x is in y %}{% endif %}{% endfor %}",  # tests
        "{% for i in range(10000) %}{% set n = x.count('y') %}{% endfor %}",  # methods
        "{% for i in range(10000) %}{% set n = x|wordcount %}{% endfor %}",  # filters
        "{% for i in range(1000) %}{% set n = x|urlize %}{% endfor %}",  # slow filters
    ],
)
def test_reading_long_text_over_and_over_stops_at_the_work_bound(template: str) -> None:
    error = refusal(template, x=BIG, y=BIG)
    assert error.over_budget
    assert "units of work" in error.message


@pytest.mark.parametrize(
    "template",
    [
        "{% for i in range(100000) %}{% set s = 'a'" + "|lower" * 90 + " %}{% endfor %}",
        "{% for i in range(100000) %}{% set s = i" + " - 1" * 90 + " %}{% endfor %}",
        "{% for i in range(100000) %}{% set s = [" + "i, " * 2000 + "] %}{% endfor %}",
        "{% for i in range(100000) %}{% set s = loop.index" + ".real" * 90 + " %}{% endfor %}",
    ],
)
def test_cheap_operations_and_long_literals_in_a_loop_stop_at_the_work_bound(
    template: str,
) -> None:
    error = refusal(template)
    assert error.over_budget
    assert "units of work" in error.message


def test_an_ordinary_prompt_renders_within_the_bounds() -> None:
    template = (
        "{% for shot in shots.split('|') %}Q: {{ shot|trim|capitalize }}\n"
        "{% if loop.last %}{{ question ~ '?' }}{% endif %}{% endfor %}"
        "{{ (x|wordwrap(80))[:10] }}{{ x|length }}"
    )
    rendered = jinja.render(template, {"shots": "a | b", "question": "why", "x": BIG})
    assert rendered == "Q: A\nQ: B\nwhy?yyyyyyyyyy100000"


def test_macros_nested_past_the_bound_stop_the_same_wherever_the_render_is_called() -> None:
    template = "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(N) }}"
    assert jinja.render(template.replace("N", str(jinja.MAX_MACRO_DEPTH - 1)), {}) == ""

    def nested(calls: int) -> jinja.JinjaError:  # a caller deep in a web server's stack
        return nested(calls - 1) if calls else refusal(template.replace("N", "120"))

    error = nested(300)
    assert error.over_budget
    assert error.message == f"macros call one another more than {jinja.MAX_MACRO_DEPTH} deep"


# --- the suite: all its renders together -----------------------------------------------------


def many_cases(loop: str = "{% for i in range(100) %}{{ i }}{% endfor %}") -> str:
    cases = "".join(f"      - {{id: c{n}}}\n" for n in range(50))
    return JINJA + f"tasks:\n  - id: t\n    prompt: '{loop}'\n    cases:\n" + cases


def test_an_uploaded_suite_s_renders_together_stop_at_the_suite_bound_reported_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(jinja_budget, "MAX_SUITE_STEPS", 2_000)
    # 409 steps a case: the fifth case stops
    assert problems_of(many_cases(), origin="upload") == [
        "13: case 'c4' of task 't' fails to render tasks[0].prompt: template line 1: the "
        "suite's templates together exceed 2,000 steps (the cases after this one were not "
        "rendered)"
    ]


def test_a_suite_read_from_a_file_has_no_bound_on_its_renders_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The operator's own suite: 8,000 cases of a modest template were refused at 100,000,000
    # units together; each render keeps its own bounds.
    monkeypatch.setattr(jinja_budget, "MAX_SUITE_STEPS", 2_000)
    suite = parse_suite(many_cases().encode(), filename="s.yaml", origin="file")
    assert len(suite.tasks[0].cases) == 50


def test_a_plan_renders_each_case_once_for_every_contestant_and_repeat(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    suite = parse_suite(
        (
            JINJA + "tasks:\n  - id: t\n    prompt: '{{ name|upper }}'\n"
            "    cases: [{id: a, vars: {name: ada}}, {id: b, vars: {name: bob}}]\n"
        ).encode(),
        filename="s.yaml",
    )
    rendered: list[str] = []
    real = jinja.render

    def counting(text: str, variables: Any, **options: Any) -> str:
        rendered.append(text)
        return real(text, variables, **options)

    monkeypatch.setattr(prompts.jinja, "render", counting)
    cells = plan_cells(suite, ["fake/small", "fake/large", "scripted/x"], repeats=5)
    assert len(cells) == 30
    assert len(rendered) == 2
    assert cells[0].request.messages[0]["content"] == "ADA"


# --- nesting (issue 25 item 12) --------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "line"),
    [
        ("\n\n{{ " + "(" * 500 + "1" + ")" * 500 + " }}", 3),
        ("{{ " + "[" * 500 + "]" * 500 + " }}", 1),
        ("{% if a %}\n" * 200 + "x" + "{% endif %}" * 200, jinja.MAX_NESTING + 1),
        ("{{ " + "not " * 2000 + "a }}", 1),
        ("{{ " + "- " * 2000 + "1 }}", 1),
        ("{{ 1" + " + 1" * 5000 + " }}", 1),
        ("{{ a" + ".b" * 5000 + " }}", 1),
        ("{{ a" + "|upper" * 5000 + " }}", 1),
    ],
)
def test_a_template_nested_too_deeply_is_a_problem_at_its_line(template: str, line: int) -> None:
    error = jinja.check(template)
    assert error is not None
    assert error.line == line
    assert error.message.startswith("the template nests too deeply"), error.message


def test_five_hundred_parentheses_in_a_suite_are_a_problem_at_the_prompt_s_line() -> None:
    prompt = "{{ " + "(" * 500 + "1" + ")" * 500 + " }}"
    text = JINJA + f"tasks:\n  - id: t\n    prompt: '{prompt}'\n    cases: [{{id: c}}]\n"
    (problem,) = problems_of(text)
    assert problem.startswith("7: does not compile: template line 1: the template nests too")
