"""Cross-references, templates at load time, variants and prompt rendering (no database)."""

from __future__ import annotations

from typing import Any

import pytest

from evalsite.core.suites import (
    Problem,
    Suite,
    SuiteError,
    parse_contestant,
    parse_suite,
    render_messages,
    request_params,
)

HEADER = "suite: s\nversion: 1\n"
ONE_TASK = (
    HEADER
    + """\
tasks:
  - id: greet
    prompt: "Hi {{name}}"
    cases:
      - {id: ada, vars: {name: Ada}}
"""
)


def parse(text: str, **options: Any) -> Suite:
    return parse_suite(text.encode(), filename="s.yaml", **options)


def errors(text: str) -> list[Problem]:
    with pytest.raises(SuiteError) as caught:
        parse(text)
    return list(caught.value.problems)


def located(text: str) -> list[tuple[int | None, str, str]]:
    return [(p.line, p.path, p.message) for p in errors(text)]


def test_duplicate_task_ids_name_the_first_line() -> None:
    text = (
        ONE_TASK
        + '  - id: greet\n    prompt: "Yo {{name}}"\n    cases: [{id: bob, vars: {name: Bob}}]\n'
    )
    assert located(text) == [(8, "tasks[1].id", "duplicate task id 'greet' (first at line 4)")]


def test_a_label_naming_an_unknown_task_or_case_is_an_error() -> None:
    text = ONE_TASK + (
        "labels:\n"
        "  - {task: gret, case: ada, baseline: fake/a, candidate: fake/b, prefer: tie}\n"
        "  - {task: greet, case: adda, baseline: fake/a, candidate: fake/b, prefer: tie}\n"
        "  - {task: greet, case: ada, baseline: fake/a, candidate: fake/a, prefer: tie}\n"
    )
    assert located(text) == [
        (9, "labels[0].task", "unknown task 'gret' - did you mean 'greet'?"),
        (10, "labels[1].case", "unknown case 'adda' in task 'greet' - did you mean 'ada'?"),
        (11, "labels[2].candidate", "baseline and candidate are the same contestant"),
    ]


def test_unknown_variants_are_errors_wherever_they_are_named() -> None:
    text = (
        HEADER
        + """\
models: [fake/a, fake/b@concize, fake/c@base]
variants:
  concise: {system: short}
gate:
  min_win_rate_lower_bound: {fake/b@terse: 0.4}
tasks:
  - id: greet
    prompt: "Hi {{name}}"
    variants: {consice: {prompt: "Yo {{name}}"}}
    cases: [{id: ada, vars: {name: Ada}}]
labels:
  - {task: greet, case: ada, baseline: fake/a, candidate: fake/b@shorter, prefer: tie}
"""
    )
    assert located(text) == [
        (3, "models[1]", "unknown variant 'concize' - did you mean 'concise'?"),
        (
            7,
            'gate.min_win_rate_lower_bound["fake/b@terse"]',
            "unknown variant 'terse'; known: concise",
        ),
        (11, "tasks[0].variants.consice", "unknown variant 'consice' - did you mean 'concise'?"),
        (14, "labels[0].candidate", "unknown variant 'shorter'; known: concise"),
    ]


def test_a_variant_named_base_is_refused() -> None:
    text = ONE_TASK + "variants:\n  base: {system: x}\n"
    assert located(text) == [
        (9, "variants.base", "'base' is reserved: it means the tasks as written")
    ]


def test_a_contestant_listed_twice_in_models_is_refused() -> None:
    text = ONE_TASK + "models: [fake/a, fake/a]\n"
    assert located(text) == [
        (8, "models[1]", "duplicate contestant 'fake/a' in models (first at line 8)")
    ]


def test_an_invalid_task_schema_is_an_error_at_its_line() -> None:
    text = (
        HEADER
        + """\
tasks:
  - id: t
    prompt: hi
    schema:
      type: object
      properties:
        a: {type: strnig}
    cases: [{id: c}]
"""
    )
    ((line, path, message),) = located(text)
    assert (line, path) == (9, "tasks[0].schema.properties.a.type")
    assert message.startswith(
        "not a valid JSON Schema: 'strnig' is not valid under any of the given schemas"
    )


def test_regexes_must_compile_and_json_paths_must_parse() -> None:
    text = (
        HEADER
        + """\
tasks:
  - id: t
    prompt: hi
    checks:
      - {regex: "a(b"}
      - {json_path: {path: "$.a[0]['b c']", equals: 1}}
      - {json_path: {path: "a.b", equals: 1}}
    cases: [{id: c}]
"""
    )
    found = located(text)
    assert [(line, path) for line, path, _ in found] == [
        (7, "tasks[0].checks[0].regex"),
        (9, "tasks[0].checks[2].json_path.path"),
    ]
    assert found[0][2] == "invalid regular expression: missing ): a(b"  # RE2's reason


def test_an_execution_check_needs_run_after_merging() -> None:
    text = (
        HEADER
        + """\
tasks:
  - id: t
    prompt: hi
    check: {setup: "echo hi > f", timeout_s: 5}
    cases:
      - {id: has-run, check: {run: "test -f f"}}
      - {id: lacks-run}
"""
    )
    assert located(text) == [
        (
            9,
            "tasks[0].cases[1].check",
            "an execution check needs 'run' (on the task's check or the case's)",
        )
    ]


def test_a_case_check_is_merged_over_the_task_check() -> None:
    text = (
        HEADER
        + """\
tasks:
  - id: t
    prompt: hi
    check: {setup: "make fixture", run: "test -s out", timeout_s: 5}
    cases:
      - {id: a}
      - {id: b, check: {run: "test -s other"}}
"""
    )
    a, b = parse(text).tasks[0].cases
    assert a.check == {"setup": "make fixture", "run": "test -s out", "timeout_s": 5}
    assert b.check == {"setup": "make fixture", "run": "test -s other", "timeout_s": 5}


@pytest.mark.parametrize(
    ("prompt", "problem"),
    [
        ("[{role: user, content: a}, {role: system, content: b}]",
         (6, "tasks[0].prompt[1].role", "a system message may only be the first message")),
        ("[{role: system, content: a}]",
         (5, "tasks[0].prompt", "a messages prompt needs a user or assistant message")),
    ],
)  # fmt: skip
def test_messages_prompts_keep_system_first(prompt: str, problem: tuple[int, str, str]) -> None:
    flat = prompt.replace("}, {", "},\n      {")
    text = HEADER + f"tasks:\n  - id: t\n    prompt: {flat}\n    cases: [{{id: c}}]\n"
    assert problem in located(text)


def test_a_system_prompt_given_twice_is_refused() -> None:
    text = (
        HEADER
        + "tasks:\n  - id: t\n    system: x\n"
        + "    prompt: [{role: system, content: y}, {role: user, content: z}]\n"
        + "    cases: [{id: c}]\n"
    )
    assert located(text) == [
        (
            5,
            "tasks[0].system",
            "the system prompt is given twice: by 'system' and by the first message",
        )
    ]


def test_a_missing_placeholder_var_names_task_case_and_placeholder() -> None:
    text = ONE_TASK + "      - {id: bob, vars: {nmae: Bob}}\n"
    assert located(text) == [
        (8, "tasks[0].cases[1]",
         "case 'bob' of task 'greet' has no var for {{name}} (used in tasks[0].prompt) "
         "- the case has var 'nmae'"),
    ]  # fmt: skip


def test_a_missing_var_used_only_by_a_variant_names_the_variant() -> None:
    text = (
        HEADER
        + """\
variants:
  formal: {system: "Address {{title}} formally."}
tasks:
  - id: greet
    prompt: "Hi {{name}}"
    cases:
      - {id: ada, vars: {name: Ada, title: Countess}}
      - {id: bob, vars: {name: Bob}}
"""
    )
    assert located(text) == [
        (10, "tasks[0].cases[1]",
         "case 'bob' of task 'greet' has no var for {{title}} "
         "(used in variants.formal.system; variant formal)"),
    ]  # fmt: skip


def test_a_task_variant_text_renders_for_every_case_at_load() -> None:
    text = (
        HEADER
        + """\
variants:
  terse: {}
tasks:
  - id: greet
    prompt: "Hi {{name}}"
    variants: {terse: {prompt: "{{name}}, {{greeting}}"}}
    cases: [{id: ada, vars: {name: Ada}}]
"""
    )
    ((line, path, message),) = located(text)
    assert (line, path) == (9, "tasks[0].cases[0]")
    assert "{{greeting}} (used in tasks[0].variants.terse.prompt; variant terse)" in message


def test_an_expression_in_a_prompt_is_an_error_at_the_prompt() -> None:
    text = (
        HEADER
        + 'tasks:\n  - id: t\n    prompt: "Hi {{ name | upper }}"\n'
        + "    cases: [{id: c, vars: {name: x}}]\n"
    )
    found = located(text)
    assert found[0][:2] == (5, "tasks[0].prompt")
    assert found[0][2].startswith("{{ name | upper }} is not a placeholder")


def test_a_var_no_placeholder_uses_is_a_warning() -> None:
    suite = parse(ONE_TASK + "      - {id: bob, vars: {name: Bob, unused: 1}}\n")
    assert [(w.line, w.path, w.message, w.severity) for w in suite.warnings] == [
        (8, "tasks[0].cases[1].vars.unused",
         "var 'unused' is used by no placeholder of task 'greet' (1 case(s))", "warning"),
    ]  # fmt: skip
    assert str(suite.warnings[0]).startswith(
        "s.yaml:8: tasks[0].cases[1].vars.unused: warning: var"
    )


def test_a_var_used_only_by_a_variant_is_not_unused() -> None:
    text = (
        HEADER
        + 'variants:\n  v: {system: "{{tone}}"}\n'
        + "tasks:\n  - id: t\n    prompt: hi\n    cases: [{id: c, vars: {tone: dry}}]\n"
    )
    assert parse(text).warnings == ()


def test_yaml_11_coercions_of_var_values_are_warned_about() -> None:
    text = (
        HEADER
        + """\
tasks:
  - id: t
    prompt: "{{country}} {{version}} {{flag}} {{quoted}}"
    cases:
      - {id: c, vars: {country: NO, version: 1.10, flag: true, quoted: 'NO'}}
"""
    )
    suite = parse(text)
    assert suite.tasks[0].cases[0].vars == {
        "country": False,
        "version": 1.1,
        "flag": True,
        "quoted": "NO",
    }
    assert [w.message for w in suite.warnings] == [
        "YAML reads NO as false, so prompts get 'false'; quote it ('NO') to keep the text",
        "YAML reads 1.10 as 1.1, so prompts get '1.1'; quote it ('1.10') to keep the text",
    ]
    assert render_messages(suite, "t", "c")[0]["content"] == "false 1.1 true NO"


VARIANTS = (
    HEADER
    + """\
defaults: {temperature: 0, max_tokens: 100, system: "House style."}
variants:
  concise: {system: "Few words.", params: {temperature: 0.5}}
  chatty: {prompt: "Chat about {{topic}}", system: ""}
tasks:
  - id: explain
    prompt: "Explain {{topic}}"
    max_tokens: 300
    variants:
      concise: {prompt: "Explain {{topic}} in one line"}
    cases: [{id: dns, vars: {topic: DNS}}]
  - id: chat
    prompt:
      - {role: system, content: "You are a tutor on {{topic}}."}
      - {role: user, content: "Teach me {{topic}}"}
      - {role: assistant, content: "Sure."}
      - {role: user, content: "Go on, {{topic}}"}
    cases: [{id: tls, vars: {topic: TLS}}]
"""
)


def messages(task: str, case: str, contestant: str | None = None) -> list[dict[str, str]]:
    suite = parse(VARIANTS)
    return render_messages(suite, task, case, parse_contestant(contestant) if contestant else None)


def test_the_base_prompt_gets_the_default_system() -> None:
    assert messages("explain", "dns") == [
        {"role": "system", "content": "House style."},
        {"role": "user", "content": "Explain DNS"},
    ]


def test_a_messages_list_prompt_renders_every_turn_with_its_own_system_first() -> None:
    assert messages("chat", "tls", "fake/a@base") == [
        {"role": "system", "content": "You are a tutor on TLS."},
        {"role": "user", "content": "Teach me TLS"},
        {"role": "assistant", "content": "Sure."},
        {"role": "user", "content": "Go on, TLS"},
    ]


def test_a_task_variant_overrides_only_that_tasks_prompt() -> None:
    assert messages("explain", "dns", "fake/a@concise") == [
        {"role": "system", "content": "Few words."},
        {"role": "user", "content": "Explain DNS in one line"},
    ]
    assert messages("chat", "tls", "fake/a@concise")[0] == {
        "role": "system",
        "content": "Few words.",
    }
    assert messages("chat", "tls", "fake/a@concise")[1:] == messages("chat", "tls")[1:]


def test_a_suite_variant_prompt_and_empty_system_apply_to_every_task() -> None:
    assert messages("explain", "dns", "fake/a@chatty") == [
        {"role": "user", "content": "Chat about DNS"}
    ]
    assert messages("chat", "tls", "fake/a@chatty") == [
        {"role": "user", "content": "Chat about TLS"}
    ]


def test_params_come_from_defaults_then_task_then_variant() -> None:
    suite = parse(VARIANTS)
    assert request_params(suite, "explain") == {"temperature": 0, "max_tokens": 300}
    concise = parse_contestant("fake/a@concise")
    assert request_params(suite, "explain", concise) == {"temperature": 0.5, "max_tokens": 300}


def test_a_substituted_var_is_not_expanded_again_in_a_prompt() -> None:
    suite = parse(ONE_TASK + '      - {id: tricky, vars: {name: "{{name}}"}}\n')
    assert render_messages(suite, "greet", "tricky") == [{"role": "user", "content": "Hi {{name}}"}]


@pytest.mark.parametrize(
    ("task", "case", "contestant", "error"),
    [("nope", "ada", None, "no task 'nope'"), ("greet", "nope", None, "no case 'nope'"),
     ("greet", "ada", "fake/a@nope", "no variant 'nope'")],
)  # fmt: skip
def test_render_messages_refuses_unknown_names(
    task: str, case: str, contestant: str | None, error: str
) -> None:
    suite = parse(ONE_TASK)
    with pytest.raises(ValueError, match=error):
        render_messages(suite, task, case, parse_contestant(contestant) if contestant else None)


def test_a_graded_task_without_a_judge_block_is_an_error_at_its_grade():
    text = (
        "suite: g\nversion: 1\nmodels: [fake/a]\ntasks:\n"
        "  - id: t\n    prompt: hi\n    grade: {rubric: clear}\n    cases: [{id: c}]\n"
    )
    with pytest.raises(SuiteError) as raised:
        parse_suite(text.encode(), filename="g.yaml")
    [problem] = raised.value.problems
    assert problem.line == 7 and "tasks[0].grade" in str(problem) and "judge" in str(problem)
