"""CI gates (SPEC §15) and the exit codes, each produced by a real invocation of the console
script; and the pure gate checks on report dicts."""

from __future__ import annotations

import json
import textwrap

from evalsite.core.gates import check_gates
from tests.helpers.cli import evalsite, sqlite_rows
from tests.results.test_report_cli import _write

# --- the pure checks ------------------------------------------------------------------------


def _report(**changes) -> dict:
    report = {
        "run_id": "r2",
        "contestants": ["base", "a", "b"],
        "headline_eligible": False,
        "calibration": {"reason": "kappa 0.25 (fair) over 12 labels is below the floor 0.40"},
        "win_rates": {
            "a": {"ci": [0.52, 0.71], "n": 30, "flip_rate": 0.1},
            "b": {"ci": None, "n": 5, "flip_rate": 0.4},
        },
        "per_contestant": {
            "a": {"schema": {"rate": 0.96}, "checks": {"rate": 0.8}},
            "b": {"schema": {"rate": 0.90}, "checks": {"rate": None}},
        },
    }
    report.update(changes)
    return report


def test_each_gate_names_its_candidate_figure_and_threshold():
    gate = {
        "min_win_rate_lower_bound": {"a": 0.5, "b": 0.5},
        "max_flip_rate": 0.3,
        "min_schema_pass_rate": 0.95,
        "min_check_pass_rate": 0.75,
        "require_headline_eligible": True,
    }
    results = {(r.gate, r.subject): r for r in check_gates(_report(), gate)}

    assert results["min_win_rate_lower_bound", "a"].status == "passed"
    assert results["min_win_rate_lower_bound", "b"].message.startswith("b: no win-rate interval")
    assert results["max_flip_rate", "b"].message == "b: flip rate 0.400 > 0.300"
    assert results["max_flip_rate", "a"].status == "passed"
    assert results["min_schema_pass_rate", "b"].message == "b: schema pass rate 0.900 < 0.950"
    assert results["min_check_pass_rate", "b"].status == "failed"  # nothing measured
    assert results["require_headline_eligible", "run"].message.endswith("below the floor 0.40")
    assert sum(r.failed for r in results.values()) == 5


def test_a_single_lower_bound_applies_to_every_candidate_and_the_baseline_is_never_gated():
    results = check_gates(_report(), {"min_win_rate_lower_bound": 0.6})
    assert [(r.subject, r.status) for r in results] == [("a", "failed"), ("b", "failed")]
    assert results[0].figure == 0.52 and results[0].threshold == 0.6


def test_regression_against_the_pinned_run_is_skipped_without_one_and_fails_beyond_n_points():
    pinned = _report(run_id="r1", suite={"name": "s"}, baseline="base", judge={"model": "j"})
    pinned["win_rates"] = {"a": {"win_rate": 0.70, "ci": None}, "b": {"win_rate": 0.5}}
    later = _report(suite={"name": "s"}, baseline="base", judge={"model": "j"})
    later["win_rates"] = {"a": {"win_rate": 0.58, "ci": None}, "b": {"win_rate": 0.47}}

    skipped = check_gates(later, {"max_regression_points": 5})
    checked = {
        r.subject: r
        for r in check_gates(later, {"max_regression_points": 5}, pinned)
        if r.measure in ("win-rate", "")
    }

    assert skipped[0].status == "skipped" and "evalsite baseline set" in skipped[0].message
    assert checked["a"].status == "failed" and checked["a"].figure == 12.0
    assert "down 12.0 points (more than 5)" in checked["a"].message
    assert checked["b"].status == "passed"


# --- through the console script -----------------------------------------------------------------


def _with_gate(suite_path, gate: str) -> None:
    text = suite_path.read_text()
    suite_path.write_text(
        text.replace("labels:\n", f"gate:\n{textwrap.indent(gate, '  ')}\nlabels:\n")
    )


def test_a_failing_gate_exits_1_and_names_its_figure(tmp_path):
    suite, replies = _write(tmp_path, min_labels=10)
    _with_gate(suite, "min_win_rate_lower_bound: 0.9\nmax_flip_rate: 0.3")

    result = evalsite(tmp_path / "data", "run", str(suite), "--replies", str(replies))

    assert result.returncode == 1, result.stderr
    assert (  # BCa over 20 cases
        "  gate failed: min_win_rate_lower_bound - scripted/cand: win-rate lower bound 0.575 < 0.900"
        in result.stdout.splitlines()
    )
    report = json.loads(evalsite(tmp_path / "data", "report", "latest", "--json").stdout)
    assert report["gates_passed"] is False
    assert [g["status"] for g in report["gates"]] == ["failed", "passed"]


def test_passing_gates_exit_0_and_say_so(tmp_path):
    suite, replies = _write(tmp_path, min_labels=10)
    _with_gate(suite, "min_win_rate_lower_bound: 0.5\nrequire_headline_eligible: true")

    result = evalsite(tmp_path / "data", "run", str(suite), "--replies", str(replies))

    assert result.returncode == 0, result.stdout + result.stderr
    assert "  gates: 2 passed" in result.stdout.splitlines()


def test_require_headline_eligible_fails_an_uncalibrated_run(tmp_path):
    suite, replies = _write(tmp_path, min_labels=30)
    _with_gate(suite, "require_headline_eligible: true")

    result = evalsite(tmp_path / "data", "run", str(suite), "--replies", str(replies))

    assert result.returncode == 1
    assert "gate failed: require_headline_eligible - not headline-eligible:" in result.stdout


def test_a_regression_beyond_n_points_against_the_pinned_baseline_exits_1(tmp_path):
    suite, replies = _write(tmp_path, min_labels=10)
    _, worse = _write(tmp_path, min_labels=10, winners_beta="baseline", name="worse.yaml")
    _with_gate(suite, "max_regression_points: 10")
    data = tmp_path / "data"

    first = evalsite(data, "run", str(suite), "--replies", str(replies), "--label", "good")
    pinned = evalsite(data, "baseline", "set", "good")
    second = evalsite(data, "run", str(suite), "--replies", str(worse), "--no-cache")

    assert first.returncode == 0 and "gate skipped: max_regression_points" in first.stdout
    assert pinned.returncode == 0 and "baseline of headline:" in pinned.stdout
    assert second.returncode == 1
    assert "down 50.0 points (more than 10)" in second.stdout
    assert (
        evalsite(data, "baseline", "show", "headline")
        .stdout.strip()
        .endswith(sqlite_rows(data, "select id from runs_run where label = 'good'")[0][0])
    )


# --- every exit code from a real invocation ---------------------------------------------------


def test_exit_0_ok_and_2_input_error(tmp_path):
    suite, _ = _write(tmp_path, min_labels=10)
    bad = tmp_path / "bad.yaml"
    bad.write_text(suite.read_text().replace("tasks:", "taskz:"))

    assert evalsite(tmp_path / "data", "validate", str(suite)).returncode == 0
    result = evalsite(tmp_path / "data", "validate", str(bad))
    assert result.returncode == 2 and "taskz" in result.stdout + result.stderr
    assert evalsite(tmp_path / "data", "run", str(suite), "--repeats", "99").returncode == 2


def test_exit_3_when_every_answer_failed(tmp_path):
    suite, replies = _write(tmp_path, min_labels=10)
    text = replies.read_text()
    text = "\n".join(
        line.split(":")[0] + ": [{error: provider down}]" if line.startswith("  ") and
        not line.startswith("  judge/") else line
        for line in text.splitlines()
    )  # fmt: skip
    replies.write_text(text + "\n")

    result = evalsite(tmp_path / "data", "run", str(suite), "--replies", str(replies))

    assert result.returncode == 3, result.stdout + result.stderr
    assert "every answer failed" in result.stderr


def test_exit_4_refused_over_the_cap_before_spending(tmp_path):
    suite = tmp_path / "tiny.yaml"
    from tests.helpers.factories import small_suite_text

    suite.write_text(small_suite_text("capped"))
    result = evalsite(tmp_path / "data", "run", str(suite), "--fake", "--max-cost", "0.0001")
    assert result.returncode == 4
    assert sqlite_rows(tmp_path / "data", "select count(*) from runs_answer") == [(0,)]


def test_exit_5_aborted_by_the_spend_reservation_mid_run(tmp_path):
    # Scripted replies far longer than max_tokens: the reservation holds each call's worst
    # case as the estimate saw it, the real cost overshoots, and the next reservation no
    # longer fits under the cap.
    data = tmp_path / "data"
    prices = tmp_path / "prices.yaml"
    prices.write_text(
        "pinned: '2026-12-01'\ncurrency: USD\nverified: false\nmodels:\n"
        "- {model: scripted/big, input_per_mtok: 1000, output_per_mtok: 1000}\n"
        "- {model: scripted/small, input_per_mtok: 1000, output_per_mtok: 1000}\n"
    )
    assert evalsite(data, "prices", "import", str(prices), "--activate").returncode == 0
    suite = tmp_path / "long.yaml"
    suite.write_text(
        "suite: long\nversion: 1\nmodels: [scripted/small, scripted/big]\n"
        "defaults: {max_tokens: 5}\ntasks:\n  - id: t\n    prompt: 'Say {{x}}'\n"
        "    cases: [" + ", ".join(f"{{id: c{i}, vars: {{x: '{i}'}}}}" for i in range(6)) + "]\n"
    )
    long_text = "word " * 4000
    replies = tmp_path / "replies.yaml"
    replies.write_text(
        "small:\n"
        + "".join(f"  t/c{i}: ['ok']\n" for i in range(6))
        + "big:\n"
        + "".join(f"  t/c{i}: ['{long_text}']\n" for i in range(6))
    )

    result = evalsite(
        data, "run", str(suite), "--replies", str(replies), "--max-cost", "8", "--concurrency", "1"
    )

    assert result.returncode == 5, result.stdout + result.stderr
    status, spent = sqlite_rows(
        data, "select status, spent_answers_usd from runs_run where status != 'refused'"
    )[0]
    assert status == "aborted_over_budget"


def test_the_offline_ci_recipe_in_docs_ci_md_works_as_written(tmp_path):
    """Every line of the `ci-offline` block of docs/ci.md, run from the repo root."""
    import os
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    text = (root / "docs" / "ci.md").read_text()
    block = text.split("```sh ci-offline\n", 1)[1].split("```", 1)[0]
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "EVALSITE_REDIS_URL"}}
    env["EVALSITE_DATA_DIR"] = str(tmp_path / "data")
    env["PATH"] = f"{Path(os.sys.executable).parent}:{env['PATH']}"
    for line in block.strip().splitlines():
        command = line.replace("> report.json", f"> {tmp_path / 'report.json'}")
        # the documented shell lines, run as a user types them
        result = subprocess.run(  # noqa: S602
            command, shell=True, cwd=root, env=env, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, (line, result.stdout, result.stderr)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["status"] == "done"
    assert report["win_rates"]["scripted/good"]["n"] > 8
    assert report["headline_eligible"] is False
