"""Templating: exactly {{name}}, substituted once, never escaped (no database)."""

from __future__ import annotations

import pytest

from evalsite.core.templating import (
    TemplateError,
    format_value,
    invalid_tokens,
    placeholders,
    render,
)


def test_a_placeholder_is_replaced_by_its_var() -> None:
    assert render("Classify: {{ticket}}", {"ticket": "refund please"}) == "Classify: refund please"


def test_whitespace_inside_the_braces_is_allowed() -> None:
    assert render("{{ a }}|{{a}}|{{   a}}", {"a": "x"}) == "x|x|x"


def test_a_substituted_value_is_not_expanded_again() -> None:
    assert render("{{a}} {{b}}", {"a": "{{b}}", "b": "B"}) == "{{b}} B"


def test_values_are_never_html_escaped() -> None:
    assert render("{{html}}", {"html": "<b>&amp;</b>"}) == "<b>&amp;</b>"


@pytest.mark.parametrize(
    ("value", "text"), [(None, ""), (True, "true"), (False, "false"), (3, "3"), (1.5, "1.5")]
)
def test_values_render_as_documented(value: object, text: str) -> None:
    assert format_value(value) == text  # type: ignore[arg-type]


def test_a_missing_var_is_an_error_naming_it() -> None:
    with pytest.raises(TemplateError) as caught:
        render("{{a}} {{b}} {{c}}", {"b": 1})
    assert caught.value.missing == ("a", "c")
    assert str(caught.value) == "no value for {{a}}; no value for {{c}}"


@pytest.mark.parametrize("token", ["{{ x | upper }}", "{{a.b}}", "{{}}", "{{ 1 + 1 }}"])
def test_expressions_and_filters_are_not_placeholders(token: str) -> None:
    assert invalid_tokens(f"before {token} after") == [token]
    with pytest.raises(TemplateError):
        render(token, {"x": "1", "a": "1"})


def test_placeholders_are_listed_once_in_order_of_first_use() -> None:
    assert placeholders("{{b}} {{ a }} {{b}} {{c-d}} {{_e}}") == ["b", "a", "c-d", "_e"]


def test_single_braces_and_unclosed_braces_are_plain_text() -> None:
    assert render("{a} {{ and } {{x", {}) == "{a} {{ and } {{x"


def test_a_placeholder_may_not_span_lines() -> None:
    assert placeholders("{{\nname\n}}") == []
