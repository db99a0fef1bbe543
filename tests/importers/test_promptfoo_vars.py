"""promptfoo_vars: list vars and vars naming vars, as promptfoo runs them (plain values)."""

from __future__ import annotations

from evalsite.core.importers.promptfoo_vars import combinations, count, expands, resolved


def test_only_a_list_whose_first_item_is_text_expands():
    assert expands(["a", 1])
    assert not expands([1, "a"])
    assert not expands([])
    assert not expands("ab")


def test_combinations_vary_the_first_var_slowest():
    variables = {"a": ["1", "2"], "b": "x", "c": ["p", "q", "r"]}
    assert count(variables) == 6
    assert [(v["a"], v["c"]) for v in combinations(variables)] == [
        ("1", "p"), ("1", "q"), ("1", "r"), ("2", "p"), ("2", "q"), ("2", "r"),
    ]  # fmt: skip
    assert all(v["b"] == "x" for v in combinations(variables))


def test_references_are_filled_as_javascript_spells_the_value_and_a_cycle_ends():
    assert resolved({"a": "{{b}}", "b": "{{a}}"}) == {"a": "{{a}}", "b": "{{a}}"}
    # a chain fills in over the passes
    assert resolved({"a": "{{b}}", "b": "{{c}}", "c": "end"})["a"] == "end"
    spelled = resolved({"t": "{{a}} {{b}} {{c}} {{d}}", "a": True, "b": None, "c": 2.0, "d": 2.5})
    assert spelled["t"] == "true null 2 2.5"
    assert resolved({"t": "{{m}}", "m": {"k": 1}})["t"] == "{{m}}"  # no spelling: left
