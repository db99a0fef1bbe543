"""promptfoo's output transforms, assertion weights and cost/latency thresholds (issue 32):
each translates where evalsite has the same thing, else it is listed, and a check is never
kept testing an answer promptfoo would have transformed first. The configs are written for
these tests in promptfoo's documented shapes."""

from __future__ import annotations

from tests.importers.test_promptfoo_real_world import _skipped, _valid

HEAD = "prompts: ['Answer {{q}}']\nproviders: [openai:gpt-4.1]\n"


def _checks(result, case: int = 0):
    return result.suite["tasks"][0]["cases"][case].get("checks", [])


# --- transform -----------------------------------------------------------------------------


def test_a_lower_casing_transform_makes_the_text_checks_case_blind(tmp_path):
    result = _valid(
        tmp_path,
        HEAD + "tests:\n  - vars: {q: a}\n    assert:\n"
        "      - {type: equals, value: paris, transform: output.toLowerCase()}\n"
        "      - {type: starts-with, value: par, transform: output.trim().toLowerCase()}\n"
        "      - {type: javascript, value: output.length < 20, transform: output.toLowerCase()}\n",
    )
    assert _checks(result) == [
        {"equals": "paris", "case_sensitive": False},
        {"regex": r"\Apar", "case_sensitive": False},
        {"max_chars": 19},
    ]
    assert not result.untranslated


def test_a_json_parse_transform_makes_an_equals_a_json_path_check(tmp_path):
    result = _valid(
        tmp_path,
        HEAD + "tests:\n  - vars: {q: a}\n    assert:\n"
        "      - {type: equals, value: Paris, transform: JSON.parse(output).city.name}\n"
        "      - {type: equals, value: 3, transform: 'return JSON.parse(output).count;'}\n",
    )
    assert _checks(result) == [
        {"json_path": {"path": "$.city.name", "equals": "Paris"}},
        {"json_path": {"path": "$.count", "equals": 3}},
    ]


def test_a_transform_evalsite_has_no_place_for_takes_its_check_with_it(tmp_path):
    result = _valid(
        tmp_path,
        HEAD + "tests:\n  - vars: {q: a}\n    assert:\n"
        "      - {type: equals, value: get_weather, transform: 'output[0].function.name'}\n"
        "      - {type: contains, value: Paris, transform: output.toLowerCase()}\n"
        "      - {type: contains, value: sunny}\n",
    )
    assert _checks(result) == [{"contains": "sunny"}]
    skipped = _skipped(result)
    assert (
        "the check goes with its transform"
        in (skipped["assertion equals transform output[0].function.name"])
    )
    assert "capitals" in skipped["assertion contains transform output.toLowerCase()"]


def test_a_test_s_transform_applies_to_its_assertions_and_default_test_s(tmp_path):
    result = _valid(
        tmp_path,
        HEAD + "defaultTest:\n  assert: [{type: not-contains, value: sorry}]\n"
        "tests:\n"
        "  - vars: {q: a}\n    options: {transform: output.toLowerCase()}\n"
        "    assert: [{type: contains, value: paris}]\n"
        "  - vars: {q: b}\n    options: {transform: 'output.split(\",\")[0]'}\n"
        "    assert: [{type: contains, value: rome}, {type: llm-rubric, value: Names Rome.}]\n"
        "  - vars: {q: c}\n    assert: [{type: contains, value: Oslo}]\n",
    )
    assert _checks(result, 0) == [
        {"not_contains": "sorry", "case_sensitive": False},
        {"contains": "paris", "case_sensitive": False},
    ]
    second = result.suite["tasks"][0]["cases"][1]
    assert "checks" not in second and "grade" not in second  # left out, listed once
    assert (
        "the test's assertions (2, and defaultTest's) go with it"
        in (_skipped(result)['test 2: options.transform output.split(",")[0]'])
    )
    assert _checks(result, 2) == [{"not_contains": "sorry"}, {"contains": "Oslo"}]


def test_a_default_transform_evalsite_cannot_read_leaves_every_test_unchecked(tmp_path):
    result = _valid(
        tmp_path,
        HEAD + "defaultTest: {options: {transform: file://transform.js}}\n"
        "tests: [{vars: {q: a}, assert: [{type: contains, value: x}]}]\n",
    )
    assert _checks(result) == []
    assert (
        "every test's assertions are left out with it"
        in (_skipped(result)["defaultTest.options.transform"])
    )


def test_a_graded_assertion_with_a_transform_is_listed_not_graded_on_the_raw_answer(tmp_path):
    result = _valid(
        tmp_path,
        HEAD + "tests:\n  - vars: {q: a}\n    assert:\n"
        "      - {type: llm-rubric, value: Polite., transform: JSON.parse(output).reply}\n"
        "      - {type: contains, value: hi}\n",
    )
    assert "grade" not in result.suite["tasks"][0]["cases"][0]
    assert (
        "the judge reads the answer as it is"
        in (_skipped(result)["assertion llm-rubric transform JSON.parse(output).reply"])
    )


# --- weight --------------------------------------------------------------------------------


def test_weights_per_verdict_are_the_scorecard(tmp_path):
    result = _valid(
        tmp_path,
        HEAD + "tests:\n"
        "  - vars: {q: a}\n    assert:\n"
        "      - {type: contains, value: x}\n"
        "      - {type: llm-rubric, value: Accurate., weight: 3}\n"
        "  - vars: {q: b}\n    assert: [{type: equals, value: y, weight: 1}]\n",
    )
    assert result.suite["scorecard"] == [
        {"criterion": "grade", "weight": 3, "scorer": "grade"},
        {"criterion": "checks", "weight": 1, "scorer": "checks"},
    ]
    assert any("weights are the scorecard's" in note for note in result.notes)


def test_different_weights_within_the_checks_are_listed_and_no_scorecard_written(tmp_path):
    result = _valid(
        tmp_path,
        HEAD + "tests:\n  - vars: {q: a}\n    assert:\n"
        "      - {type: contains, value: x, weight: 2}\n"
        "      - {type: contains, value: y}\n",
    )
    assert "scorecard" not in result.suite
    assert _checks(result) == [{"contains": "x"}, {"contains": "y"}]
    assert "carry different weights (1, 2)" in _skipped(result)["assertion contains weight 2"]


def test_one_weight_everywhere_needs_no_scorecard(tmp_path):
    result = _valid(
        tmp_path,
        HEAD + "tests: [{vars: {q: a}, assert: [{type: contains, value: x, weight: 2}]}]\n",
    )
    assert "scorecard" not in result.suite and not result.untranslated
    assert any("one weight" in note for note in result.notes)


def test_a_weight_0_assertion_which_promptfoo_never_fails_is_left_out(tmp_path):
    result = _valid(
        tmp_path,
        HEAD + "tests:\n  - vars: {q: a}\n    assert:\n"
        "      - {type: contains, value: x, weight: 0}\n"
        "      - {type: contains, value: y}\n",
    )
    assert _checks(result) == [{"contains": "y"}]
    assert "a metric only" in _skipped(result)["assertion contains (weight 0)"]


# --- cost and latency ----------------------------------------------------------------------


def test_cost_and_latency_thresholds_are_listed_never_a_run_gate_or_cap(tmp_path):
    result = _valid(
        tmp_path,
        HEAD + "tests:\n  - vars: {q: a}\n    assert:\n"
        "      - {type: latency, threshold: 3000}\n"
        "      - {type: cost, threshold: 0.002}\n",
    )
    skipped = _skipped(result)
    for kind in ("latency", "cost"):
        assert f"no per-answer {kind} threshold" in skipped[f"assertion {kind}"]
    assert "gate" not in result.suite and "limits" not in result.suite


def test_parsing_the_whole_output_keeps_the_json_checks_and_their_schema(tmp_path):
    result = _valid(
        tmp_path,
        HEAD + "tests:\n  - vars: {q: a}\n    options: {transform: JSON.parse(output)}\n"
        "    assert:\n"
        "      - {type: is-json, value: {type: object, required: [color]}}\n"
        "      - {type: contains-any, value: [Peru, Chile], transform: output.countries}\n",
    )
    assert result.suite["tasks"][0]["schema"] == {"type": "object", "required": ["color"]}
    assert _checks(result) == []
    assert "assertion contains-any transform JSON.parse(output) then output.countries" in (
        _skipped(result)
    )
