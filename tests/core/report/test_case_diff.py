"""The per-case diff and evalpin's results files (no database)."""

from __future__ import annotations

import pytest

from evalsite.core.report.case_diff import (
    Attempts,
    ResultsError,
    as_case_ids,
    counts,
    diff_cases,
    diff_lines,
    parse_results,
)


def test_cases_are_better_same_worse_new_or_gone_by_their_share_of_passed_attempts() -> None:
    before = {"a": Attempts(1, 2), "b": Attempts(2, 2), "c": Attempts(2, 2), "z": Attempts(0, 1),
              "y": Attempts(1, 1), "h": Attempts(1, 2)}  # fmt: skip
    after = {"c": Attempts(1, 2), "b": Attempts(2, 2), "a": Attempts(2, 2), "n": Attempts(0, 3),
             "h": Attempts(2, 4)}  # fmt: skip
    # h: 2/4 is 1/2, the same share
    changes = diff_cases(before, after)
    assert [(c.key, c.status) for c in changes] == [
        ("c", "worse"), ("b", "same"), ("a", "better"), ("n", "new"), ("h", "same"),
        ("y", "gone"), ("z", "gone"),
    ]  # fmt: skip
    assert counts(changes) == {"better": 1, "same": 2, "worse": 1, "new": 1, "gone": 2}


def test_show_changes_leaves_out_same_rows_but_counts_them() -> None:
    changes = diff_cases({"greet": Attempts(1, 2), "bye": Attempts(1, 1)},
                         {"greet": Attempts(2, 2), "bye": Attempts(1, 1)})  # fmt: skip
    assert diff_lines(changes, show="changes") == [
        "CASE   OLD  NEW  VS",
        "greet  1/2  2/2  better",
        "cases: 1 better, 1 same, 0 worse, 0 new, 0 gone",
    ]
    assert len(diff_lines(changes)) == 4


def test_a_results_file_reads_in_order() -> None:
    text = "evalpin-results 1\ngreet 1 2\nbye 0 2\nsay_hi 1 1\n"
    rows = parse_results(text, filename="first.txt")
    assert rows == {"greet": Attempts(1, 2), "bye": Attempts(0, 2), "say_hi": Attempts(1, 1)}
    assert list(rows) == ["greet", "bye", "say_hi"]
    assert list(as_case_ids(rows)) == ["greet", "bye", "say-hi"]  # as `evalsite import` names


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("evalpin-results 2\n", "first.txt:1: the first line must be 'evalpin-results 1'"),
        ("", "first.txt:1: the first line must be 'evalpin-results 1'"),
        ("evalpin-results 1\ngreet  1 2\n", "first.txt:2: expected 'ID PASSED TOTAL'"),
        ("evalpin-results 1\n\ngreet 1 2\n", "first.txt:2: expected 'ID PASSED TOTAL'"),
        ("evalpin-results 1\ngreet 3 2\n", "first.txt:2: PASSED (3) cannot exceed TOTAL (2)"),
        ("evalpin-results 1\ngreet 0 0\n", "first.txt:2: TOTAL must be at least 1"),
        (
            "evalpin-results 1\ngreet 1 2\ngreet 1 2\n",
            "first.txt:3: duplicate id 'greet' (first at line 2)",
        ),
        ("evalpin-results 1\n_x 1 2\n", "first.txt:2: expected 'ID PASSED TOTAL'"),
        ("evalpin-results 1\ngreet 1 -2\n", "first.txt:2: expected 'ID PASSED TOTAL'"),
    ],
)
def test_a_results_file_that_breaks_the_format_names_the_line(text: str, message: str) -> None:
    with pytest.raises(ResultsError) as caught:
        parse_results(text, filename="first.txt")
    assert str(caught.value).startswith(message)
