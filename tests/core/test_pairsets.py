"""The judge lab's pure core: reading pair-set JSONL (every problem with its line and key),
the lab suite, and the figures on small sets worked out by hand (no database)."""

from __future__ import annotations

import json

import pytest

from evalsite.core.input_limits import MAX_BYTES
from evalsite.core.pairsets import (
    LabCase,
    LabVerdict,
    PairSetError,
    judge_figures,
    lab_cases,
    lab_figures,
    lab_suite_yaml,
    pairset_name,
    parse_pairset,
    report_lines,
    slug,
)
from evalsite.core.stats.agreement import strict_majority
from evalsite.core.suites import parse_suite


def pair(**overrides) -> dict:
    row = {
        "id": "p1",
        "task": "Writing",
        "question": "Say hello.",
        "answer_a": "Hello.",
        "answer_b": "Hi!",
        "model_a": "m1",
        "model_b": "m2",
        "votes": [{"labeller": "ada", "prefer": "a"}],
        "judge": [{"judge": "j", "order": 1, "prefer": "b"}],
    }
    row.update(overrides)
    return {key: value for key, value in row.items() if value is not ...}


def jsonl(*rows) -> bytes:
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows).encode()


def problems_of(data: bytes) -> list[tuple[int | None, str, str]]:
    with pytest.raises(PairSetError) as caught:
        parse_pairset(data, filename="set.jsonl")
    return [(p.line, p.path, p.message) for p in caught.value.problems]


# --- reading ------------------------------------------------------------------------------


def test_a_valid_file_keeps_votes_and_verdicts_as_given():
    parsed = parse_pairset(
        jsonl(pair(), "", pair(id="p2", task=..., judge=...)), filename="set.jsonl"
    )

    first, second = parsed.pairs
    assert (first.line, first.id, first.task) == (1, "p1", "Writing")
    assert (second.line, second.task) == (3, None)
    assert [(v.labeller, v.prefer) for v in first.votes] == [("ada", "a")]
    assert [(v.judge, v.order, v.prefer) for v in first.verdicts] == [("j", 1, "b")]
    assert second.verdicts == () and parsed.warnings == ()
    assert len(parsed.sha256) == 64


def test_an_invalid_json_line_names_its_line_and_column():
    assert problems_of(jsonl(pair(), '{"id": "p2",', pair(id="p3"))) == [
        (2, "", "not valid JSON: Expecting property name enclosed in double quotes at column 13")
    ]


def test_a_missing_key_names_the_line_and_the_key():
    found = problems_of(jsonl(pair(), pair(id="p2", question=..., votes=...)))
    assert (2, "question", "missing required key 'question'") in found
    assert (2, "votes", "missing required key 'votes'") in found


def test_a_bad_prefer_names_the_vote_or_verdict_it_is_in():
    found = problems_of(
        jsonl(
            pair(votes=[{"labeller": "ada", "prefer": "left"}]),
            pair(id="p2", judge=[{"judge": "j", "order": 2, "prefer": "A"}]),
        )
    )
    assert found == [
        (1, "votes[0].prefer", 'prefer must be a, b or tie, not "left"'),
        (2, "judge[0].prefer", 'prefer must be a, b or tie, not "A"'),
    ]


def test_a_duplicate_id_names_the_line_it_first_appeared_on():
    assert problems_of(jsonl(pair(), pair(id="p2"), pair())) == [
        (3, "id", "duplicate id 'p1' (first on line 1)")
    ]


@pytest.mark.parametrize("data", [b"", b"\n  \n", b"\xef\xbb\xbf\n"])
def test_an_empty_file_is_refused(data):
    assert problems_of(data) == [
        (None, "", "the file holds no pairs: expected one JSON object a line")
    ]


def test_every_problem_is_reported_at_once():
    found = problems_of(
        jsonl(
            pair(extra=1),
            pair(id="p2", judge=[{"judge": "j", "order": 3, "prefer": "a"}]),
            pair(
                id="p3",
                votes=[{"labeller": "ada", "prefer": "a"}, {"labeller": "ada", "prefer": "b"}],
            ),
            "[1, 2]",
            pair(id="p5", answer_a=None, model_b=7),
            pair(id="p6", votes="ada"),
        )
    )
    assert found == [
        (
            1,
            "extra",
            "unknown key 'extra' (known: id, question, answer_a, answer_b, model_a, model_b, votes, task, judge)",
        ),
        (2, "judge[0].order", "order must be 1 or 2, not 3"),
        (3, "votes[1].labeller", "'ada' voted twice on this pair"),
        (4, "", "expected a JSON object, not a list"),
        (5, "answer_a", "must be text, not null"),
        (5, "model_b", "must be text, not a number"),
        (6, "votes", "must be a list, not text"),
    ]


def test_a_misspelt_key_gets_a_did_you_mean():
    found = problems_of(jsonl(pair(votes=..., vote=[])))
    assert found[0] == (
        1, "vote", "unknown key 'vote' - did you mean 'votes'? (known: id, question, answer_a, "
        "answer_b, model_a, model_b, votes, task, judge)",
    )  # fmt: skip


def test_keys_inside_votes_and_verdicts_are_checked_too():
    vote = {"labeler": "ada", "prefer": "a"}
    found = problems_of(jsonl(pair(votes=[vote], judge=[{"judge": "j", "prefer": "a"}])))
    assert found[0][:2] == (1, "votes[0].labeler") and "did you mean 'labeller'" in found[0][2]
    assert (1, "votes[0].labeller", "missing required key 'labeller'") in found
    assert (1, "judge[0].order", "missing required key 'order'") in found


def test_a_duplicate_key_nan_and_a_lone_surrogate_are_refused():
    found = problems_of(
        jsonl(
            '{"id": "p1", "id": "p2"}',
            json.dumps(pair(id="p3")).replace('"Hello."', "NaN"),
            json.dumps(pair(id="p4")).replace("Hello.", "\\ud800"),
        )
    )
    assert found[0] == (1, "", "not valid JSON: duplicate key 'id'")
    assert found[1] == (2, "", "not valid JSON: NaN is not a JSON number")
    assert found[2][:2] == (3, "answer_a") and "lone surrogate" in found[2][2]


def test_bad_utf8_names_its_line_and_column():
    data = jsonl(pair()) + b"\n" + b'{"id": "\xff"}'
    assert problems_of(data) == [(2, "", "not valid UTF-8: byte 0xff at column 9")]


def test_a_file_over_the_size_bound_is_refused_before_it_is_read():
    found = problems_of(b" " * (MAX_BYTES + 1))
    assert found[0][0] is None and "the limit is 5,242,880 bytes" in found[0][2]


def test_a_number_or_boolean_answer_is_kept_as_its_json_text_with_a_warning():
    parsed = parse_pairset(jsonl(pair(answer_a=True, answer_b=42)), filename="set.jsonl")

    assert (parsed.pairs[0].answer_a, parsed.pairs[0].answer_b) == ("true", "42")
    assert [(w.line, w.path, w.severity) for w in parsed.warnings] == [
        (1, "answer_a", "warning"),
        (1, "answer_b", "warning"),
    ]


def test_an_integer_id_is_read_as_text_and_an_empty_answer_is_allowed():
    parsed = parse_pairset(jsonl(pair(id=7, answer_b="")), filename="set.jsonl")
    assert (parsed.pairs[0].id, parsed.pairs[0].answer_b) == ("7", "")


# --- names and the lab suite -------------------------------------------------------------


def test_names_and_ids_become_identifiers_and_stay_unique():
    rows = parse_pairset(
        jsonl(
            pair(id="A 1", task="Wolfram alpha"),
            pair(id="a-1", task="(Wolfram alpha)?"),
            pair(id="ü", task=...),
        ),
        filename="set.jsonl",
    ).pairs
    cases = lab_cases(rows)
    assert [(c.task_id, c.case_id) for c in cases] == [
        ("wolfram-alpha", "a-1"),
        ("wolfram-alpha-2", "a-1-2"),
        ("pairs", "u"),
    ]
    assert pairset_name("/data/PandaLM test set.jsonl") == "pandalm-test-set"
    assert slug("x" * 70) == "x" * 64 and slug("!!!") == "pair"


def test_the_lab_suite_has_one_case_per_pair_given_contestants_and_the_judge():
    cases = [
        LabCase("writing", "p1", 'Say {{hello}}: it\'s "quoted".'),
        LabCase("math", "p2", "1+1?"),
    ]
    text = lab_suite_yaml("my-set", cases, judge="openai/gpt-4o-mini", rubric="Prefer brevity.\n")

    suite = parse_suite(text.encode(), filename="lab.yaml", origin="upload")

    assert suite.name == "lab-my-set" and suite.models == ("given/a", "given/b")
    assert [(t.id, [c.id for c in t.cases]) for t in suite.tasks] == [
        ("writing", ["p1"]),
        ("math", ["p2"]),
    ]
    assert suite.judge.model == "openai/gpt-4o-mini" and suite.judge.rubric == "Prefer brevity.\n"
    assert suite.task("writing").case("p1").vars["question"] == cases[0].question
    without = lab_suite_yaml("my-set", cases, judge="fake/small")
    assert parse_suite(without.encode(), filename="lab.yaml", origin="upload").judge.rubric == ""


# --- the figures ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("votes", "expected"),
    [
        (["a"], "a"),
        (["a", "a", "b"], "a"),
        (["a", "b", "tie"], None),
        (["a", "b"], None),
        (["a", "a", "b", "tie"], None),  # a plurality of two in four is not a majority
        (["tie", "tie", "tie", "b"], "tie"),
        ([], None),
    ],
)
def test_the_consensus_is_the_strict_majority(votes, expected):
    assert strict_majority(votes) == expected


def test_judge_figures_by_hand():
    humans = {"p1": "a", "p2": "b", "p3": "tie", "p4": "a"}
    verdicts = [
        ("p1", 1, "a"), ("p1", 2, "a"),  # baseline twice: a
        ("p2", 1, "a"), ("p2", 2, "b"),  # a flip: tie
        ("p3", 1, "tie"), ("p3", 2, "b"),  # tie + candidate: b
        ("p4", 1, "b"),  # order 1 only
        ("p5", 1, "b"), ("p5", 2, "a"),  # a flip on a pair without a consensus
    ]  # fmt: skip

    figures = judge_figures(humans, verdicts)

    assert figures["verdicts"] == {"order1": 5, "order2": 4, "both": 4}
    assert (figures["flips"], figures["flip_rate"]) == (2, 0.5)
    assert figures["order1"]["n"] == 4 and figures["order2"]["n"] == 3
    assert figures["combined"]["n"] == 3
    # combined a, tie, b against humans a, b, tie: rows human, columns judge (a, b, tie)
    assert figures["combined"]["confusion"] == [[1, 0, 0], [0, 0, 1], [0, 1, 0]]
    assert figures["combined"]["agreement"] == pytest.approx(1 / 3, abs=1e-6)
    # p_o = 1/3, p_e = 3 · (1/3 · 1/3) = 1/3: kappa 0
    assert figures["combined"]["kappa"] == 0 and figures["combined"]["band"] == "slight"
    # order 1: a, a, tie, b against a, b, tie, a → p_o = 1/2; p_e = (2·2 + 1·1 + 1·1)/16
    assert figures["order1"]["kappa"] == pytest.approx((0.5 - 6 / 16) / (1 - 6 / 16), abs=1e-6)


def test_an_order_without_verdicts_is_all_undefined_and_flips_need_both_orders():
    figures = judge_figures({"p1": "a"}, [("p1", 1, "a")])
    assert figures["order2"] == {
        "n": 0, "kappa": None, "kappa_ci": None, "se": None, "band": None, "agreement": None,
        "confusion": [[0, 0, 0], [0, 0, 0], [0, 0, 0]],
    }  # fmt: skip
    assert figures["combined"]["n"] == 0
    assert (figures["flips"], figures["flip_rate"]) == (0, None)


def test_lab_figures_count_pairs_without_a_majority_and_without_votes():
    votes = {
        "p1": {"ada": "a", "bo": "a", "cy": "b"},
        "p2": {"ada": "a", "bo": "b"},
        "p3": {},
        "p4": {"ada": "tie"},
    }
    verdicts = [LabVerdict("j", "p1", 1, "a"), LabVerdict("j", "p2", 1, "b")]

    figures = lab_figures(votes, verdicts, judges=["unrun", "j"])

    humans = figures["humans"]
    assert (figures["pairs"], humans["consensus"], humans["no_majority"], humans["unlabelled"]) == (
        4, 2, 1, 1,
    )  # fmt: skip
    assert humans["multiply_labelled"] == 2 and humans["labellers"] == ["ada", "bo", "cy"]
    assert humans["pairwise_n"] == {"ada~bo": 2, "ada~cy": 1, "bo~cy": 1}
    assert list(figures["judges"]) == ["unrun", "j"]
    assert figures["judges"]["unrun"]["order1"]["n"] == 0
    assert figures["judges"]["j"]["order1"]["n"] == 1  # p2 has no majority


def test_report_lines_print_every_view_of_each_judge():
    votes = {"p1": {"ada": "a", "bo": "a"}, "p2": {"ada": "b", "bo": "b"}}
    verdicts = [LabVerdict("j", p, o, v) for p, o, v in [("p1", 1, "a"), ("p1", 2, "b"),
                                                          ("p2", 1, "b"), ("p2", 2, "b")]]  # fmt: skip
    report = {"name": "s"} | lab_figures(votes, verdicts)
    report["judges"]["j"] |= {"source": "imported", "cost_usd": None}

    text = "\n".join(report_lines(report))

    assert "pair set s - 2 pairs" in text
    assert "ada~bo: kappa 1.000 (n=2)" in text
    assert "order 1   1.000 [1.000, 1.000] almost perfect · agreement 1.000 · n=2" in text
    assert "flips 1 of 2 (0.500) · cost not known (imported verdicts)" in text
