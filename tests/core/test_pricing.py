import datetime as dt
from decimal import Decimal

import pytest

from evalsite.core.pricing import (
    PriceFileError,
    PriceRow,
    PriceRows,
    Usage,
    call_cost,
    dump_price_yaml,
    parse_price_yaml,
    priced_as,
    priced_as_notes,
    resolve_models,
    snapshot_of,
    unknown_model_message,
)

SHEET = """\
pinned: 2026-11-30
currency: USD
verified: false
notes: test table
source: https://example.test/pricing
models:
  - {model: anthropic/claude-haiku-4-5, input_per_mtok: 1.00, output_per_mtok: 5.00, cached_input_per_mtok: 0.10, source: https://example.test/a, read_on: 2026-11-29}
  - {model: openai/gpt-4o-mini, input_per_mtok: 0.15, output_per_mtok: 0.6}
  - {model: fake/small, input_per_mtok: 0.075, output_per_mtok: 0.3}
  - {model: openai/gpt-3.5-turbo, input_per_mtok: 0.5, output_per_mtok: 1.5, legacy: true}
"""


def test_cost_of_a_call_is_exact_decimal_per_million_tokens():
    row = PriceRow("openai/gpt-4o-mini", Decimal("0.15"), Decimal("0.60"), Decimal("0.075"))
    cost = call_cost(row, Usage(input_tokens=1200, output_tokens=350, cached_input_tokens=1000))
    assert cost == Decimal("0.000465")  # 1200*.15 + 350*.6 + 1000*.075 = 465 / 1e6


def test_cached_tokens_fall_back_to_the_input_rate_when_the_row_has_no_cached_rate():
    row = PriceRow("x/y", Decimal("2"), Decimal("4"))
    assert call_cost(row, Usage(0, 0, cached_input_tokens=500_000)) == Decimal("1")


def test_missing_usage_gives_no_cost_not_zero():
    row = PriceRow("x/y", Decimal("2"), Decimal("4"))
    assert call_cost(row, None) is None


def test_price_yaml_reads_every_field():
    sheet = parse_price_yaml(SHEET)
    assert sheet.pinned == dt.date(2026, 11, 30)
    assert sheet.verified is False
    haiku = sheet.rows[0]
    assert haiku.cached_input_per_mtok == Decimal("0.1")
    assert haiku.read_on == dt.date(2026, 11, 29)
    assert sheet.rows[1].cached_input_per_mtok is None
    assert [row.legacy for row in sheet.rows] == [False, False, False, True]


def test_price_yaml_round_trips_through_dump_and_parse():
    sheet = parse_price_yaml(SHEET)
    assert parse_price_yaml(dump_price_yaml(sheet)) == sheet


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("models: []\npinned: 2026-01-01", "non-empty list"),
        (
            "pinned: 2026-01-01\nmodels: [{model: a/b, input_per_mtok: x, output_per_mtok: 1}]",
            "models[0].input_per_mtok",
        ),
        (
            "pinned: 2026-01-01\nmodels: [{model: a/b, input_per_mtok: -1, output_per_mtok: 1}]",
            "must be 0 or more",
        ),
        (
            "pinned: 2026-01-01\nmodels: [{model: a/b, input_per_mtok: 1e400, output_per_mtok: 1}]",
            "models[0].input_per_mtok: the rate $1e400 per million tokens is over $100000",
        ),
        (
            "pinned: 2026-01-01\nmodels: [{model: a/b, input_per_mtok: 1000000, output_per_mtok: 1}]",
            "is over $100000",
        ),
        (
            "pinned: 2026-01-01\nmodels: [{model: a/b, input_per_mtok: 0.00000001, output_per_mtok: 1}]",
            "more than 6 decimal places",
        ),
        (
            "pinned: 2026-01-01\nmodels: [{model: a/b, input_per_mtok: 1, output_per_mtk: 1}]",
            "did you mean 'output_per_mtok'",
        ),
        (
            "pinned: someday\nmodels: [{model: a/b, input_per_mtok: 1, output_per_mtok: 1}]",
            "not a date",
        ),
        (
            "pinned: 2026-01-01\nmodels: [{model: a/b, input_per_mtok: 1, output_per_mtok: 1}, {model: a/b, input_per_mtok: 1, output_per_mtok: 1}]",
            "appears twice",
        ),
        ("pinned: [unclosed", "YAML syntax error"),
        (
            "pinned: 2026-01-01\nverified: yes please\nmodels: [{model: a/b, input_per_mtok: 1, output_per_mtok: 1}]",
            "verified",
        ),
    ],
)
def test_bad_price_files_name_the_row_and_field(text, fragment):
    with pytest.raises(PriceFileError) as error:
        parse_price_yaml(text)
    assert fragment in str(error.value)


def test_resolution_separates_priced_unpriced_and_unknown_with_a_suggestion():
    table = ["anthropic/claude-haiku-4-5", "openai/gpt-4o-mini"]
    result = resolve_models(
        ["anthropic/claude-haiku-4-5", "scripted/good", "command/agent", "openai/gpt-4o-mimi"],
        table,
    )
    assert result.priced == ("anthropic/claude-haiku-4-5",)
    assert result.not_priced == ("command/agent", "scripted/good")
    assert result.unknown == {"openai/gpt-4o-mimi": "openai/gpt-4o-mini"}
    assert not result.ok


def test_a_scripted_model_with_a_row_is_priced():
    assert resolve_models(["scripted/good"], ["scripted/good"]).priced == ("scripted/good",)


# evalmine's later price files (issue 28): per-row `verified` and `notes`, and prices evalsite
# does not charge (cache writes, long contexts); written here in their shape, not copied.
EVALMINE_ROWS = """\
pinned: 2026-08-29
currency: USD
verified: true
notes: Rates per million tokens.
models:
  - model: anthropic/claude-sonnet-4-6
    input_per_mtok: 3.00
    output_per_mtok: 15.00
    cached_input_per_mtok: 0.30
    cache_write_5m_per_mtok: 3.75
    cache_write_1h_per_mtok: 6.00
    source: https://example.com/anthropic-pricing
    read_on: 2026-08-29
    verified: true
  - model: openai/gpt-x
    input_per_mtok: 4.00
    output_per_mtok: 20.00
    long_context_threshold_tokens: 272000
    long_context_input_multiplier: 2.00
    long_context_output_multiplier: 1.50
    source: https://example.com/openai-pricing
    read_on: 2026-08-29
    verified: false
    notes: Peak hours cost double.
"""


def test_evalmines_row_fields_are_read_and_what_is_not_stored_is_said():
    sheet = parse_price_yaml(EVALMINE_ROWS)
    assert [row.model for row in sheet.rows] == ["anthropic/claude-sonnet-4-6", "openai/gpt-x"]
    assert sheet.rows[0].source == "https://example.com/anthropic-pricing"
    assert str(sheet.rows[0].read_on) == "2026-08-29"
    assert sheet.verified is False  # a row that says verified: false makes the table unverified
    assert "openai/gpt-x: Peak hours cost double." in sheet.notes
    assert sheet.notes.startswith("Rates per million tokens.")
    assert any("cache_write_5m_per_mtok" in line and "not charged" in line for line in sheet.unused)
    assert any("long_context_input_multiplier" in line for line in sheet.unused)
    assert any("models[1].verified: false" in line for line in sheet.unused)


def test_every_problem_of_a_price_file_is_reported_at_once():
    text = (
        "pinned: someday\nverified: maybe\nmodels:\n"
        "  - {model: a/b, input_per_mtok: x, output_per_mtk: 1}\n"
        "  - {model: a/c, input_per_mtok: 1, output_per_mtok: 1, verified: sure, read_on: soon}\n"
    )
    with pytest.raises(PriceFileError) as error:
        parse_price_yaml(text)
    problems = error.value.problems
    for fragment in (
        "pinned: 'someday' is not a date",
        "verified: expected true or false",
        "models[0].output_per_mtk: unknown key",
        "models[0].input_per_mtok",
        "models[1].verified: expected true or false",
        "models[1].read_on: 'soon' is not a date",
    ):
        assert any(fragment in problem for problem in problems), (fragment, problems)


# Dated snapshots and -latest aliases (issue 32): priced by their model's row, said once.
TABLE = [
    "anthropic/claude-haiku-4-5", "openai/gpt-4.1", "anthropic/claude-3-7-sonnet",
    "openai/gpt-3.5-turbo", "openai/gpt-4",
]  # fmt: skip


@pytest.mark.parametrize(
    ("model", "row"),
    [
        ("anthropic/claude-haiku-4-5-20251001", "anthropic/claude-haiku-4-5"),
        ("openai/gpt-4.1-2024-11-20", "openai/gpt-4.1"),
        ("anthropic/claude-3-7-sonnet-latest", "anthropic/claude-3-7-sonnet"),
        ("openai/gpt-4.1", "openai/gpt-4.1"),
        ("openai/gpt-3.5-turbo-0613", "openai/gpt-3.5-turbo"),  # OpenAI's older form
        ("openai/gpt-4-0314", "openai/gpt-4"),
    ],
)
def test_a_dated_snapshot_or_latest_alias_is_priced_by_its_models_row(model, row):
    assert priced_as(model, TABLE) == row
    result = resolve_models([model], TABLE)
    assert result.ok and result.priced == (model,)
    assert result.aliases == ({} if model == row else {model: row})


@pytest.mark.parametrize(
    "model",
    [
        "openai/gpt-4.1-0125",  # a month and day only: not a snapshot of a newer model
        "openai/gpt-3.5-turbo-1332",  # no such day
        "anthropic/claude-3-7-sonnet-0219",  # nor of another provider's
        "openai/gpt-4.1-20241399",  # no such day
        "openai/gpt-4.1-2024-13-01",  # no such month
        "openai/gpt-4.1-20241022-latest",  # one suffix is stripped, not two
        "openai/gpt-4.1-preview",
        "openrouter/openai/gpt-4.1-2024-11-20",  # another provider: no row of its own model
        "anthropic/claude-3-5-sonnet-20241022",  # its model has no row: no other is borrowed
    ],
)
def test_only_a_date_or_latest_suffix_of_a_model_with_a_row_is_borrowed(model):
    assert priced_as(model, TABLE) is None
    assert model in resolve_models([model], TABLE).unknown


def test_a_snapshot_with_its_own_row_is_priced_by_it():
    table = [*TABLE, "openai/gpt-4.1-2024-11-20"]
    assert priced_as("openai/gpt-4.1-2024-11-20", table) == "openai/gpt-4.1-2024-11-20"
    assert resolve_models(["openai/gpt-4.1-2024-11-20"], table).aliases == {}


def test_the_suffix_needs_a_model_before_it():
    assert snapshot_of("openai/-latest") is None
    assert snapshot_of("openai/o1-2024-12-17") == "openai/o1"


def test_price_rows_find_a_snapshots_row_by_the_same_rule():
    haiku = PriceRow("anthropic/claude-haiku-4-5", Decimal("1"), Decimal("5"))
    rows = PriceRows([haiku])
    assert rows.get("anthropic/claude-haiku-4-5-20251001") is haiku
    assert "anthropic/claude-haiku-4-5-latest" in rows
    assert rows.get("anthropic/claude-haiku-4-6") is None
    assert list(rows) == ["anthropic/claude-haiku-4-5"] and len(rows) == 1


def test_the_priced_as_note_names_the_row_and_the_id_sent():
    (note,) = priced_as_notes({"openai/gpt-4.1-2024-11-20": "openai/gpt-4.1"})
    assert note.startswith("openai/gpt-4.1-2024-11-20 is priced as openai/gpt-4.1")
    assert "(openai/gpt-4.1-2024-11-20 is sent)" in note


@pytest.mark.parametrize("model", ["openai/gpt-3.5-turbo", "openai/o1", "openai/o1-mini"])
def test_a_legacy_model_is_offered_no_other_models_row(model):
    table = ["openai/gpt-5-nano", "openai/o3", "openai/o4-mini", "openai/gpt-4o-mini"]
    assert resolve_models([model], table).unknown == {model: None}


def test_a_misspelt_model_is_still_offered_its_row():
    table = ["openai/gpt-4o-mini", "anthropic/claude-haiku-4-5"]
    unknown = resolve_models(["openai/gpt-4o-mni", "opena/gpt-4o-mini"], table).unknown
    assert unknown == {
        "openai/gpt-4o-mni": "openai/gpt-4o-mini",
        "opena/gpt-4o-mini": ("openai/gpt-4o-mini"),
    }


def test_an_unknown_model_says_how_to_add_its_row():
    message = unknown_model_message("openai/gpt-3.5-turbo", None, "prices-x")
    assert message.startswith(
        "unknown model 'openai/gpt-3.5-turbo': no row in price table prices-x."
    )
    assert "`evalsite prices export prices.yaml`" in message
    assert "`- {model: openai/gpt-3.5-turbo, input_per_mtok: USD, output_per_mtok: USD}`" in message
    assert "`evalsite prices import prices.yaml --activate`" in message


def test_an_unknown_snapshot_names_its_model_and_adds_that_models_row():
    message = unknown_model_message("anthropic/claude-3-5-sonnet-20241022", None, "t")
    assert "for it or for anthropic/claude-3-5-sonnet, the model it is a snapshot" in message
    assert "{model: anthropic/claude-3-5-sonnet, input_per_mtok" in message


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("batch_input_per_mtok", None),  # another price, not cached_input_per_mtok
        ("cache_write_30m_per_mtok", None),  # not cache_write_5m_per_mtok
        ("cache_read_per_mtok", None),
        ("audio_input_per_mtok", None),
        ("input_per_mtk", "input_per_mtok"),  # a typo
        ("cache_write_5m_per_mtk", "cache_write_5m_per_mtok"),
    ],
)
def test_an_unknown_price_key_is_offered_only_as_a_typo(key, hint):
    row = f"{{model: a/b, input_per_mtok: 1, output_per_mtok: 1, {key}: 2}}"
    with pytest.raises(PriceFileError) as error:
        parse_price_yaml(f"pinned: 2026-01-01\nmodels: [{row}]")
    (problem,) = [p for p in error.value.problems if key in p]
    if hint:
        assert f"did you mean '{hint}'" in problem
    else:
        assert "did you mean" not in problem
        assert (
            "evalsite charges input_per_mtok, output_per_mtok and cached_input_per_mtok" in problem
        )


def test_an_openrouter_free_variant_is_priced_at_zero_unless_it_has_a_row():
    from decimal import Decimal

    from evalsite.core.pricing import PriceRow, PriceRows, priced_as_notes, resolve_models

    paid = PriceRow("openrouter/vendor/paid:free", Decimal("1"), Decimal("2"))
    rows = PriceRows([paid])
    free = rows["openrouter/google/gemma-4-31b-it:free"]
    assert (free.input_per_mtok, free.output_per_mtok) == (Decimal(0), Decimal(0))
    assert rows["openrouter/vendor/paid:free"] is paid  # a row of its own wins
    assert "openai/gpt-4o:free" not in rows and "openrouter/free:free" not in rows
    resolved = resolve_models(
        ["openrouter/google/gemma-4-31b-it:free", "openrouter/vendor/paid:free", "openai/x:free"],
        [paid.model],
    )
    assert resolved.aliases == {
        "openrouter/google/gemma-4-31b-it:free": "openrouter/google/gemma-4-31b-it:free"
    }
    assert list(resolved.unknown) == ["openai/x:free"]
    assert priced_as_notes(resolved.aliases) == [
        "openrouter/google/gemma-4-31b-it:free is priced at $0: OpenRouter's free variant "
        "(a rate-limited free tier); a row of its own would price it instead"
    ]
