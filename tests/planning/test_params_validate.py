"""Issue 26 as a user meets it: a suite whose defaults set temperature 0, top_p and stop
validates for the reasoning models and the Claude 4.1 / 4.5 / 4.6 models with a note per
contestant and parameter; `run --dry-run` prints the same notes; a contestant that sets one
explicitly is refused at validate (at its line) and at run (its --models); the report's Run
section lists what each contestant was actually sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from runs.models import PriceTable, Run
from tests.helpers.factories import run_command

pytestmark = pytest.mark.django_db

MODELS = (
    "openai/o3",
    "openai/o4-mini",
    "openai/gpt-5",
    "anthropic/claude-opus-4-1",
    "anthropic/claude-sonnet-4-5",
    "anthropic/claude-haiku-4-5",
    "anthropic/claude-opus-4-6",
)
SUITE = """suite: issue-26
version: 1
defaults: {{temperature: 0, top_p: 0.9, stop: ["###"], max_tokens: 300}}
models: [{models}]
variants:
  cold: {{params: {{temperature: 0}}}}
tasks:
  - id: t
    prompt: "Say hi"
    cases: [{{id: c}}]
"""


@pytest.fixture(autouse=True)
def prices():
    PriceTable.objects.ensure_default()


def write(tmp_path: Path, models: tuple[str, ...] = MODELS) -> str:
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE.format(models=", ".join(models)))
    return str(path)


def test_validate_notes_each_parameter_a_contestant_will_not_receive(tmp_path):
    code, out, err = run_command("validate", write(tmp_path))
    assert code == 0, err
    assert (
        "note: openai/o3 will not be sent temperature 0 (set at defaults.temperature): "
        "openai/o3 takes no temperature other than 1" in out
    )
    for model in ("openai/o3", "openai/o4-mini", "openai/gpt-5"):
        for param in ("temperature", "top_p", "stop"):
            assert f"note: {model} will not be sent {param} " in out
    for model in MODELS[3:]:
        assert f"note: {model} will not be sent top_p 0.9 " in out
        assert f"note: {model} will not be sent temperature" not in out
    assert out.count("note: ") == 3 * 3 + 4


def test_validate_json_lists_what_each_contestant_will_not_receive(tmp_path):
    import json

    code, out, _ = run_command("validate", write(tmp_path), "--json")
    outcome = json.loads(out)
    assert outcome["ok"] and code == 0
    assert outcome["not_sent"]["openai/o3"]["top_p"] == "openai/o3 takes no top_p"
    assert list(outcome["not_sent"]["anthropic/claude-opus-4-6"]) == ["top_p"]


def test_validate_refuses_a_contestant_that_sets_what_its_model_refuses_at_its_line(tmp_path):
    code, out, err = run_command("validate", write(tmp_path, ("openai/o3@cold",)))
    assert code == 2
    assert "suite.yaml:6: variants.cold.params.temperature: openai/o3@cold: openai/o3 takes " in err
    assert "no temperature other than 1" in err


def test_the_dry_run_prints_the_notes_and_run_refuses_an_explicit_setting(tmp_path):
    path = write(tmp_path)
    code, out, err = run_command("run", path, "--dry-run")
    assert code == 0, err
    assert 'note: openai/gpt-5 will not be sent stop ["###"] (set at defaults.stop)' in out
    code, out, err = run_command("run", path, "--dry-run", "--models", "openai/gpt-5@cold")
    assert code == 2
    assert "openai/gpt-5@cold: openai/gpt-5 takes no temperature other than 1" in err


@pytest.mark.django_db(transaction=True)  # a thread or process reads what it wrote
def test_the_report_lists_what_each_contestant_was_sent(tmp_path):
    path = write(tmp_path, ("openai/o3", "anthropic/claude-sonnet-4-5"))
    code, out, err = run_command("run", path, "--fake", "--max-cost", "5")
    assert code == 0, err
    report = Run.objects.get().report
    claude = {"max_tokens": 300, "stop": ["###"], "temperature": 0}
    assert report["sent"] == {
        "openai/o3": [{"params": {"max_tokens": 300}, "tasks": ["t"]}],
        "anthropic/claude-sonnet-4-5": [{"params": claude, "tasks": ["t"]}],
    }
    markdown = (Path(report["report_path"]) / "report.md").read_text()
    run_section = markdown.split("## Run", 1)[1].split("\n## ", 1)[0]
    assert "Sent to `openai/o3`: `max_tokens 300`" in run_section
    assert (
        'Sent to `anthropic/claude-sonnet-4-5`: `max_tokens 300, stop ["###"], temperature 0`'
        in run_section
    )
