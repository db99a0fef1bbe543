"""Provider-key-shaped strings are found and scrubbed (no database).

Keys are assembled at run time so this file itself holds nothing key-shaped.
"""

from __future__ import annotations

import pytest

from evalsite.core.keys import key_prefix, looks_like_key, redact

ANTHROPIC = "sk-" + "ant-api03-" + "Zx9" * 12
OPENAI_PROJECT = "sk-" + "proj-" + "a1B2c3D4" * 4
OPENAI_LEGACY = "sk-" + "Q" * 16
GOOGLE = "AI" + "za" + "Sy" + "b" * 18


@pytest.mark.parametrize("key", [ANTHROPIC, OPENAI_PROJECT, OPENAI_LEGACY, GOOGLE])
def test_each_key_shape_is_recognised(key: str) -> None:
    text = f"token={key}; rest"
    assert looks_like_key(text)
    assert redact(text) == f"token={key_prefix(key)}[REDACTED]; rest"  # the whole key


@pytest.mark.parametrize(
    "text",
    [
        "sk-" + "Q" * 15,  # one character short
        "AI" + "za" + "b" * 19,
        "task-list-for-the-whole-quarter-2026",  # "sk-" inside a word
        "risk-assessment-of-the-migration",
        "ask-the-customer-about-their-setup",
        "plain prose about sk- prefixes",
    ],
)
def test_near_misses_are_not_keys(text: str) -> None:
    assert not looks_like_key(text)


def test_redact_keeps_only_the_public_prefix() -> None:
    text = f"a {ANTHROPIC} b {GOOGLE} c"
    assert redact(text) == "a sk-[REDACTED] b AIza[REDACTED] c"
    assert "ant-" not in redact(text)


def test_redact_leaves_text_without_keys_alone() -> None:
    assert redact("no secrets here: sk-short") == "no secrets here: sk-short"


def test_key_prefix_names_the_family_without_the_key() -> None:
    assert key_prefix(f"x {OPENAI_PROJECT}") == "sk-"
    assert key_prefix("nothing") == ""


def test_every_key_in_a_text_is_found() -> None:
    assert redact(f"{OPENAI_LEGACY}\n{ANTHROPIC}").count("[REDACTED]") == 2
