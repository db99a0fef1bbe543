"""Check values read the case's vars (docs/checks.md#case-vars-in-checks-and-rubrics): a
`{{name}}` in a text check's value renders with the case's vars in the suite's templating
before the check runs; a regex gets each var as literal text; a value with no placeholder
is used exactly as written; a value that cannot render fails its check, never a crash."""

from __future__ import annotations

from evalsite.core.scoring.answer import score_answer
from evalsite.core.scoring.checks import run_checks
from evalsite.core.suite_parts import Case, Task


def _passed(text: str, check: dict, **case_vars) -> bool:
    return run_checks(text, [check], case_vars=case_vars).passed


def test_an_equals_placeholder_is_the_cases_own_answer():
    check = {"equals": "{{answer}}"}
    assert _passed("B", check, answer="B")
    assert not _passed("B", check, answer="C")
    result = run_checks("B", [check], case_vars={"answer": "C"})
    assert result.note == "expected exactly 'C', got 'B'"


def test_every_text_check_value_renders_with_the_vars():
    vars_ = {"name": "Ada", "other": "Bob", "label": "Billing"}
    checks = [
        {"contains": "Dear {{ name }}"},
        {"not_contains": "{{other}}"},
        {"one_of": ["{{label}}", "none"]},
        {"exact_match": "{{label}}"},
        {"contains": "{{name}}", "case_sensitive": False},
    ]
    assert run_checks("Billing", checks[2:4], case_vars=vars_).passed
    assert run_checks("Dear Ada, hello", checks[:2], case_vars=vars_).passed
    assert not run_checks("Dear Ada and Bob", checks[:2], case_vars=vars_).passed
    assert run_checks("dear ADA", checks[4:], case_vars=vars_).passed


def test_a_json_path_equals_text_renders_but_a_json_spelling_is_taken_as_written():
    value = {"json_path": {"path": "$.city", "equals": "{{capital}}"}}
    assert _passed('{"city": "Paris"}', value, capital="Paris")
    assert not _passed('{"city": "Lyon"}', value, capital="Paris")
    spelled = {"json_path": {"path": "$.n", "equals": '"{{n}}"', "compare": "json_spelling"}}
    assert _passed('{"n": "{{n}}"}', spelled, n="1")


def test_a_regex_inserts_each_var_as_literal_text():
    check = {"regex": "^costs \\${{price}}$"}
    assert _passed("costs $3.50", check, price="3.50")
    assert not _passed("costs $3x50", check, price="3.50")  # '.' from the var is a dot
    assert _passed("costs $(a|b)*", check, price="(a|b)*")  # no pattern syntax from a var
    assert not _passed("costs $a", check, price="(a|b)*")
    assert _passed("x 1.5", {"regex": "{{n}}$"}, n=1.5)
    assert not _passed("x 125", {"regex": "{{n}}$"}, n=1.5)


def test_a_value_with_no_placeholder_is_used_exactly_as_written():
    vars_ = {"answer": "x", "a": "x"}
    assert _passed("{ answer }", {"equals": "{ answer }"}, **vars_)
    assert _passed("aa", {"regex": "a{2}"}, **vars_)
    assert _passed("x }}{ y", {"contains": "}}{"}, **vars_)


def test_a_value_that_cannot_render_fails_its_check_with_the_reason():
    result = run_checks("B", [{"equals": "{{answer}}"}, {"contains": "B"}], case_vars={})
    assert not result.passed
    assert result.results[0].note == "equals cannot render for this case: no value for {{answer}}"
    assert result.results[1].passed


def test_a_jinja2_suite_renders_check_values_in_jinja():
    check = {"equals": "{{ answer | upper }}{% if star %}*{% endif %}"}
    result = run_checks("B*", [check], case_vars={"answer": "b", "star": True}, templating="jinja2")
    assert result.passed
    regex = {"regex": "^{{ n }}{% if exact %}${% endif %}"}
    assert run_checks(
        "1.5", [regex], case_vars={"n": 1.5, "exact": True}, templating="jinja2"
    ).passed
    assert not run_checks(
        "105", [regex], case_vars={"n": 1.5, "exact": True}, templating="jinja2"
    ).passed


def test_an_answer_is_scored_with_its_cases_vars_in_its_suites_templating():
    task = Task(id="quiz", prompt="{{q}}", cases=(), checks=({"equals": "{{ answer|upper }}"},))
    case = Case(id="one", vars={"q": "?", "answer": "b"})
    scored = score_answer(task, case, "B", sandbox=None, allow_python=False, templating="jinja2")
    assert scored.checks.passed and scored.passed
