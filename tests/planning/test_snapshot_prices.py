"""Dated snapshots, -latest aliases and models with no row, at every door (issue 32): validate,
run (and its dry run), the report and `prices --for` price a snapshot by its model's row and
say so once; a model with no row is refused with the commands that add one, which work."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from evalsite.core.suites import load_suite
from runs.models import Answer, PriceTable, Run
from runs.planning.planner import PlanError
from runs.planning.preview import preview_contestant
from runs.planning.validation import validate
from tests.helpers.factories import make_price_table, run_command

pytestmark = pytest.mark.django_db

ROWS = {"anthropic/claude-haiku-4-5": ("1", "5"), "openai/gpt-4.1": ("2", "8")}
SNAPSHOTS = ["anthropic/claude-haiku-4-5-20251001", "openai/gpt-4.1-latest"]
NOTE = (
    "anthropic/claude-haiku-4-5-20251001 is priced as anthropic/claude-haiku-4-5: a dated "
    "snapshot or -latest alias of it (anthropic/claude-haiku-4-5-20251001 is sent)"
)


def _suite(folder: Path, models: list[str]) -> str:
    path = folder / "snap.yaml"
    path.write_text(
        f"suite: snap\nversion: 1\nmodels: [{', '.join(models)}]\ntasks:\n"
        "  - id: greet\n    prompt: 'Say hello to {{who}}.'\n"
        "    cases: [{id: ada, vars: {who: Ada}}]\n"
    )
    return str(path)


def test_validate_resolves_a_snapshot_to_its_models_row_and_says_so(tmp_path):
    make_price_table(ROWS, active=True)

    outcome = validate(_suite(tmp_path, SNAPSHOTS))

    assert outcome["ok"], outcome["errors"]
    assert outcome["models"]["priced_as"] == {
        "anthropic/claude-haiku-4-5-20251001": "anthropic/claude-haiku-4-5",
        "openai/gpt-4.1-latest": "openai/gpt-4.1",
    }
    assert outcome["notes"].count(NOTE) == 1


@pytest.mark.django_db(transaction=True)  # the run executes on a thread
def test_a_fake_run_of_a_snapshot_is_priced_at_its_models_row_and_reported(tmp_path):
    make_price_table(ROWS, active=True)
    path = _suite(tmp_path, SNAPSHOTS)

    code, out, err = run_command("run", path, "--fake")

    assert code == 0, err
    assert err.count(f"note: {NOTE}") == 1
    run = Run.objects.get()
    answer = Answer.objects.get(run=run, contestant="anthropic/claude-haiku-4-5-20251001")
    assert answer.request["model"] == "anthropic/claude-haiku-4-5-20251001"  # the id sent
    tokens = Decimal(answer.input_tokens) * 1 + Decimal(answer.output_tokens) * 5
    assert answer.cost_usd == tokens / 1_000_000
    table = run.report["price_table"]
    assert table["priced_as"]["openai/gpt-4.1-latest"] == "openai/gpt-4.1"
    assert NOTE in run.report["reproduce"]["price_table"]
    assert "not priced" not in out


def test_a_dry_run_says_once_which_row_prices_a_snapshot(tmp_path):
    make_price_table(ROWS, active=True)

    code, out, _ = run_command("run", _suite(tmp_path, SNAPSHOTS), "--fake", "--dry-run")

    assert code == 0 and out.count(f"note: {NOTE}") == 1


def test_prices_for_a_suite_shows_the_row_a_snapshot_borrows(tmp_path):
    make_price_table(ROWS, active=True)

    code, out, _ = run_command("prices", "--for", _suite(tmp_path, SNAPSHOTS[:1]))

    assert code == 0
    assert "anthropic/claude-haiku-4-5 " in out and "openai/gpt-4.1" not in out
    assert f"note: {NOTE}" in out


def test_a_model_with_no_row_is_refused_with_commands_that_add_it(tmp_path, monkeypatch):
    make_price_table(ROWS, active=True)
    legacy = ["openai/gpt-3.5-turbo", "anthropic/claude-3-5-sonnet-20241022"]
    path = _suite(tmp_path, legacy)

    refused = validate(path)
    code, _, err = run_command("run", path, "--fake")

    assert not refused["ok"] and code == 2
    for message in (refused["errors"][0], err):
        assert "`evalsite prices export prices.yaml`" in message
        assert "`evalsite prices import prices.yaml --activate`" in message
        assert "did you mean" not in message
    # the commands as the message writes them, the rows as it says to write them
    monkeypatch.chdir(tmp_path)
    assert run_command("prices", "export", "prices.yaml")[0] == 0
    with open("prices.yaml", "a") as prices:
        for row in ("openai/gpt-3.5-turbo", "anthropic/claude-3-5-sonnet"):
            assert f"{{model: {row}, input_per_mtok: USD" in " ".join(refused["errors"])
            prices.write(f"- {{model: {row}, input_per_mtok: 0.5, output_per_mtok: 1.5}}\n")
    assert run_command("prices", "import", "prices.yaml", "--activate")[0] == 0

    assert validate(path)["ok"]
    assert PriceTable.objects.get(active=True).prices.count() == len(ROWS) + 2


def test_mcps_render_prompt_accepts_a_snapshot_by_the_same_rule(tmp_path):
    make_price_table(ROWS, active=True)
    loaded = load_suite(_suite(tmp_path, SNAPSHOTS))

    chosen = preview_contestant(loaded, "anthropic/claude-haiku-4-5-20251001")

    assert chosen.model == "anthropic/claude-haiku-4-5-20251001"
    with pytest.raises(PlanError, match="unknown model 'openai/o1'.*prices import"):
        preview_contestant(loaded, "openai/o1")
