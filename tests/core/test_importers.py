"""The importers' pure core: each format's parser and its errors (file and line), the
mappings onto evalsite's keys, what is listed as untranslated, and evalpin's check semantics
kept exactly (read: evalpin, compare: json_spelling). No database."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalsite.core.importers import check_translation, detect, translate
from evalsite.core.importers import evalpin as pin
from evalsite.core.problems import SuiteError
from evalsite.core.scoring.checks import run_checks

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "imports"


def _errors(call, *args) -> list[str]:
    with pytest.raises(SuiteError) as caught:
        call(*args)
    return [str(problem) for problem in caught.value.problems]


# --- evalpin: parsers ------------------------------------------------------------------------


def test_evalpin_suite_errors_name_the_file_and_line():
    text = (
        "prompt: orphan\n"
        "case greet\n"
        "prompt: Greet Ana.\n"
        "expect contians: Ana\n"
        "expect max-chars: 1234567\n"
        "case greet\n"
        "case Bad_Id\n"
        "expect json: $.a = [1]\n"
        "what is this\n"
    )
    errors = _errors(pin.parse_suite_text, text, "suite.txt")
    assert "suite.txt:1: expected 'case ID' before any prompt or expect line" in errors
    assert any(e.startswith("suite.txt:4: unknown check kind 'contians'") for e in errors)
    assert "suite.txt:5: expect max-chars: takes 1 to 6 ASCII digits, not '1234567'" in errors
    assert "suite.txt:6: duplicate case id 'greet' (first at line 2)" in errors
    assert any(e.startswith("suite.txt:7: case id 'Bad_Id'") for e in errors)
    assert any(
        e.startswith("suite.txt:8: expect json: '[1]' is not one JSON scalar") for e in errors
    )
    assert any(e.startswith("suite.txt:9: expected 'case ID'") for e in errors)
    assert "suite.txt:6: case 'greet' has no 'prompt:' line" in errors


def test_evalpin_replies_cycle_in_order_and_a_text_line_after_a_blank_is_an_error():
    entries = pin.parse_replies("reply a\n| one\n|two\nfail a rate limited\nreply a\n", "r.txt")
    assert [(e.case, e.text, e.message) for e in entries] == [
        ("a", "one\ntwo", None),
        ("a", None, "rate limited"),
        ("a", "", None),
    ]
    errors = _errors(pin.parse_replies, "reply a\n| one\n\n| two\nnonsense\n", "r.txt")
    assert errors == [
        "r.txt:4: a '|' text line outside a reply (after a blank, comment or fail line)",
        "r.txt:5: expected 'reply ID', a '| text' line or 'fail ID MESSAGE'",
    ]


def test_evalpin_results_are_strict():
    rows = pin.parse_results("evalpin-results 1\ngreet 1 2\n", "first.txt")
    assert rows == [pin.ResultRow("greet", 1, 2, 2)]
    errors = _errors(
        pin.parse_results, "evalpin-results 1\na 3 2\na  1 2\nb 0 0\n\nb 1 1\nb 1 1\n", "r.txt"
    )
    assert errors == [
        "r.txt:2: PASSED (3) cannot exceed TOTAL (2)",
        "r.txt:3: expected 'ID PASSED TOTAL', separated by single spaces",
        "r.txt:4: TOTAL must be at least 1",
        "r.txt:5: expected 'ID PASSED TOTAL', separated by single spaces",
        "r.txt:7: duplicate id 'b' (first at line 6)",
    ]
    assert _errors(pin.parse_results, "evalpin-results 2\n", "r.txt") == [
        "r.txt:1: the first line must be 'evalpin-results 1'"
    ]


# --- evalpin: its check semantics, through evalsite's checks ----------------------------------


def _verdict(reply: str, expect: str) -> bool:
    kind, _, value = expect.partition(": ")
    assert pin.expect_problem(kind, value) is None
    return run_checks(reply, [pin.check_of(kind, value)]).passed


@pytest.mark.parametrize(
    ("reply", "expect", "passed"),
    [
        ("  Hello Ana!\r\n", "equals: Hello Ana!", True),  # ASCII blanks trimmed
        ("Hello Ana!\u00a0", "equals: Hello Ana!", False),  # NBSP is not trimmed
        ("\u3000Ana", "max-chars: 3", False),  # an ideographic space counts: 4 code points
        ("日本語", "max-chars: 3", True),  # code points, not bytes
        ("日本語", "min-chars: 004", False),  # leading zeros
        ("```text\nAna\n```", "equals: Ana", True),  # the whole reply fenced
        ("Here:\n```\nAna\n```", "equals: Ana", False),  # prose around the fence: read whole
        ("```\nAna\n````", "equals: Ana", False),  # the last line must be exactly ```
        ("```\n  Ana\n```", "equals: Ana", False),  # the inside is not trimmed again
        ("no", "one-of: yes | no", True),
        ("No", "one-of: yes|no", False),
        ("ok", "not-contains: as an AI", True),
        ('{"user": {"n": 1.0}}', "json: $.user.n = 1.0", True),
        ('{"user": {"n": 1.0}}', "json: $.user.n = 1", False),  # 1 and 1.0 differ
        ('{"a": ["x", "A\\u006ea"]}', 'json: $.a[1] = "Ana"', True),  # decoded content
        ('{"ok": true}', "json: $.ok = true", True),
        ('{"ok": null}', "json: $.ok = false", False),
        ('```json\n{"n": 2}\n```', "json: $.n = 2", True),
        ('Sure: {"n": 2}', "json: $.n = 2", False),  # the reply must be JSON
    ],
)
def test_evalpin_checks_give_evalpins_verdicts(reply, expect, passed):
    assert _verdict(reply, expect) is passed


def test_evalpin_paths_become_evalsite_paths():
    assert pin.evalsite_path("$.user.name") == "$.user.name"
    assert pin.evalsite_path("$.items[0].unit price") == '$.items[0]["unit price"]'
    assert pin.evalsite_path("$") == "$"


# --- each format, translated and validated ----------------------------------------------------


def test_evalpin_readme_suite_translates_to_one_scripted_contestant(tmp_path):
    (tmp_path / "suite.txt").write_text("case greet\nprompt: Greet Ana.\nexpect contains: Ana\n")
    (tmp_path / "replies.txt").write_text(
        "reply greet\n| Hello Ana!\nreply greet\n| Hi there.\nfail other rate limited\n"
    )
    result = translate("auto", tmp_path / "suite.txt", replies=tmp_path / "replies.txt", repeats=2)
    assert check_translation(result) == []
    suite = result.suite
    assert suite["models"] == ["scripted/evalpin"] and suite["repeats"] == 2
    assert "judge" not in suite
    assert suite["tasks"][0]["cases"] == [
        {
            "id": "greet",
            "vars": {"prompt": "Greet Ana."},
            "checks": [{"contains": "Ana", "read": "evalpin"}],
        }
    ]
    assert "evalpin/greet:\n  - Hello Ana!\n  - Hi there.\n" in result.files["suite.replies.yaml"]
    [skipped] = result.untranslated
    assert (skipped.line, skipped.what) == (5, "reply for 'other'")


def test_evalpin_results_become_a_baseline_document(tmp_path):
    (tmp_path / "first.txt").write_text("evalpin-results 1\ngreet 1 2\nmy_case 2 2\n")
    result = translate("auto", tmp_path / "first.txt")
    assert result.suite is None
    assert result.files["first.baseline.json"].startswith("{")
    import json

    document = json.loads(result.files["first.baseline.json"])
    assert document["format"] == "evalpin-results"
    assert document["cases"][1] == {
        "task": "evalpin",
        "case": "my-case",
        "evalpin_id": "my_case",
        "passed": 2,
        "total": 2,
    }


def test_evalblink_benchmark_maps_as_the_quickstart_example_does():
    result = translate("auto", FIXTURES / "evalblink" / "benchmark.yaml")
    assert check_translation(result) == []
    suite = result.suite
    assert suite["models"][:2] == [
        "openrouter/openai/gpt-4o-mini@short",
        "openrouter/openai/gpt-4o-mini@careful",
    ]
    # evalblink gates its best combination: quality_threshold 80 (issue 28)
    assert suite["gate"] == {"min_best_score": 0.8}
    assert suite["limits"] == {"max_cost_usd": 2.5}
    assert suite["variants"]["careful"]["system"] == "You route support tickets."
    cases = {case["id"]: case for task in suite["tasks"] for case in task["cases"]}
    assert cases["t-001"]["checks"] == [{"exact_match": "billing"}]
    assert cases["t-002"]["grade"]["threshold"] == 0.75
    assert suite["tasks"][1]["weighted_match"]["fields"]["percent"] == {
        "weight": 0.25,
        "tolerance": 0.1,
    }
    # OpenRouter's free variant is a contestant like the others (priced at $0 without a row)
    assert "openrouter/poolside/laguna-xs-2.1:free@short" in suite["models"]
    skipped = {item.what: item.line for item in result.untranslated}
    assert not any(what.startswith("model ") for what in skipped)
    assert skipped["concurrency"] == 5
    assert "quality_threshold (best combination)" not in skipped


def test_evalblink_s_gate_block_narrows_the_quality_gate_to_one_combination(tmp_path):
    source = (FIXTURES / "evalblink" / "benchmark.yaml").read_text()
    (tmp_path / "b.yaml").write_text(
        source + "gate: {model: openai/gpt-4o-mini, prompt: careful}\n"
    )
    suite = translate("evalblink", tmp_path / "b.yaml").suite
    assert suite["gate"] == {"min_score": {"openrouter/openai/gpt-4o-mini@careful": 0.8}}


def test_promptfoo_config_maps_prompts_providers_tests_and_assertions():
    result = translate("auto", FIXTURES / "promptfoo" / "promptfooconfig.yaml")
    assert check_translation(result) == []
    suite = result.suite
    assert suite["templating"] == "jinja2"  # the second prompt uses a Nunjucks filter
    assert suite["models"] == [
        "openai/gpt-4o-mini@prompt-1",
        "openai/gpt-4o-mini@careful",
        "anthropic/claude-haiku-4-5@prompt-1",
        "anthropic/claude-haiku-4-5@careful",
        "ollama/llama3@prompt-1",  # its apiBaseUrl is Ollama's: an Endpoint's model
        "ollama/llama3@careful",
    ]
    cases = {case["id"]: case for case in suite["tasks"][0]["cases"]}
    assert list(cases) == ["france", "japan", "italy", "peru", "egypt"]
    assert cases["france"]["checks"][1:] == [
        {"equals": "Paris"},
        {"regex": "Paris|paris"},
        {"max_chars": 19},  # javascript `output.length < 20`
    ]
    assert cases["japan"]["grade"] == {
        "criteria": "Names Tokyo and nothing else.",
        "threshold": 0.75,
    }
    assert cases["peru"]["checks"][1:] == [{"contains": "Li"}, {"contains": "ma"}]
    assert cases["egypt"]["checks"][1:] == [{"equals": "Cairo"}]
    skipped = {(item.what, item.line) for item in result.untranslated}
    assert not any(what == "assertion javascript" for what, _ in skipped)
    assert ("assertion cost", 31) in skipped
    assert ("assertion latency", 18) in skipped
    assert not any("llama3" in what for what, _ in skipped)
    assert any(
        "add an Endpoint in the admin (name ollama, base URL http://localhost:11434/v1)" in note
        for note in result.notes
    )


def test_evaling_eval_maps_variants_cases_files_scorecard_and_thresholds():
    result = translate("auto", FIXTURES / "evaling" / "eval.yaml")
    assert check_translation(result) == []
    suite = result.suite
    assert suite["templating"] == "jinja2"
    assert suite["models"][0] == "anthropic/claude-haiku-4-5@terse"
    assert [c["scorer"] for c in suite["scorecard"]] == ["grade", "schema", "checks"]
    assert suite["gate"] == {"min_pass_rate": 0.8, "max_regression_points": 0}
    assert suite["variants"]["friendly"]["system"] == ""  # not the terse prompt's system
    task = suite["tasks"][0]
    assert task["cases_path"] == "cases.imported.jsonl"
    assert '"files": {"photo": "fixtures/dog.png"}' in result.files["cases.imported.jsonl"]
    assert result.files["fixtures/dog.png"].startswith(b"\x89PNG")
    skipped = {(item.file.rsplit("/", 1)[-1], item.line, item.what) for item in result.untranslated}
    assert ("cases.jsonl", 2, "case 2: human_label") in skipped
    assert ("eval.yaml", 13, "model local-llama") in skipped


def test_an_evaling_check_criterion_no_case_can_feed_is_listed_not_written(tmp_path):
    """evaling's own media example: a contains scorer with no value of its own compares with
    each case's expected value, and its cases have none. The suite written used to keep a
    checks criterion that scores no answer, which evalsite refuses (a bug of the importer)."""
    (tmp_path / "eval.yaml").write_text(
        "models: [{id: claude-haiku-4-5, provider: anthropic}]\n"
        "prompt: 'Describe {{ question }}'\n"
        "cases:\n"
        "  - {id: q1, vars: {question: a cat}}\n"
        "  - {id: q2, vars: {question: a dog}}\n"
        "scorecard:\n"
        "  - {criterion: tone, scorer: {type: json-valid}}\n"
        "  - {criterion: coverage, scorer: {type: contains}}\n"
    )
    result = translate("evaling", tmp_path / "eval.yaml")
    assert check_translation(result) == []
    assert [c["scorer"] for c in result.suite["scorecard"]] == ["json_valid"]
    skipped = {(item.line, item.what) for item in result.untranslated}
    assert (8, "criterion coverage") in skipped
    assert {(4, "case 1: expected"), (5, "case 2: expected")} <= skipped


def test_an_evaling_python_cases_source_is_refused_with_what_to_write_and_privacy_kept(tmp_path):
    """evaling's no-look example takes its cases from a Python factory called with params;
    evalsite's cases_from calls a function with none. The import is refused (no case) with
    the list saying what to write, instead of a suite with no case ('a bug of the
    importer'); privacy.no_look, evalsite's own key, translates."""
    head = "models: [{id: m, provider: mock}]\nprompt: 'Reply to {{ body }}'\n"
    (tmp_path / "eval.yaml").write_text(
        head + "cases:\n  source: sources/tickets.py:make_source\n  params: {total: 250}\n"
        "  page_size: 50\n  limit: 100\nprivacy: {no_look: true}\n"
    )
    with pytest.raises(SuiteError) as caught:
        translate("evaling", tmp_path / "eval.yaml")
    (problem,) = caught.value.problems
    assert (problem.line, problem.message.split(":")[0]) == (4, "no case translated")
    listed = {item.what: item.why for item in caught.value.untranslated}
    assert "make_source(total=250)" in listed["cases source sources/tickets.py:make_source"]
    assert (
        "cases_from: {python: sources.tickets:FUNCTION}"
        in listed["cases source sources/tickets.py:make_source"]
    )
    assert listed["cases.limit"] == "a run option in evalsite: evalsite run --limit 100"
    assert "cases.page_size" in listed and "cases.params" not in listed

    (tmp_path / "eval.yaml").write_text(
        head + "cases: [{id: a, vars: {body: hi}}]\nprivacy: {no_look: true, keep_ids: no}\n"
    )
    result = translate("evaling", tmp_path / "eval.yaml")
    assert check_translation(result) == []
    assert result.suite["privacy"] == {"no_look": True}
    assert {item.what for item in result.untranslated} == {"privacy.keep_ids"}


def test_an_evaling_command_model_is_a_command_model_with_its_program_in_the_note(tmp_path):
    """evaling's command provider is evalsite's (request on stdin, answer on stdout): its
    models used to be listed as a provider evalsite has not, leaving a suite with no
    contestant that `run --fake` refused. Each is now command/<id>, the note giving the
    variable that names its program; params, which evalsite's request does not carry, are
    listed."""
    (tmp_path / "eval.yaml").write_text(
        "models:\n"
        "  - {id: clean-json, provider: command, command: python3 fake_model.py}\n"
        "  - id: sloppy\n"
        "    provider: command\n"
        "    command: python3 fake_model.py --loose\n"
        "    params: {style: sloppy}\n"
        "prompt: 'Triage {{ body }}'\n"
        "cases: [{id: a, vars: {body: my card was charged twice}}]\n"
        "scorecard:\n"
        "  - {criterion: valid-json, scorer: {type: json-valid}}\n"
    )
    result = translate("evaling", tmp_path / "eval.yaml")
    assert check_translation(result) == []
    assert result.suite["models"] == ["command/clean-json", "command/sloppy"]
    notes = "\n".join(result.notes)
    assert "EVALSITE_COMMAND_CLEAN_JSON='python3 fake_model.py'" in notes
    assert "EVALSITE_COMMAND_SLOPPY='python3 fake_model.py --loose'" in notes
    assert str(tmp_path) in notes  # where evaling ran it: the eval's folder
    listed = {(item.line, item.what): item.why for item in result.untranslated}
    assert "params" in listed[(6, "model sloppy params")]
    assert "defaults" not in result.suite  # a command model's params are no suite default


def test_auto_refuses_a_file_it_cannot_place(tmp_path):
    (tmp_path / "x.yaml").write_text("name: mine\nitems: []\n")  # no tool's keys
    with pytest.raises(SuiteError, match="cannot tell its format"):
        detect(tmp_path / "x.yaml")


@pytest.mark.parametrize(
    ("document", "said"),
    [
        (
            "experiment: ablation\nversion: 2\narms:\n  - {id: a, runner: claude-code}\n",
            "an evalmine agent experiment: its arms run agent harnesses",
        ),
        (
            "workflow: nightly\nversion: 1\nnodes:\n  - {id: a, argv: [python3, x.py]}\n",
            "an evalmine workflow: a graph of commands",
        ),
        (
            "external_artifacts: done\nversion: 1\nartifacts: [{path: done.jsonl}]\n",
            "an evalmine external-artifacts evaluation: it ranks answers made elsewhere",
        ),
    ],
)
def test_evalmines_documents_that_are_not_suites_are_refused_saying_why(tmp_path, document, said):
    (tmp_path / "x.yaml").write_text(document)
    with pytest.raises(SuiteError) as caught:
        detect(tmp_path / "x.yaml")
    (problem,) = caught.value.problems
    assert problem.message.startswith(f"this is {said}")
    assert "so there is nothing to import" in problem.message


def test_an_unreadable_source_names_its_line(tmp_path):
    (tmp_path / "bad.yaml").write_text("models: [a\n")
    with pytest.raises(SuiteError) as caught:
        translate("evalblink", tmp_path / "bad.yaml")
    assert caught.value.problems[0].line is not None
