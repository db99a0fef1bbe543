"""The console script as a user runs it: output and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.cli import cli_env

ROOT = Path(__file__).resolve().parents[2]
EVALSITE = Path(sys.executable).parent / "evalsite"
DEMO = "examples/support-desk.yaml"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("cli-data")


def evalsite(data_dir, *args, cwd=ROOT):
    return subprocess.run(
        [str(EVALSITE), *args],
        cwd=cwd,
        env=cli_env(data_dir),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_validate_prints_the_ok_line_for_the_demo_suite(data_dir):
    result = evalsite(data_dir, "validate", DEMO)
    assert result.returncode == 0, result.stderr
    line = result.stdout.strip().splitlines()[-1]
    assert line.startswith(f"ok: {DEMO} - ")
    assert "labels; every prompt rendered;" in line
    assert line.endswith("model strings resolved against prices-2026-11-30")


def test_a_misspelt_key_exits_2_naming_its_path_and_suggesting_the_key(data_dir, tmp_path):
    suite = tmp_path / "typo.yaml"
    suite.write_text(
        "suite: typo\nversion: 1\nmodels: [fake/small]\ntasks:\n"
        "  - id: one\n    prompt: hi\n    rubrik: be nice\n    cases: [{id: a}]\n"
    )
    result = evalsite(data_dir, "validate", str(suite))
    assert result.returncode == 2
    assert "tasks[0].rubrik" in result.stderr and "did you mean 'rubric'" in result.stderr
    assert f"{suite}:7" in result.stderr or "typo.yaml:7" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unknown_model_exits_2_with_a_did_you_mean(data_dir, tmp_path):
    suite = tmp_path / "model.yaml"
    suite.write_text(
        "suite: model\nversion: 1\nmodels: [openai/gpt-4o-mimi]\ntasks:\n"
        "  - id: one\n    prompt: hi\n    cases: [{id: a}]\n"
    )
    result = evalsite(data_dir, "validate", str(suite))
    assert result.returncode == 2
    assert "unknown model 'openai/gpt-4o-mimi'" in result.stderr
    assert "did you mean 'openai/gpt-4o-mini'" in result.stderr


def test_a_missing_suite_file_exits_2_without_a_traceback(data_dir):
    result = evalsite(data_dir, "validate", "no/such/suite.yaml")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "no/such/suite.yaml" in result.stderr


def test_validate_json_has_stable_keys(data_dir):
    result = evalsite(data_dir, "validate", DEMO, "--json")
    data = json.loads(result.stdout)
    assert {"ok", "path", "errors", "warnings", "tasks", "cases", "labels", "price_table"} <= set(
        data
    )
    assert data["ok"] is True and data["tasks"] >= 8 and data["labels"] >= 12


def test_prices_for_a_suite_lists_only_its_models(data_dir):
    result = evalsite(data_dir, "prices", "--for", DEMO)
    assert result.returncode == 0, result.stderr
    assert "anthropic/claude-haiku-4-5" in result.stdout
    assert "openai/gpt-4o-mini" not in result.stdout


def test_manage_py_is_the_same_entry_point(data_dir):
    env = {**os.environ, "EVALSITE_DATA_DIR": str(data_dir)}
    env.pop("DATABASE_URL", None)
    result = subprocess.run(
        [sys.executable, "manage.py", "help"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    for command in ["serve", "worker", "validate", "prices"]:
        assert command in result.stdout
