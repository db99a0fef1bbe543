"""The new scorers against values worked out by hand: weighted_match (F1 with missing and
extra labels, tolerance edges, order, weights), the exact_match and json_valid checks, the
grade request with a case's criteria and reference, and the suite errors of each (no
database)."""

from __future__ import annotations

import json

import pytest

from evalsite.core.scoring.checks import run_checks
from evalsite.core.scoring.grading import grade_messages
from evalsite.core.scoring.matching import weighted_match
from evalsite.core.suites import SuiteError, parse_suite

SPEC = {
    "label": "use_case",
    "threshold": 0.8,
    "fields": {
        "use_case": {"weight": 0.5},
        "percent": {"weight": 0.25, "tolerance": 0.2},
        "order": {"weight": 0.25},
    },
}
EXPECTED = [
    {"use_case": "Summarize content", "percent": 0.7, "order": 1},
    {"use_case": "Translate content", "percent": 0.3, "order": 2},
]


def answer(*items: tuple[str, float, int]) -> str:
    return json.dumps([{"use_case": u, "percent": p, "order": o} for u, p, o in items])


def test_the_expected_list_itself_scores_one_and_passes():
    result = weighted_match(
        answer(("Summarize content", 0.7, 1), ("Translate content", 0.3, 2)), EXPECTED, SPEC
    )
    assert result.fields == {"use_case": 1.0, "percent": 1.0, "order": 1.0}
    assert (result.score, result.passed, result.note) == (1.0, True, None)


def test_a_missing_label_lowers_recall_and_its_fields_score_zero():
    # P = 1/1, R = 1/2: F1 = 2/3; percent and order 1 of 2 expected items
    result = weighted_match(answer(("Summarize content", 0.7, 1)), EXPECTED, SPEC)
    assert result.fields == pytest.approx({"use_case": 2 / 3, "percent": 0.5, "order": 0.5})
    assert result.score == pytest.approx(0.5 * 2 / 3 + 0.25 * 0.5 + 0.25 * 0.5)  # 0.5833
    assert result.passed is False


def test_an_extra_label_lowers_precision_only():
    # P = 2/3, R = 1: F1 = 0.8; both expected items exact: 0.5 * 0.8 + 0.25 + 0.25 = 0.9
    text = answer(("Summarize content", 0.7, 1), ("Translate content", 0.3, 2), ("Other", 0, 3))
    result = weighted_match(text, EXPECTED, SPEC)
    assert result.fields == pytest.approx({"use_case": 0.8, "percent": 1.0, "order": 1.0})
    assert result.score == pytest.approx(0.9)
    assert result.passed is True


def test_a_label_answered_twice_pairs_once_and_counts_against_precision():
    # paired 1 of 2 answered, 1 of 2 expected: P = R = 1/2, F1 = 1/2
    text = answer(("Summarize content", 0.7, 1), ("summarize content", 0.3, 2))
    result = weighted_match(text, EXPECTED, SPEC)
    assert result.fields == pytest.approx({"use_case": 0.5, "percent": 0.5, "order": 0.5})


def test_labels_pair_trimmed_and_in_any_case():
    text = answer(("  SUMMARIZE content ", 0.7, 1), ("translate Content", 0.3, 2))
    assert weighted_match(text, EXPECTED, SPEC).score == 1.0


@pytest.mark.parametrize(
    ("answered", "within"),
    [
        (0.9, True),  # exactly +0.2, though 0.9 - 0.7 is 0.20000000000000007 in floats
        (0.5, True),  # exactly -0.2
        (0.91, False),
        (0.49, False),
        ("0.7", False),  # text is not a number
        (True, False),  # nor is a boolean
        (None, False),
    ],
)
def test_percent_is_within_the_tolerance_inclusive_at_both_edges(answered, within):
    text = json.dumps([
        {"use_case": "Summarize content", "percent": answered, "order": 1},
        {"use_case": "Translate content", "percent": 0.3, "order": 2},
    ])  # fmt: skip
    assert weighted_match(text, EXPECTED, SPEC).fields["percent"] == (1.0 if within else 0.5)


def test_order_is_the_share_of_expected_items_with_exactly_their_order():
    swapped = answer(("Summarize content", 0.7, 2), ("Translate content", 0.3, 1))
    assert weighted_match(swapped, EXPECTED, SPEC).fields["order"] == 0.0
    as_float = answer(("Summarize content", 0.7, 1.0), ("Translate content", 0.3, 2))
    assert weighted_match(as_float, EXPECTED, SPEC).fields["order"] == 1.0
    text_order = json.dumps([{"use_case": "Summarize content", "percent": 0.7, "order": "1"}])
    assert weighted_match(text_order, EXPECTED, SPEC).fields["order"] == 0.0


def test_weights_are_normalised_by_their_sum():
    text = answer(("Summarize content", 0.7, 2))  # F1 2/3, percent 1/2, order 0
    doubled = {**SPEC, "fields": {"use_case": {"weight": 2}, "percent": {"weight": 1, "tolerance": 0.2}, "order": {"weight": 1}}}  # fmt: skip
    assert weighted_match(text, EXPECTED, doubled).score == pytest.approx(
        weighted_match(text, EXPECTED, SPEC).score
    )
    assert weighted_match(text, EXPECTED, SPEC).score == pytest.approx(0.5 * 2 / 3 + 0.25 * 0.5)
    labels_only = {**SPEC, "fields": {"use_case": {"weight": 1}, "percent": {"weight": 0, "tolerance": 0.2}, "order": {"weight": 0}}}  # fmt: skip
    assert weighted_match(text, EXPECTED, labels_only).score == pytest.approx(2 / 3)


def test_a_score_at_exactly_the_threshold_passes():
    half = {**SPEC, "threshold": 0.5}
    text = answer(("Summarize content", 0.0, 9), ("Nothing", 0.3, 2))  # F1 1/2, 0, 0 → 0.25
    assert weighted_match(text, EXPECTED, {**half, "threshold": 0.25}).passed is True
    assert weighted_match(text, EXPECTED, {**half, "threshold": 0.26}).passed is False


def test_the_list_may_sit_in_a_fenced_block():
    text = "Here you go:\n```json\n" + answer(("Summarize content", 0.7, 1)) + "\n```"
    assert weighted_match(text, EXPECTED, SPEC).fields["use_case"] == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    ("text", "note"),
    [
        ("Summarize content", "the answer is not JSON: Expecting value: line 1 column 1 (char 0)"),
        ('{"use_case": "Summarize content"}', "the answer is JSON but not a list of objects (it is an object)"),
        ('["Summarize content"]', "the answer is JSON but not a list of objects (it is a list holding something other than objects)"),
        ("42", "the answer is JSON but not a list of objects (it is a number)"),
    ],
)  # fmt: skip
def test_an_answer_that_is_not_a_list_of_objects_scores_zero_with_a_note(text, note):
    result = weighted_match(text, EXPECTED, {**SPEC, "threshold": 0})
    assert (result.score, result.passed, result.note) == (0.0, False, note)
    assert result.fields == {"use_case": 0.0, "percent": 0.0, "order": 0.0}


def test_an_empty_list_scores_zero_without_a_note():
    result = weighted_match("[]", EXPECTED, SPEC)
    assert (result.score, result.note) == (0.0, None)


# --- exact_match and json_valid -------------------------------------------------------------


def one(text: str, check: dict) -> tuple[bool, str | None]:
    result = run_checks(text, [check])
    assert [r.kind for r in result.results] == [next(iter(check))]
    return result.passed, result.note


@pytest.mark.parametrize("text", ["order_issue", "  Order_Issue \n", "ORDER_ISSUE"])
def test_exact_match_is_trimmed_and_case_insensitive(text):
    assert one(text, {"exact_match": " order_issue "}) == (True, None)


@pytest.mark.parametrize(
    ("text", "note"),
    [
        ("order_issue.", "expected 'order_issue' (any case), got 'order_issue.'"),
        ('{"label": "order_issue"}', "expected 'order_issue' (any case), got '{\"label\": \"order_issue\"}'"),
        ("```\norder_issue\n```", "expected 'order_issue' (any case), got '```\\norder_issue\\n```'"),
    ],
)  # fmt: skip
def test_exact_match_fails_on_anything_around_the_label(text, note):
    assert one(text, {"exact_match": "order_issue"}) == (False, note)


@pytest.mark.parametrize("text", ['{"a": 1}', " [1, 2] ", '```json\n{"a": null}\n```', "3"])
def test_json_valid_passes_on_json_found_as_for_the_schema_verdict(text):
    assert one(text, {"json_valid": True}) == (True, None)


@pytest.mark.parametrize(
    ("text", "note"),
    [
        ("yes", "the answer is not JSON: Expecting value: line 1 column 1 (char 0)"),
        ('{"a": NaN}', "the answer is not JSON: NaN is not valid JSON"),
    ],
)
def test_json_valid_fails_with_the_parsers_note(text, note):
    assert one(text, {"json_valid": True}) == (False, note)


# --- the grade request ----------------------------------------------------------------------


def test_a_grade_without_case_criteria_is_the_task_level_request_byte_for_byte():
    user = grade_messages("Do X", "done", " Be kind. ")[1]["content"]
    assert user == (
        "<task>\nDo X\n</task>\n\n<rubric>\nBe kind.\n</rubric>\n\n<answer>\ndone\n</answer>\n\n"
        'Grade the answer. Reply with JSON only: {"reasoning": "...", "score": 1-5}'
    )


def test_a_case_grade_shows_the_rubric_then_its_criteria_and_reference_as_data():
    user = grade_messages("Do X", "done", "Be kind.", criteria="Names Ada.", reference="Hi Ada")[1][
        "content"
    ]
    parts = ["<rubric>\nBe kind.", "<case_criteria>\nNames Ada.", "<reference_answer>\nHi Ada\n"]
    positions = [user.index(part) for part in [*parts, "<answer>\ndone"]]
    assert positions == sorted(positions)
    alone = grade_messages("Do X", "done", "", criteria="Names Ada.")[1]["content"]
    assert "<rubric>" not in alone and "<reference_answer>" not in alone


# --- validation -----------------------------------------------------------------------------

SUITE = """\
suite: s
version: 1
judge: {{model: fake/judge}}
tasks:
  - id: usage
    prompt: "Classify {{{{text}}}}"
    weighted_match:
{block}
    cases:
      - id: one
        vars: {{text: hi}}
{case}
"""
BLOCK = """\
      label: use_case
      threshold: 0.8
      fields:
        use_case: {weight: 0.5}
        percent: {weight: 0.25, tolerance: 0.2}
        order: {weight: 0.25}"""
CASE = """\
        expected:
          - {use_case: A, percent: 0.7, order: 1}"""


def problems(block: str = BLOCK, case: str = CASE) -> list[tuple[str, str]]:
    text = SUITE.format(block=block, case=case)
    with pytest.raises(SuiteError) as caught:
        parse_suite(text.encode(), filename="s.yaml")
    return [(p.path, p.message) for p in caught.value.problems]


def test_the_example_block_is_valid():
    suite = parse_suite(SUITE.format(block=BLOCK, case=CASE).encode(), filename="s.yaml")
    assert suite.tasks[0].weighted_match["label"] == "use_case"
    assert suite.tasks[0].cases[0].expected == [{"use_case": "A", "percent": 0.7, "order": 1}]


@pytest.mark.parametrize(
    ("old", "new", "error"),
    [
        ("      threshold: 0.8\n", "", ("tasks[0].weighted_match", "missing required key 'threshold'")),
        ("threshold: 0.8", "threshold: 1.5", ("tasks[0].weighted_match.threshold", "must be at most 1, got 1.5")),
        ("{weight: 0.25, tolerance: 0.2}", "{weight: high, tolerance: 0.2}", ("tasks[0].weighted_match.fields.percent.weight", "expected a number, got text 'high'")),
        ("tolerance: 0.2", "tolerance: wide", ("tasks[0].weighted_match.fields.percent.tolerance", "expected a number, got text 'wide'")),
        ("order: {weight: 0.25}", "order: {}", ("tasks[0].weighted_match.fields.order", "missing required key 'weight'")),
        ("use_case: {weight: 0.5}", "use_case: {weight: 0.5, tolerance: 1}", ("tasks[0].weighted_match.fields.use_case.tolerance", "the label field is matched by label, so it takes no tolerance")),
        ("label: use_case", "label: kind", ("tasks[0].weighted_match.fields", "fields must include the label field 'kind' (its weight is the labels' F1)")),
    ],
)  # fmt: skip
def test_a_bad_block_names_its_path(old, new, error):
    assert BLOCK.count(old) == 1
    assert problems(block=BLOCK.replace(old, new)) == [error]


def test_weights_that_are_all_zero_are_an_error():
    block = BLOCK.replace("0.5}", "0}").replace("0.25", "0")
    assert problems(block=block) == [
        ("tasks[0].weighted_match.fields", "at least one field needs a weight above 0")
    ]


@pytest.mark.parametrize(
    ("case", "error"),
    [
        ("", ("tasks[0].cases[0]", "a case of a weighted_match task needs 'expected' (the expected items)")),
        ("        expected: billing", ("tasks[0].cases[0].expected", "expected a list, got text 'billing'")),
        ("        expected: []", ("tasks[0].cases[0].expected", "must not be empty")),
        ("        expected: [A]", ("tasks[0].cases[0].expected[0]", "expected a mapping, got text 'A'")),
        ("        expected: [{percent: 0.7, order: 1}]", ("tasks[0].cases[0].expected[0]", "each expected item needs a text or number 'use_case' (its label)")),
        ("        expected: [{use_case: [A], percent: 0.7, order: 1}]", ("tasks[0].cases[0].expected[0].use_case", "each expected item needs a text or number 'use_case' (its label)")),
        ("        expected: [{use_case: A, percent: lots, order: 1}]", ("tasks[0].cases[0].expected[0].percent", "'percent' must be a number: the field is compared within a tolerance")),
        ("        expected: [{use_case: A, percent: 0.7}]", ("tasks[0].cases[0].expected[0]", "missing 'order' (weighted_match compares every field)")),
        ("        expected: [{use_case: A, percent: 0.7, order: 1}, {use_case: a, percent: 0.3, order: 2}]", ("tasks[0].cases[0].expected[1].use_case", "duplicate label 'a' in expected (first at item 0)")),
    ],
)  # fmt: skip
def test_a_bad_expected_list_names_its_path(case, error):
    found = problems(case=case)
    assert error in found, found
    assert len(found) == 1, found


def test_expected_without_a_weighted_match_block_is_an_error():
    text = SUITE.format(block=BLOCK, case=CASE).replace("    weighted_match:\n" + BLOCK + "\n", "")
    with pytest.raises(SuiteError) as caught:
        parse_suite(text.encode(), filename="s.yaml")
    assert [(p.line, p.path, p.message) for p in caught.value.problems] == [
        (10, "tasks[0].cases[0].expected", "'expected' applies only to a task with a weighted_match: block")
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("check", "error"),
    [
        ("{exact_match: yes}", ("tasks[0].cases[0].checks[0].exact_match", "expected text, got true - quote it to keep it as text")),
        ("{json_valid: false}", ("tasks[0].cases[0].checks[0].json_valid", "json_valid takes true (the answer must parse as JSON)")),
        ("{exact_match: a, case_sensitive: true}", ("tasks[0].cases[0].checks[0]", "case_sensitive applies only to equals, contains, not_contains, one_of, regex")),
    ],
)  # fmt: skip
def test_bad_new_checks_name_their_path(check, error):
    assert problems(case=CASE + f"\n        checks: [{check}]") == [error]


def test_a_case_grade_needs_criteria_and_the_suites_judge():
    case = CASE + "\n        grade: {reference: Hi}"
    assert problems(case=case) == [("tasks[0].cases[0].grade", "missing required key 'criteria'")]
    text = SUITE.format(block=BLOCK, case=CASE + "\n        grade: {criteria: Kind.}")
    text = text.replace("judge: {model: fake/judge}\n", "")
    with pytest.raises(SuiteError) as caught:
        parse_suite(text.encode(), filename="s.yaml")
    assert [(p.path, p.message) for p in caught.value.problems] == [
        ("tasks[0].cases[0].grade", "a graded case needs the suite's judge: block (the judge gives the grade)")
    ]  # fmt: skip
