"""promptfoo configs as people write them (issue 32): an import writes a suite that
validates or exits 2 with the reason and the whole untranslated list; every provider is a
contestant or a listed line; nothing is dropped silently. Each config here is written for
these tests in promptfoo's documented shapes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evalsite.core.importers import check_translation, translate
from evalsite.core.problems import SuiteError
from tests.helpers.factories import run_command


def _config(tmp_path: Path, text: str, **files: str) -> Path:
    for name, content in files.items():
        (tmp_path / name.replace("__", "/")).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name.replace("__", "/")).write_text(content)
    (tmp_path / "promptfooconfig.yaml").write_text(text)
    return tmp_path / "promptfooconfig.yaml"


def _skipped(result) -> dict[str, str]:
    return {item.what: item.why for item in result.untranslated}


def _valid(tmp_path: Path, text: str, **files: str):
    result = translate("promptfoo", _config(tmp_path, text, **files))
    assert check_translation(result) == []
    return result


# --- never an invalid suite; always the list ---------------------------------------------


@pytest.mark.django_db
def test_a_config_with_no_prompt_translated_exits_2_with_the_whole_list(tmp_path):
    source = _config(
        tmp_path,
        "prompts: [pf://team/greeting, file://prompt.py]\n"
        "providers: [openai:gpt-4.1-mini]\n"
        "tests: [{vars: {x: a}, assert: [{type: javascript, value: \"output.split(' ').length < 9\"}]}]\n",
    )
    code, stdout, stderr = run_command(
        "import", "promptfoo", str(source), "--out", str(tmp_path / "x")
    )
    assert code == 2
    assert f"untranslated: {source}:1: prompt pf://team/greeting: a prompt kept in pf://" in stdout
    assert f"untranslated: {source}:1: prompt file://prompt.py:" in stdout
    assert f"untranslated: {source}:3: assertion javascript:" in stdout
    assert "no prompt translated" in stderr and 'prompt: ""' not in stdout
    assert not (tmp_path / "x").exists()


def test_tests_that_all_fail_to_translate_are_refused_not_a_placeholder_case(tmp_path):
    source = _config(tmp_path, "prompts: [Hi]\nproviders: [openai:gpt-4.1]\ntests: [42, nope]\n")
    with pytest.raises(SuiteError, match="no test translated") as caught:
        translate("promptfoo", source)
    assert [item.what for item in caught.value.untranslated] == ["test", "test"]


def test_a_test_generator_is_listed_and_refused_not_one_empty_case(tmp_path):
    # tests: {path, config} used to become one case with no vars, its keys listed
    source = _config(
        tmp_path,
        "prompts: ['Q: {{q}}']\nproviders: [openai:gpt-4.1]\n"
        "tests:\n  path: file://make_tests.ts:generate\n  config: {dataset: x/y}\n",
    )
    with pytest.raises(SuiteError, match="no test translated") as caught:
        translate("promptfoo", source)
    (item,) = caught.value.untranslated
    assert item.what == "tests file://make_tests.ts:generate"
    assert item.why.startswith("a test generator: promptfoo calls the script")


def test_a_tests_path_naming_a_tests_file_is_read_as_one(tmp_path):
    result = _valid(
        tmp_path,
        "prompts: ['Q: {{q}}']\nproviders: [openai:gpt-4.1]\ntests: {path: file://t.yaml}\n",
        **{"t.yaml": "- {vars: {q: one}}\n- {vars: {q: two}}\n"},
    )
    cases = result.suite["tasks"][0]["cases"]
    assert [case["vars"] for case in cases] == [{"q": "one"}, {"q": "two"}]


def test_a_config_without_tests_is_one_case_of_default_test_as_promptfoo_runs_it(tmp_path):
    result = _valid(
        tmp_path,
        "prompts: ['Say {{word}}']\nproviders: [openai:gpt-4.1]\n"
        "defaultTest: {vars: {word: hi}, assert: [{type: contains, value: hi}]}\n",
    )
    assert result.suite["tasks"][0]["cases"] == [
        {"id": "default", "vars": {"word": "hi"}, "checks": [{"contains": "hi"}]}
    ]


@pytest.mark.django_db
def test_a_suite_that_does_not_validate_is_refused_with_the_list(tmp_path, monkeypatch):
    from evalsite.core import importers
    from evalsite.core.problems import Problem

    monkeypatch.setattr(importers, "check_translation", lambda t: [Problem("s", 1, "", "bad")])
    source = _config(
        tmp_path,
        "prompts: [Hi]\nproviders: [openai:gpt-4.1]\n"
        "tests: [{assert: [{type: javascript, value: 'true'}]}]\n",
    )
    code, stdout, stderr = run_command(
        "import", "promptfoo", str(source), "--out", str(tmp_path / "x")
    )
    assert code == 2 and "untranslated:" in stdout and "assertion javascript" in stdout
    assert "nothing was written" in stderr and "error: s:1: bad" in stderr
    assert not (tmp_path / "x").exists()


def test_nunjucks_dump_is_tojson_and_a_filter_jinja_lacks_is_listed(tmp_path):
    result = _valid(
        tmp_path,
        "prompts:\n  - 'Data: {{ item | dump }}'\n  - 'Rows: {{ rows | load }}'\n"
        "providers: [openai:gpt-4.1]\ntests: [{vars: {item: x, rows: y}}]\n",
    )
    assert result.suite["tasks"][0]["prompt"] == "Data: {{ item | tojson }}"
    assert "variants" not in result.suite  # the second prompt did not translate
    assert "No filter named 'load'" in _skipped(result)["prompt"]
    assert any("dump filter is Jinja2's tojson" in note for note in result.notes)


def test_an_llm_rubric_with_no_value_is_listed_not_an_empty_grade(tmp_path):
    result = _valid(
        tmp_path,
        "prompts: [Hi]\nproviders: [openai:gpt-4.1]\n"
        "tests: [{assert: [{type: llm-rubric}, {type: contains, value: a}]}]\n",
    )
    (case,) = result.suite["tasks"][0]["cases"]
    assert "grade" not in case and "judge" not in result.suite
    assert "no rubric text" in _skipped(result)["assertion llm-rubric"]


def test_several_model_graded_assertions_are_one_grade_whose_every_criterion_must_hold(tmp_path):
    """Issue 32 item 7: two llm-rubrics became one averaged grade, unsaid; factuality,
    g-eval and closedqa were not translated at all."""
    result = _valid(
        tmp_path,
        "prompts: ['Answer {{q}}']\nproviders: [openai:gpt-4.1]\n"
        "tests:\n  - vars: {q: sums}\n    assert:\n"
        "      - {type: llm-rubric, value: Says 4., threshold: 0.6}\n"
        "      - {type: llm-rubric, value: Is polite., threshold: 0.8}\n"
        "      - {type: factuality, value: 2+2 is 4}\n"
        "      - {type: g-eval, value: [Clear, Short]}\n"
        "      - {type: model-graded-closedqa, value: 'Does it answer {{q}}?'}\n",
    )
    (case,) = result.suite["tasks"][0]["cases"]
    assert case["grade"] == {
        "criteria": "Every one of these criteria must hold; score the answer by the "
        "criterion it meets least:\n1. Says 4.\n2. Is polite.\n"
        "3. The answer is factually consistent with this reference: 2+2 is 4\n"
        "4. Clear\nShort\n5. Does it answer {{q}}?",
        "threshold": 0.8,  # the highest given: each had to pass its own
    }
    assert not _skipped(result)
    assert any("promptfoo grades each on its own" in note for note in result.notes)


def test_one_model_graded_assertion_is_its_criteria_as_written(tmp_path):
    result = _valid(
        tmp_path,
        "prompts: [Hi]\nproviders: [openai:gpt-4.1]\n"
        "tests: [{assert: [{type: factuality, value: Paris is the capital}]}]\n",
    )
    (case,) = result.suite["tasks"][0]["cases"]
    assert case["grade"] == {
        "criteria": "The answer is factually consistent with this reference: Paris is the capital"
    }
    assert not any("each on its own" in note for note in result.notes)


# --- every contestant has a path -----------------------------------------------------------


def test_openai_compatible_providers_are_endpoint_models_with_their_base_urls(tmp_path):
    result = _valid(
        tmp_path,
        "prompts: [Hi]\ntests: [{vars: {}}]\nproviders:\n"
        "  - ollama:chat:llama3.2\n  - groq:llama-3.3-70b-versatile\n"
        "  - id: xai:grok-3\n  - deepseek:deepseek-chat\n  - ollama:llama3.2:3b\n"
        "  - id: openai:chat:qwen\n    config: {apiBaseUrl: 'http://127.0.0.1:8000/v1'}\n",
    )
    assert result.suite["models"] == [
        "ollama/llama3.2",
        "groq/llama-3.3-70b-versatile",
        "xai/grok-3",
        "deepseek/deepseek-chat",
        "ollama/llama3.2:3b",  # a local server's model:tag (a model string may hold ':')
        "vllm/qwen",
    ]
    notes = "\n".join(result.notes)
    assert "(name ollama, base URL http://localhost:11434/v1)" in notes
    assert "(name groq, base URL https://api.groq.com/openai/v1)" in notes
    assert "(name vllm, base URL http://127.0.0.1:8000/v1)" in notes
    assert "provider ollama:llama3.2:3b" not in _skipped(result)


def test_echo_is_a_command_model_whose_program_echoes(tmp_path):
    result = _valid(
        tmp_path, "prompts: ['Say {{x}}']\ntests: [{vars: {x: hi}}]\nproviders: [echo]\n"
    )
    assert result.suite["models"] == ["command/echo"]
    program = result.files["echo.py"]
    request = {"messages": [{"role": "user", "content": "Say hi"}]}
    echoed = subprocess.run(
        [sys.executable, "-c", program], input=json.dumps(request), capture_output=True, text=True
    )
    assert echoed.stdout == "Say hi\n"
    assert any("EVALSITE_COMMAND_ECHO" in note for note in result.notes)


SCRIPTS = {
    "upper.py": "import json, sys\nprint(sys.argv[1].upper(), json.loads(sys.argv[2]))\n",
    "provider.py": (
        "def answer(prompt, options, context):\n"
        "    return {'output': options['config']['prefix'] + prompt}\n"
    ),
}


def test_script_providers_are_command_models_that_call_the_script_promptfoos_way(tmp_path):
    """promptfoo's exec: and Python file providers used to be listed (not evalsite's
    protocol), leaving a suite with no contestant. Each is now a command model whose program,
    written beside the suite, calls the script as promptfoo does: exec with the prompt as
    its first argument and the options as JSON, a Python file's function with (prompt,
    options, context); a JavaScript provider is still listed."""
    config = _config(
        tmp_path / "source",
        "prompts: ['Say {{x}}']\ntests: [{vars: {x: hi}}]\nproviders:\n"
        "  - 'exec: python3 upper.py'\n"
        "  - {id: 'file://provider.py:answer', label: Prefixed, config: {prefix: '>> '}}\n"
        "  - file://provider.js\n",
        **SCRIPTS,
    )
    result = translate("promptfoo", config)
    assert check_translation(result) == []
    assert result.suite["models"] == ["command/upper", "command/prefixed"]
    assert "runs no JavaScript" in _skipped(result)["provider file://provider.js"]
    assert "config.prefix" not in str(_skipped(result))  # the script's, not a request's
    notes = "\n".join(result.notes)
    assert "EVALSITE_COMMAND_UPPER='python3 promptfoo_provider.py upper'" in notes
    assert "the case's vars are not in evalsite's request" in notes
    out = tmp_path / "suite"
    out.mkdir()
    for name in ("promptfoo_provider.py", "promptfoo_providers.json"):
        (out / name).write_text(result.files[name])
    request = json.dumps({"messages": [{"role": "user", "content": "Say hi"}]})
    said = {}
    for name in ("upper", "prefixed"):
        done = subprocess.run(
            [sys.executable, "promptfoo_provider.py", name],
            cwd=out, input=request, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        said[name] = done.stdout
    assert said == {"upper": "SAY HI {'config': {}}\n", "prefixed": ">> Say hi\n"}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("providers", "ends"),
    [("[bedrock:anthropic.claude-v2]", "--models fake/small --fake"), ("[ollama:llama3]", "")],
)
def test_the_next_line_runs_as_printed(tmp_path, providers, ends):
    from runs.models import PriceTable
    from tests.cli.test_other_tools_habits import _next_line, _run_as_printed

    PriceTable.objects.ensure_default()
    source = _config(
        tmp_path,
        f"prompts: ['Say {{{{x}}}}']\nproviders: {providers}\ntests: [{{vars: {{x: a}}}}]\n",
    )
    code, out, err = run_command("import", "promptfoo", str(source), "--out", str(tmp_path / "o"))
    assert code == 0, err
    line = _next_line(out)
    if not ends:  # an Endpoint's model has no price row: the command that runs now
        line = line.split("; or now, the fake model in their place: ")[1]
    assert line.endswith(ends)
    done = _run_as_printed(line)
    assert [result[0] for result in done] == [0] * len(done), done


# --- silent drops become translations or listed lines ---------------------------------------


def test_providers_of_the_same_model_are_listed_not_merged(tmp_path):
    result = _valid(
        tmp_path,
        "prompts: [Hi]\ntests: [{vars: {}}]\nproviders:\n"
        "  - {id: 'openai:responses:gpt-4.1', label: text}\n"
        "  - {id: 'openai:responses:gpt-4.1', label: json, config: {response_format: json}}\n",
    )
    assert result.suite["models"] == ["openai/gpt-4.1"]
    why = _skipped(result)["provider openai:responses:gpt-4.1 (json)"]
    assert why.startswith("the same evalsite model as providers[0]")


def test_a_file_var_is_read_beside_the_config_and_a_glob_is_listed(tmp_path):
    result = _valid(
        tmp_path,
        "prompts: ['Sum up {{doc}} {{more}}']\nproviders: [openai:gpt-4.1]\n"
        "tests: [{vars: {doc: file://docs/a.txt, more: 'file://docs/*.txt'}}]\n",
        **{"docs__a.txt": "An article."},
    )
    (case,) = result.suite["tasks"][0]["cases"]
    assert case["vars"]["doc"] == "An article."
    assert "a glob" in _skipped(result)["tests[0].vars.more file://docs/*.txt"]


def test_a_var_file_too_long_to_inline_is_listed(tmp_path):
    result = _valid(
        tmp_path,
        "prompts: ['Sum up {{doc}}']\nproviders: [openai:gpt-4.1]\n"
        "tests: [{vars: {doc: file://big.txt}}]\n",
        **{"big.txt": "word " * 40_001},
    )
    (case,) = result.suite["tasks"][0]["cases"]
    assert case["vars"]["doc"] == ""  # listed, as a var the test left out renders
    assert "longer than 200,000 characters" in _skipped(result)["tests[0].vars.doc file://big.txt"]


def test_list_vars_make_a_case_per_combination_as_promptfoo_expands_them(tmp_path):
    # they were listed ("evalsite's vars are text…") and the test ran without them
    result = _valid(
        tmp_path,
        "prompts: ['Say {{greeting}} in {{language}}']\nproviders: [openai:gpt-4.1]\n"
        "tests:\n  - vars: {language: [French, German], greeting: [hi, bye]}\n"
        "    assert: [{type: icontains, value: '{{greeting}}'}]\n",
    )
    cases = result.suite["tasks"][0]["cases"]
    assert [(case["id"], case["vars"]) for case in cases] == [
        ("test-1-1", {"language": "French", "greeting": "hi"}),
        ("test-1-2", {"language": "French", "greeting": "bye"}),
        ("test-1-3", {"language": "German", "greeting": "hi"}),
        ("test-1-4", {"language": "German", "greeting": "bye"}),
    ]
    assert all(
        case["checks"] == [{"contains": "{{greeting}}", "case_sensitive": False}] for case in cases
    )
    assert result.untranslated == ()


def test_a_list_of_objects_is_one_value_listed_and_too_many_combinations_are_listed(tmp_path):
    many = "[" + ", ".join(f"w{i}" for i in range(40)) + "]"
    result = _valid(
        tmp_path,
        "prompts: ['{{a}} {{b}}']\nproviders: [openai:gpt-4.1]\ntests:\n"
        "  - vars: {a: x, turns: [{input: q, output: r}]}\n"
        f"  - vars: {{a: {many}, b: {many}}}\n",
    )
    (case,) = result.suite["tasks"][0]["cases"]
    assert case["vars"] == {"a": "x", "b": ""}
    skipped = _skipped(result)
    assert "a list whose first item is no text is one value" in skipped["test 1: var turns"]
    assert "make 1,600 tests, more than the 1,000" in skipped["test 2"]


def test_a_config_whose_only_test_expands_too_far_is_refused_with_the_reason(tmp_path):
    many = "[" + ", ".join(f"w{i}" for i in range(40)) + "]"
    source = _config(
        tmp_path,
        f"prompts: ['{{{{a}}}} {{{{b}}}}']\nproviders: [openai:gpt-4.1]\n"
        f"tests: [{{vars: {{a: {many}, b: {many}}}}}]\n",
    )
    with pytest.raises(SuiteError, match="no test translated") as caught:  # not "a bug"
        translate("promptfoo", source)
    assert [item.what for item in caught.value.untranslated] == ["test 1"]


def test_a_var_naming_another_var_has_its_value_as_promptfoo_fills_it_in(tmp_path):
    # the model was sent "Write a tweet about {{topic}}" where promptfoo sends the topic
    result = _valid(
        tmp_path,
        "prompts: ['Write a {{sentence}}']\nproviders: [openai:gpt-4.1]\n"
        "defaultTest: {vars: {who: 'my {{pet}}'}}\n"
        "tests:\n  - vars: {sentence: 'tweet about {{topic}} for {{ who }}', topic: cats, "
        "pet: dog}\n  - vars: {sentence: '{{nobody}} and {{topic}}', topic: 2.0}\n",
    )
    first, second = result.suite["tasks"][0]["cases"]
    assert first["vars"]["sentence"] == "tweet about cats for my dog"
    assert second["vars"]["sentence"] == "{{nobody}} and {{topic}}"  # the first name only


def test_a_bare_prompt_path_is_read_and_a_csv_of_prompts_is_one_prompt_a_row(tmp_path):
    result = _valid(
        tmp_path,
        "prompts: [prompts.txt, prompts.csv]\nproviders: [openai:gpt-4.1]\n"
        "tests: [{vars: {x: a}}]\n",
        **{
            "prompts.txt": "First {{x}}\n---\nSecond {{x}}\n",
            "prompts.csv": 'prompt,label\n"Third, {{x}}",third\nFourth {{x}},\n',
        },
    )
    assert result.suite["tasks"][0]["prompt"] == "First {{x}}"
    variants = result.suite["variants"]
    assert [spec.get("prompt") for spec in variants.values()] == [
        None,
        "Second {{x}}",
        "Third, {{x}}",
        "Fourth {{x}}",
    ]
    assert list(variants) == ["prompts", "prompts-2", "third", "prompts-2-2"]


@pytest.mark.parametrize("written", ["file://../outside.py", "python:/etc/provider.py"])
def test_a_script_provider_whose_file_leaves_the_config_folder_is_refused(tmp_path, written):
    """The script a command model will run is a file reference like a prompt file's: by the
    same rule (inside the config's folder, decided by name) the import is refused with the
    reference named, instead of a program table pointing outside the folder."""
    (tmp_path / "source").mkdir()
    config = _config(
        tmp_path / "source",
        f"prompts: [Hi]\nproviders: [echo, '{written}']\ntests: [{{vars: {{}}}}]\n",
    )
    with pytest.raises(SuiteError) as refused:
        translate("promptfoo", config)
    (problem,) = refused.value.problems
    assert problem.message.startswith(f"{written.removeprefix('python:')}: must ")


def test_a_jsonl_file_of_tests_is_a_test_a_line_and_a_bad_line_is_listed_by_its_number(
    tmp_path,
):
    """promptfoo reads `tests: file://cases.jsonl` a test object a line; the importer used
    to list the file (only CSV, YAML and JSON) and, with no other test, write nothing."""
    result = _valid(
        tmp_path,
        "prompts: ['Translate to {{lang}}: {{text}}']\nproviders: [echo]\n"
        "tests: file://cases.jsonl\n",
        **{
            "cases.jsonl": '{"vars": {"lang": "French", "text": "Hello"},'
            ' "assert": [{"type": "contains", "value": "Hello"}]}\n'
            "\n"
            '{"vars": {"lang": "Spanish", "text": "Hello"}}\n'
            "{not json\n"
        },
    )
    (task,) = result.suite["tasks"]
    assert [case["vars"]["lang"] for case in task["cases"]] == ["French", "Spanish"]
    (bad,) = [item for item in result.untranslated if item.file.endswith("cases.jsonl")]
    assert (bad.line, bad.what) == (4, "test")
    assert "not a JSON object" in bad.why


def test_a_jsonl_line_nested_past_the_bound_is_listed_not_a_crash(tmp_path):
    """A hostile JSONL line (200,000 nested lists) used to end the import with an
    unexpected RecursionError; it is read with the bounds every other JSON input has and
    listed by its number, for tests and prompts alike."""
    deep = "[" * 200_000 + "]" * 200_000 + "\n"
    result = _valid(
        tmp_path,
        "prompts: [file://prompts.jsonl]\nproviders: [echo]\ntests: file://cases.jsonl\n",
        **{
            "cases.jsonl": '{"vars": {"x": "a"}}\n' + deep,
            "prompts.jsonl": '[{"role": "user", "content": "Say {{x}}"}]\n' + deep,
        },
    )
    (task,) = result.suite["tasks"]
    assert len(task["cases"]) == 1
    skipped = {(item.line, item.what) for item in result.untranslated}
    assert (2, "test") in skipped
    assert any(what == "prompt file://prompts.jsonl line 2" for _, what in skipped)


def test_a_csv_of_prompts_without_a_prompt_column_is_listed(tmp_path):
    result = _valid(
        tmp_path,
        "prompts: [Hi, file://p.csv]\nproviders: [openai:gpt-4.1]\ntests: [{vars: {}}]\n",
        **{"p.csv": "text\nHello\n"},
    )
    assert "'prompt' column" in _skipped(result)["prompt file://p.csv"]


def test_a_grader_object_is_the_judge_and_one_evalsite_lacks_is_named_truthfully(tmp_path):
    rubric = "tests: [{assert: [{type: llm-rubric, value: Polite.}]}]\n"
    head = "prompts: [Hi]\nproviders: [openai:gpt-4.1]\n"
    honoured = _valid(
        tmp_path,
        head + rubric + "defaultTest: {options: {provider: {id: 'google:gemini-2.5-flash'}}}\n",
    )
    assert honoured.suite["judge"]["model"] == "google/gemini-2.5-flash"
    listed = _valid(
        tmp_path, head + rubric + "defaultTest: {options: {provider: {id: 'bedrock:nova'}}}\n"
    )
    endpoint = _valid(
        tmp_path,
        head
        + rubric
        + "defaultTest: {options: {provider: {text: {id: 'mistral:mistral-large-latest'}}}}\n",
    )
    assert endpoint.suite["judge"]["model"] == "mistral/mistral-large-latest"
    assert any("Endpoint mistral (base URL https://api.mistral.ai/v1)" in n for n in endpoint.notes)
    assert listed.suite["judge"]["model"] == "openai/gpt-4.1"
    assert "defaultTest.options.provider bedrock:nova" in _skipped(listed)
    (note,) = [note for note in listed.notes if note.startswith("the judge")]
    assert "the file's grader bedrock:nova does not translate" in note
    assert "promptfoo's default grader" not in note


def test_an_assertion_s_own_grader_is_listed_unless_it_is_the_judge(tmp_path):
    result = _valid(
        tmp_path,
        "prompts: [Hi]\nproviders: [openai:gpt-4.1]\n"
        "defaultTest: {options: {provider: 'openai:gpt-4.1'}}\n"
        "tests:\n  - assert:\n"
        "      - {type: llm-rubric, value: A., provider: 'openai:gpt-4.1'}\n"
        "      - {type: llm-rubric, value: B., provider: 'anthropic:messages:claude-sonnet-4-5'}\n"
        "    options: {provider: 'xai:grok-3', transform: output.trim()}\n",
    )
    skipped = _skipped(result)
    assert (
        "one judge (openai/gpt-4.1)"
        in skipped["llm-rubric provider anthropic:messages:claude-sonnet-4-5"]
    )
    assert "llm-rubric provider openai:gpt-4.1" not in skipped
    assert "test 1: options.provider xai:grok-3" in skipped
    assert not any("transform" in what for what in skipped)  # output.trim(): evalsite trims


def test_yaml_scalars_keep_their_text_as_promptfoo_reads_them(tmp_path):
    result = _valid(
        tmp_path,
        "prompts: ['{{a}} {{b}} {{c}} {{d}} {{e}}']\nproviders: [openai:gpt-4.1]\n"
        "tests: [{vars: {a: Yes, b: off, c: 1:20, d: 012, e: true}}]\n",
    )
    (case,) = result.suite["tasks"][0]["cases"]
    assert case["vars"] == {"a": "Yes", "b": "off", "c": "1:20", "d": 12, "e": True}


def test_a_provider_s_prompts_choose_its_contestants_and_a_prompt_s_config_is_listed(tmp_path):
    result = _valid(
        tmp_path,
        "prompts:\n  - {raw: 'Hi', label: plain, config: {response_format: {type: json_object}}}\n"
        "  - {raw: 'Hello', label: Warm One}\n"
        "providers:\n  - {id: 'openai:gpt-4.1', prompts: [plain]}\n"
        "  - {id: 'ollama:chat:llama3', prompts: [warm one]}\n"
        "  - {id: 'anthropic:messages:claude-haiku-4-5', prompts: [missing]}\n"
        "tests: [{vars: {}}]\n",
    )
    assert result.suite["models"] == [
        "openai/gpt-4.1@plain",
        "ollama/llama3@warm-one",
        "anthropic/claude-haiku-4-5@plain",
        "anthropic/claude-haiku-4-5@warm-one",
    ]
    skipped = _skipped(result)
    assert "a prompt's own provider config" in skipped["prompt config"]
    assert "names no prompt label" in skipped["provider prompts missing"]


# --- messages that help ----------------------------------------------------------------------


def test_auto_says_an_evalsite_suite_is_already_one(tmp_path):
    source = tmp_path / "s.yaml"
    source.write_text("suite: s\nversion: 1\nmodels: [fake/small]\ntasks: []\n")
    with pytest.raises(SuiteError, match="already an evalsite suite") as caught:
        translate("auto", source)
    assert "cannot tell its format" not in str(caught.value)


def test_a_chat_file_that_is_a_nunjucks_template_is_listed_not_a_yaml_error(tmp_path):
    result = _valid(
        tmp_path,
        "prompts: [Hi, file://chat.json]\nproviders: [openai:gpt-4.1]\ntests: [{vars: {}}]\n",
        **{"chat.json": '[{"role": "user", "content": {{ question | dump }}}]\n'},
    )
    assert "a Nunjucks template" in _skipped(result)["prompt file://chat.json"]


def test_an_assertion_template_ref_resolves_and_a_missing_one_is_listed(tmp_path):
    result = _valid(
        tmp_path,
        "prompts: [Hi]\nproviders: [openai:gpt-4.1]\n"
        "assertionTemplates: {polite: {type: icontains, value: please}}\n"
        "tests: [{assert: [{$ref: '#/assertionTemplates/polite'}, {$ref: '#/nope'}]}]\n",
    )
    (case,) = result.suite["tasks"][0]["cases"]
    assert case["checks"] == [{"contains": "please", "case_sensitive": False}]
    assert "names no assertion" in _skipped(result)["assertion $ref #/nope"]


@pytest.mark.django_db
def test_a_refused_upload_lists_what_did_not_translate_on_the_page(client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from runs.models import Suite
    from tests.helpers.factories import make_user

    client.force_login(make_user(username="member"))
    config = b"prompts: [pf://team/greeting]\nproviders: [openai:gpt-4.1]\ntests: [{}]\n"
    upload = SimpleUploadedFile("promptfooconfig.yaml", config)
    page = client.post("/suites/new/", {"file": upload, "intent": "register"}).content.decode()
    assert "no prompt translated" in page
    assert "not translated: prompt pf://team/greeting: a prompt kept in pf://" in page
    assert not Suite.objects.exists()


# --- the most used untranslated features of real configs (session 12's sample of 37) -----


def _javascript_config(body: str) -> str:
    """A one-test config whose only assertion is the javascript `body`."""
    assertion = f"{{type: javascript, value: {json.dumps(body)}}}"
    return (
        "prompts: ['Answer {{q}}']\nproviders: [openai:gpt-4.1-mini]\n"
        f"tests:\n  - vars: {{q: x}}\n    assert:\n      - {assertion}\n"
    )


@pytest.mark.parametrize(
    ("body", "checks"),
    [
        ("output.length < 100", [{"max_chars": 99}]),
        ("return output.length <= 100;", [{"max_chars": 100}]),
        ("output.length > 20", [{"min_chars": 21}]),
        ("output.includes('Paris')", [{"contains": "Paris"}]),
        ('!output.includes("sorry")', [{"not_contains": "sorry"}]),
        ("output.toLowerCase().includes('paris')", [{"contains": "paris", "case_sensitive": False}]),
        ("output.startsWith(`Dear`)", [{"regex": r"\ADear"}]),
        ("output.trim() === 'B'", [{"equals": "B"}]),
        ("JSON.parse(output).category === 'billing'",
         [{"json_path": {"path": "$.category", "equals": "billing"}}]),
        ("JSON.parse(output).a.score == 3", [{"json_path": {"path": "$.a.score", "equals": 3}}]),
        ("JSON.parse(output).ok === true", [{"json_path": {"path": "$.ok", "equals": True}}]),
    ],
)  # fmt: skip
def test_a_one_line_javascript_assertion_is_the_evalsite_check_it_means(tmp_path, body, checks):
    result = _valid(tmp_path, _javascript_config(body))
    assert result.suite["tasks"][0]["cases"][0]["checks"] == checks
    assert "assertion javascript" not in _skipped(result)


@pytest.mark.parametrize(
    "body",
    [
        "output.toLowerCase().includes('Paris')",  # never true: listed, not translated
        "output.includes(context.vars.city)",
        "output.split(' ').length < 50",
        "output.includes('a') && output.includes('b')",
        "output.includes(`${x}`)",
    ],
)
def test_javascript_with_no_evalsite_check_of_the_same_meaning_stays_listed(tmp_path, body):
    result = _valid(tmp_path, _javascript_config(body))
    assert "evalsite runs no JavaScript" in _skipped(result)["assertion javascript"]


def test_the_prompt_map_form_gives_each_file_its_label(tmp_path):
    result = _valid(
        tmp_path,
        "prompts:\n  prompts/mistral.txt: mistral_prompt\n  file://prompts/llama.txt: llama\n"
        "providers: [openai:gpt-4.1-mini]\ntests: [{vars: {q: x}}]\n",
        **{"prompts/mistral.txt": "Mistral asks {{q}}", "prompts/llama.txt": "Llama asks {{q}}"},
    )
    assert result.suite["models"] == [
        "openai/gpt-4.1-mini@mistral-prompt",
        "openai/gpt-4.1-mini@llama",
    ]
    assert result.suite["variants"]["llama"]["prompt"] == "Llama asks {{q}}"


def test_a_prompt_object_without_raw_sends_its_id_as_promptfoo_does_and_says_so(tmp_path):
    # promptfoo reads {id, label} with no raw as raw: id; the label only names the prompt
    result = _valid(
        tmp_path,
        "prompts:\n  - id: short-answer\n    label: |\n      Answer briefly.\n"
        "      {{question}}\n  - {id: 'Say {{question}} twice', label: twice}\n"
        "providers: [openai:gpt-4.1-mini]\ntests: [{vars: {question: why}}]\n",
    )
    assert result.suite["tasks"][0]["prompt"] == "short-answer"
    assert result.suite["variants"] == {
        "short-answer": {},
        "twice": {"prompt": "Say {{question}} twice"},
    }
    assert result.untranslated == ()
    (note,) = [note for note in result.notes if "short-answer" in note]
    assert "promptfoo sends its id as the prompt's whole text" in note
    assert "write it as raw:" in note
    assert not any("'Say" in note for note in result.notes)  # a one-line label is a name


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("prompt", "files", "what"),
    [
        (
            "file://chat.json",
            {
                "chat.json": '[{"role": "system", "content": "Be brief"},\n'
                "{% for turn in _conversation %}\n"
                '{"role": "user", "content": "{{ turn.input }}"},\n'
                '{"role": "assistant", "content": "{{ turn.output }}"},\n'
                '{% endfor %}\n{"role": "user", "content": "{{ question }}"}]\n'
            },
            "prompt file://chat.json",
        ),
        (
            "'{% for t in _conversation %}{{t.output}} {% endfor %}{{question}}'",
            {},
            "prompt",
        ),
    ],
)
def test_a_prompt_that_reads_conversation_exits_2_naming_why(tmp_path, prompt, files, what):
    source = _config(
        tmp_path,
        f"prompts: [{prompt}]\nproviders: [openai:gpt-4.1-mini]\n"
        "tests:\n  - {vars: {question: Who?}, metadata: {conversationId: a}}\n"
        "  - {vars: {question: Where?}, metadata: {conversationId: a}}\n",
        **files,
    )
    with pytest.raises(SuiteError, match="no prompt translated") as caught:
        translate("promptfoo", source)
    why = {item.what: item.why for item in caught.value.untranslated}[what]
    assert why.startswith("reads _conversation, the earlier turns promptfoo keeps")
    assert "no case sees another's answer" in why
    code, stdout, _ = run_command("import", "promptfoo", str(source), "--out", str(tmp_path / "x"))
    assert code == 2 and "reads _conversation" in stdout and not (tmp_path / "x").exists()


def test_max_completion_tokens_num_predict_and_reasoning_effort_are_request_settings(tmp_path):
    result = _valid(
        tmp_path,
        "prompts: [Hi]\ntests: [{vars: {}}]\nproviders:\n"
        "  - {id: openai:o4-mini, config: {max_completion_tokens: 800, reasoning_effort: low}}\n",
    )
    assert result.suite["defaults"] == {"max_tokens": 800, "reasoning_effort": "low"}
    assert not any(what.startswith("config.") for what in _skipped(result))
    ollama = _valid(
        tmp_path,
        "prompts: [Hi]\ntests: [{vars: {}}]\n"
        "providers: [{id: 'ollama:chat:llama3.2', config: {num_predict: 256}}]\n",
    )
    assert ollama.suite["defaults"] == {"max_tokens": 256}


def test_a_vendor_provider_that_is_no_chat_model_is_listed_not_a_model_string(tmp_path):
    result = _valid(
        tmp_path,
        "prompts: [Hi]\nproviders:\n  - openai:assistant:asst_abc123\n"
        "  - openai:realtime:gpt-realtime\n  - openai:ft:gpt-4o-mini:acme::x1\n"
        "  - openai:codex-security:gpt-5.6-sol\n",
    )
    assert result.suite["models"] == ["openai/ft:gpt-4o-mini:acme::x1"]
    skipped = _skipped(result)
    assert "no chat model" in skipped["provider openai:assistant:asst_abc123"]
    assert "no chat model" in skipped["provider openai:realtime:gpt-realtime"]
    # promptfoo's security-scan agent used to become the model openai/codex-security:…
    assert "no chat model" in skipped["provider openai:codex-security:gpt-5.6-sol"]


@pytest.mark.parametrize(
    "provider",
    [
        "anthropic:claude-agent-sdk",
        "anthropic:claude-code",
        "openai:codex-sdk",
        "google:live:gemini-2.5-flash-preview",
    ],
)
def test_an_agent_sdk_or_live_api_provider_is_listed_not_a_model_string(tmp_path, provider):
    # these became anthropic/claude-agent-sdk, google/live:…: models with no price row
    result = _valid(
        tmp_path, f"prompts: [Hi]\nproviders: [{provider}, openai:gpt-4.1]\ntests: [{{}}]\n"
    )
    assert result.suite["models"] == ["openai/gpt-4.1"]
    assert "no chat model" in _skipped(result)[f"provider {provider}"]


def test_a_local_server_s_note_says_a_free_model_is_a_row_of_zero_rates(tmp_path):
    result = _valid(tmp_path, "prompts: [Hi]\nproviders: [ollama:chat:llama3.2, groq:llama-3.3]\n")
    (ollama,) = [note for note in result.notes if note.startswith("ollama:")]
    (groq,) = [note for note in result.notes if note.startswith("groq:")]
    assert "a server on this machine that costs you nothing: rates of 0" in ollama
    assert "rates of 0" not in groq  # a hosted API is priced by its vendor


@pytest.mark.django_db
def test_a_translation_over_a_suites_size_is_refused_as_too_big_not_as_a_bug(tmp_path):
    # A var naming itself doubles in each of promptfoo's five passes: 200,000 characters
    # became a suite of 6 MiB, and the command called that "a bug of the importer".
    big = "x" * 200_000
    source = _config(
        tmp_path,
        "prompts: ['Say {{a}}']\nproviders: [openai:gpt-4.1]\n"
        f"tests: [{{vars: {{a: '{{{{a}}}}{big}', note: kept}}}}]\n",
    )
    code, stdout, stderr = run_command(
        "import", "promptfoo", str(source), "--out", str(tmp_path / "x")
    )
    assert code == 2
    assert "bug of the importer" not in stderr
    assert "the translated suite would be" in stderr and "split its tests" in stderr
    assert not (tmp_path / "x").exists()
