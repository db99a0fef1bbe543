"""``templating: jinja2``: sandboxed, strict, bounded rendering, checked for every case at
validation; and the default ``{{name}}`` templating refusing Jinja tags (no database, except
the two command-line tests at the end, which run the console script)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from evalsite.core import jinja
from evalsite.core.plan import call_hash, plan_cells
from evalsite.core.providers.fake import FakeProvider
from evalsite.core.suites import Problem, Suite, SuiteError, parse_suite, render_messages
from tests.cli.test_console_script import evalsite

JINJA = "suite: s\nversion: 1\ntemplating: jinja2\nmodels: [fake/small]\n"


def parse(text: str, **options: Any) -> Suite:
    return parse_suite(text.encode(), filename="s.yaml", **options)


def messages_of(text: str, **options: Any) -> list[str]:
    with pytest.raises(SuiteError) as caught:
        parse(text, **options)
    return [problem.message for problem in caught.value.problems]


def problems_of(text: str) -> list[Problem]:
    with pytest.raises(SuiteError) as caught:
        parse(text)
    return list(caught.value.problems)


def one_task(prompt: str, vars_: str = "{name: ada}", header: str = JINJA) -> str:
    return (
        header
        + f"tasks:\n  - id: t\n    prompt: {prompt}\n    cases:\n      - {{id: c, vars: {vars_}}}\n"
    )


# --- rendering -------------------------------------------------------------------------------


def test_variables_conditionals_loops_and_filters_render() -> None:
    text = (
        "Hi {{ name | title }}{% if vip %} (VIP){% endif %}\n"
        "{% for tag in tags.split(',') %}- {{ tag | upper }}\n{% endfor %}"
    )
    rendered = jinja.render(text, {"name": "ada lovelace", "vip": True, "tags": "a,b"})
    assert rendered == "Hi Ada Lovelace (VIP)\n- A\n- B\n"


def test_a_false_var_skips_its_branch() -> None:
    assert jinja.render("x{% if vip %} VIP{% endif %}", {"vip": False}) == "x"


def test_null_and_booleans_render_as_the_default_templating_renders_them() -> None:
    assert jinja.render("[{{ a }}|{{ b }}|{{ c }}]", {"a": None, "b": True, "c": False}) == (
        "[|true|false]"
    )


def test_values_are_not_html_escaped_and_a_trailing_newline_is_kept() -> None:
    assert jinja.render("{{ html }}\n", {"html": "<b>&</b>"}) == "<b>&</b>\n"


def test_random_and_lipsum_are_gone_so_a_prompt_renders_the_same_every_time() -> None:
    assert "No filter named 'random'" in str(jinja.check("{{ [1, 2] | random }}"))
    with pytest.raises(jinja.JinjaError, match="'lipsum' is undefined"):
        jinja.render("{{ lipsum() }}", {})


def test_a_jinja_suite_renders_its_prompts_and_variants_system_prompts() -> None:
    suite = parse(
        JINJA
        + "variants:\n  formal:\n    system: 'Formal{% if vip %}, VIP{% endif %}.'\n"
        + "tasks:\n  - id: t\n    prompt: '{{ name | upper }}'\n"
        + "    cases: [{id: c, vars: {name: ada, vip: true}}]\n"
    )
    assert suite.templating == "jinja2"
    assert render_messages(suite, "t", "c") == [{"role": "user", "content": "ADA"}]
    formal = suite.contestants()[0].__class__("fake/small", "formal")
    assert render_messages(suite, "t", "c", formal) == [
        {"role": "system", "content": "Formal, VIP."},
        {"role": "user", "content": "ADA"},
    ]


def test_every_message_of_a_messages_list_is_a_jinja_template() -> None:
    suite = parse(
        JINJA
        + "tasks:\n  - id: t\n    prompt:\n"
        + "      - {role: system, content: '{{ tone | default(\"calm\") }}'}\n"
        + "      - {role: user, content: '{% for n in range(count) %}{{ n }}{% endfor %}'}\n"
        + "    cases: [{id: c, vars: {count: 3}}]\n"
    )
    assert render_messages(suite, "t", "c") == [
        {"role": "system", "content": "calm"},
        {"role": "user", "content": "012"},
    ]


# --- errors at validation --------------------------------------------------------------------


def test_an_undefined_name_names_the_case_the_prompt_the_line_and_a_close_var() -> None:
    text = one_task("|\n      Hello {{ name }}\n      {{ nmae }}\n     ")
    (problem,) = problems_of(text)
    assert problem.path == "tasks[0].cases[0]"
    assert problem.message == (
        "case 'c' of task 't' fails to render tasks[0].prompt: template line 2: "
        "'nmae' is undefined - the case has var 'name'"
    )


def test_only_the_cases_missing_a_var_are_errors() -> None:
    text = JINJA + (
        "tasks:\n  - id: t\n    prompt: '{{ name }}{% if vip %}!{% endif %}'\n    cases:\n"
        "      - {id: ok, vars: {name: a, vip: true}}\n"
        "      - {id: no-vip, vars: {name: b}}\n"
    )
    assert messages_of(text) == [
        "case 'no-vip' of task 't' fails to render tasks[0].prompt: template line 1: "
        "'vip' is undefined"
    ]


def test_a_variant_only_error_names_the_variant() -> None:
    text = (
        JINJA
        + "variants:\n  formal: {system: '{{ titel }}'}\n"
        + one_task("'{{ name }}'")[len(JINJA) :]
    )
    assert messages_of(text) == [
        "case 'c' of task 't' fails to render variants.formal.system (variant formal): "
        "template line 1: 'titel' is undefined"
    ]


def test_a_syntax_error_is_reported_once_per_text_with_its_line() -> None:
    text = JINJA + (
        "tasks:\n  - id: t\n    prompt: |\n      one\n      {% if name %}\n"
        "    cases: [{id: a, vars: {name: x}}, {id: b, vars: {name: y}}]\n"
    )
    (problem,) = problems_of(text)
    assert problem.path == "tasks[0].prompt"
    assert problem.line == 7
    assert problem.message.startswith("does not compile: template line 2: Unexpected end of")


def test_an_unknown_filter_does_not_compile() -> None:
    assert messages_of(one_task("'{{ name | shout }}'")) == [
        "does not compile: template line 1: No filter named 'shout'."
    ]


def test_an_unused_var_is_a_warning_in_a_jinja_suite_too() -> None:
    suite = parse(one_task("'{{ name }}{% set local = 1 %}{{ local }}'", "{name: a, extra: b}"))
    assert [w.message for w in suite.warnings] == [
        "var 'extra' is used by no placeholder of task 't' (1 case(s))"
    ]


def test_an_unknown_templating_is_a_schema_error() -> None:
    header = JINJA.replace("jinja2", "jinja")
    assert (
        "must be 'default' ({{name}} only) or 'jinja2'"
        in messages_of(one_task("hi", "{}", header))[0]
    )


# --- the sandbox -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expression",
    ["name.__class__", "name.__class__.__mro__", "name.format.__globals__", "cycler.__init__"],
)
def test_python_internals_are_refused_by_the_sandbox(expression: str) -> None:
    (message,) = messages_of(one_task(f"'{{{{ {expression} }}}}'"))
    assert "fails to render tasks[0].prompt: template line 1: refused by the sandbox:" in message


@pytest.mark.parametrize(
    ("tag", "name"),
    [
        ('{% include "secret.txt" %}', "include"),
        ('{% import "secret.txt" as s %}', "import"),
        ('{% from "secret.txt" import x %}', "from"),
        ('{% extends "secret.txt" %}', "extends"),
    ],
)
def test_no_tag_reads_a_file_even_one_beside_the_suite(tmp_path: Path, tag: str, name: str) -> None:
    (tmp_path / "secret.txt").write_text("TOP SECRET")
    text = one_task(f"'{tag}'")
    messages = messages_of(text, base_dir=tmp_path)
    assert messages == [
        f"does not compile: template line 1: {{% {name} %}} is not allowed: a suite's templates "
        "cannot read other files (write the text here, or pass it in a var)"
    ]
    with pytest.raises(jinja.JinjaError):
        jinja.render(tag, {})


# --- the bounds ------------------------------------------------------------------------------


def test_a_loop_of_ten_billion_steps_stops_at_the_step_bound_and_is_reported_once() -> None:
    loop = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    text = JINJA + (
        f"tasks:\n  - id: t\n    prompt: '{loop}'\n    cases: [{{id: a}}, {{id: b}}, {{id: c}}]\n"
    )
    started = time.monotonic()
    messages = messages_of(text)
    assert time.monotonic() - started < 10
    assert messages == [
        "case 'a' of task 't' fails to render tasks[0].prompt: template line 1: the template's "
        f"rendering exceeds {jinja.MAX_STEPS:,} steps (a loop that runs too long?)"
    ]


def test_a_prompt_longer_than_the_bound_is_refused() -> None:
    with pytest.raises(jinja.JinjaError, match="rendered more than") as caught:
        jinja.render("{% for i in range(100000) %}{{ x }}{% endfor %}", {"x": "y" * 100})
    assert caught.value.over_budget


@pytest.mark.parametrize(
    ("template", "refusal"),
    [
        ("{{ 'x' * 1000000000 }}", "the product would hold more than"),
        ("{{ 9 ** 999999999 }}", "is too large a number"),
        ("{{ 'x' | center(1000000000) }}", "the argument 1000000000 is larger than 100,000"),
        ("{{ 'x'.ljust(1000000000) }}", "the argument 1000000000 is larger than 100,000"),
        ("{{ '%999999999d' % 1 }}", "has a width or precision too large"),
        ("{{ '%999999999d' | format(1) }}", "has a width or precision too large"),
        ("{{ '{:>999999999}'.format(1) }}", "has a width or precision too large"),
        ("{{ x | replace('', x) }}", "the replace would hold more than"),
        ("{{ range(100000) | join(x) }}", "the join would hold more than"),
    ],
)
def test_an_expression_that_would_allocate_too_much_is_refused_before_it_runs(
    template: str, refusal: str
) -> None:
    started = time.monotonic()
    with pytest.raises(jinja.JinjaError, match=refusal):
        jinja.render(template, {"x": "y" * 10_000})
    assert time.monotonic() - started < 2


def test_ordinary_uses_of_the_guarded_operations_still_work() -> None:
    template = "{{ '-' * 3 }}{{ 2 ** 10 }}{{ '%05d' % 42 }}{{ 'a b' | replace(' ', '_') }}"
    assert jinja.render(template + "{{ [1, 2] | join(', ') }}", {}) == "---102400042a_b1, 2"


def test_endless_recursion_is_an_error_not_a_crash() -> None:
    with pytest.raises(jinja.JinjaError):
        jinja.render("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}", {})


# --- the default templating refuses tags -----------------------------------------------------

DEFAULT = "suite: s\nversion: 1\nmodels: [fake/small]\n"
HINT = (
    "is a Jinja tag, and this suite's templating is {{name}} only: use `templating: jinja2` "
    "for tags, or write it differently (literal text with {% or {# goes in a var)"
)


def test_the_default_templating_refuses_an_if_tag_with_the_hint() -> None:
    (problem,) = problems_of(one_task("'Hi {{name}}{% if vip %}'", "{name: a}", DEFAULT))
    assert (problem.path, problem.line) == ("tasks[0].prompt", 6)
    assert problem.message == "{% if vip %} " + HINT


def test_the_default_templating_refuses_a_comment_too() -> None:
    assert messages_of(one_task("'Hi {{name}} {# note #}'", "{name: a}", DEFAULT)) == [
        "{# note #} " + HINT
    ]


def test_literal_tag_text_reaches_a_default_prompt_through_a_var() -> None:
    suite = parse(
        one_task("'Explain: {{snippet}}'", "{snippet: '{% if x %}y{% endif %}'}", DEFAULT)
    )
    assert render_messages(suite, "t", "c")[0]["content"] == "Explain: {% if x %}y{% endif %}"


def test_a_lone_percent_brace_is_not_a_tag() -> None:
    suite = parse(one_task("'50% {x} {{name}}'", "{name: a}", DEFAULT))
    assert render_messages(suite, "t", "c")[0]["content"] == "50% {x} a"


# --- cache key and version hash --------------------------------------------------------------


def test_a_changed_template_is_a_new_cache_key_and_the_same_text_the_same_key() -> None:
    fake = FakeProvider()

    def key(prompt: str) -> str:
        (cell,) = plan_cells(
            parse(one_task(prompt, "{name: ada, vip: true}")), ["fake/small"], repeats=1
        )
        return call_hash(cell.request, fake)

    assert key("'Hi {{ name }}{% if vip %}!{% endif %}'") != key("'Hi {{ name }}'")
    assert key("'Hi {{ name }}'") == key("'Hi {{ name }}'")
    # Two templates that render the same text send the same request: the key is the request.
    assert key("'Hi {{ name }}'") == key("'Hi {{ name | lower }}'")


def test_the_templating_key_is_part_of_the_suite_version() -> None:
    default = parse(one_task("'Hi {{ name }}'", "{name: ada}", DEFAULT))
    jinja2 = parse(one_task("'Hi {{ name }}'", "{name: ada}", DEFAULT + "templating: jinja2\n"))
    assert render_messages(default, "t", "c") == render_messages(jinja2, "t", "c")
    assert default.sha256 != jinja2.sha256


# --- the command line ------------------------------------------------------------------------

SUITE = """\
suite: jinja-demo
version: 1
templating: jinja2
models: [fake/small, fake/small@formal]
variants:
  formal:
    system: "Be formal{% if vip %}; this customer is a VIP{% endif %}."
tasks:
  - id: greet
    prompt: |
      Greet {{ name | title }} and list:
      {% for item in items.split(",") %}- {{ item }}
      {% endfor %}
    cases:
      - {id: ada, vars: {name: ada lovelace, items: "a,b", vip: true}}
      - {id: bob, vars: {name: bob, items: "c", vip: false}}
"""


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("jinja-cli")


def test_validate_and_run_fake_a_jinja_suite(data_dir: Path, tmp_path: Path) -> None:
    suite = tmp_path / "jinja.yaml"
    suite.write_text(SUITE)
    validated = evalsite(data_dir, "validate", str(suite))
    assert validated.returncode == 0, validated.stderr
    assert "every prompt rendered" in validated.stdout
    ran = evalsite(data_dir, "run", str(suite), "--fake")
    assert ran.returncode == 0, ran.stderr
    assert "4/4 answers · 0 errors" in ran.stdout + ran.stderr


def test_validate_a_jinja_suite_with_a_typo_exits_2_naming_case_prompt_and_line(
    data_dir: Path, tmp_path: Path
) -> None:
    suite = tmp_path / "typo.yaml"
    suite.write_text(SUITE.replace("{{ name | title }}", "{{ nmae | title }}"))
    result = evalsite(data_dir, "validate", str(suite))
    assert result.returncode == 2
    assert (
        f"{suite}:15: tasks[0].cases[0]: case 'ada' of task 'greet' fails to render "
        "tasks[0].prompt: template line 1: 'nmae' is undefined - the case has var 'name'"
    ) in result.stderr
    assert "Traceback" not in result.stderr
