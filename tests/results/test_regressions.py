"""One regression rule over every measure a run has (issue 28 item 2): `compare A B
--fail-on-regression N`, the compare page, MCP's compare and `run`'s `max_regression_points`
gate name the same regressions (pass rate, scorecard and matrix scores, pass^k, schema and
check pass, win-rate, cost if uncached) for the same two runs; and compare's cost is the
if-uncached cost with the spend beside it (item 10)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalsite.core.exitcodes import ExitCode
from evalsite.mcp import tools
from runs.models import Run
from tests.helpers.factories import run_command

pytestmark = pytest.mark.django_db(transaction=True)

CASES = [f"c{i}" for i in range(10)]

SUITE = """\
suite: regress
version: 1
models: {models}
{extra}
tasks:
  - id: say
    prompt: "Say ok to {{{{who}}}}."
    checks: [{{contains: ok}}]
    cases: [{cases}]
"""

SCORECARD = "scorecard:\n  - {criterion: rules, weight: 1, scorer: checks}\n"


def _suite(folder: Path, models: list[str], extra: str = "") -> Path:
    cases = ", ".join(f"{{id: {c}, vars: {{who: {c}}}}}" for c in CASES)
    path = folder / "regress.yaml"
    path.write_text(SUITE.format(models=json.dumps(models), extra=extra, cases=cases))
    return path


def _replies(folder: Path, name: str, failing: dict[str, int]) -> Path:
    """Every scripted contestant says ok to every case, but `failing[contestant]` cases."""
    path = folder / name
    path.write_text(
        json.dumps(
            {
                contestant: {
                    f"say/{case}": ["no" if i < failing.get(contestant, 0) else "ok"]
                    for i, case in enumerate(CASES)
                }
                for contestant in ("m", "m@v")
            }
        )
    )
    return path


def _two_runs(folder: Path, models: list[str], extra: str, failing: dict[str, int]):
    suite = _suite(folder, models, extra)
    before, after = _replies(folder, "before.yaml", {}), _replies(folder, "after.yaml", failing)
    for label, replies in (("before", before), ("after", after)):
        code, _, err = run_command("run", str(suite), "--replies", str(replies), "--label", label)
        assert code == ExitCode.OK, err
    return suite


def test_compare_fails_on_a_pass_rate_drop_of_ten_points(tmp_path):
    _two_runs(tmp_path, ["scripted/m"], "", {"m": 1})

    code, _, err = run_command("compare", "before", "after", "--fail-on-regression", "5")
    within, _, quiet = run_command("compare", "before", "after", "--fail-on-regression", "10")

    assert code == ExitCode.GATE_FAILED
    assert "regression: scripted/m: pass rate 1.000 -> 0.900, down 10.0 points (more than 5)" in err
    assert "check pass 1.000 -> 0.900" in err
    assert within == ExitCode.OK and quiet == ""


def test_compare_fails_on_a_scorecard_score_drop(tmp_path):
    _two_runs(tmp_path, ["scripted/m"], SCORECARD, {"m": 2})

    code, _, err = run_command("compare", "before", "after", "--fail-on-regression", "5")

    assert code == ExitCode.GATE_FAILED
    assert "scripted/m: scorecard score 1.000 -> 0.800, down 20.0 points (more than 5)" in err


def test_compare_fails_on_a_matrix_cell_score_drop_and_names_the_cell(tmp_path):
    extra = SCORECARD + "variants: {v: {system: Be brief.}}\n"
    _two_runs(tmp_path, ["scripted/m", "scripted/m@v"], extra, {"m@v": 3})

    code, out, err = run_command("compare", "before", "after", "--fail-on-regression", "5")
    _, as_json, _ = run_command("compare", "before", "after", "--fail-on-regression", "5", "--json")

    assert code == ExitCode.GATE_FAILED
    assert "scripted/m@v: scorecard score 1.000 -> 0.700, down 30.0 points (more than 5)" in err
    assert "scripted/m:" not in err  # the cell that did not move
    regressed = [r for r in json.loads(as_json)["regressions"] if r["regressed"]]
    assert {(r["measure"], r["subject"]) for r in regressed} == {
        ("scorecard score", "scripted/m@v"),
        ("pass rate", "scripted/m@v"),
        ("check pass", "scripted/m@v"),
    }
    assert all(r["threshold"] == 5 and r["before"] == 1.0 for r in regressed)


def test_the_compare_page_and_mcp_show_the_same_regressions(tmp_path, client, django_user_model):
    _two_runs(tmp_path, ["scripted/m"], SCORECARD, {"m": 2})
    a, b = Run.objects.get(label="before"), Run.objects.get(label="after")
    client.force_login(django_user_model.objects.create_user("ann", password="x" * 20))

    page = client.get("/compare/", {"a": a.id, "b": b.id, "points": "5"}).content.decode()
    reply = tools.compare_runs(a.id, b.id, points=5)
    _, _, err = run_command("compare", "before", "after", "--fail-on-regression", "5")

    lines = [line.removeprefix("regression: ") for line in err.splitlines()]
    assert len(lines) == 3  # scorecard score, pass rate, check pass
    for line in lines:
        assert f'<li class="error">{line}</li>' in page.replace("&gt;", ">")
    assert [r["text"] for r in reply["regressions"] if r["regressed"]] == lines
    assert reply["regressed"] is True and reply["regression_points"] == 5
    bad = client.get("/compare/", {"a": a.id, "b": b.id, "points": "lots"})
    assert bad.status_code == 200
    assert "the regression threshold takes points from 0 to 100, not &#x27;lots&#x27;" in (
        bad.content.decode()
    )


def test_a_cached_rerun_compares_the_if_uncached_cost_and_shows_the_spend(tmp_path):
    suite = _suite(tmp_path, ["openai/gpt-4.1-nano"])
    for label in ("first", "cached"):
        code, _, err = run_command("run", str(suite), "--fake", "--label", label)
        assert code == ExitCode.OK, err
    first, cached = Run.objects.get(label="first"), Run.objects.get(label="cached")
    uncached = first.report["totals"]["cost_if_uncached_usd"]
    assert cached.report["totals"]["cost_usd"] == 0 and uncached > 0

    code, out, _ = run_command("compare", "first", "cached", "--fail-on-regression", "0")
    _, as_json, _ = run_command("compare", "first", "cached", "--json")

    assert code == ExitCode.OK
    assert "-100%" not in out
    total = next(line for line in out.splitlines() if "cost total" in line)
    assert "if uncached" in total and "(+$0.0000)" in total and "spent" in total
    assert total.rstrip().endswith("\u2192 $0.0000")  # the spend: all from the cache
    compared = json.loads(as_json)
    assert compared["cost_total"]["delta"] == 0 and compared["spend_total"]["after"] == 0


def test_a_cost_rise_past_the_threshold_is_a_regression_in_percent(tmp_path):
    suite = _suite(tmp_path, ["openai/gpt-4.1-nano"])
    code, _, err = run_command("run", str(suite), "--fake", "--label", "before")
    assert code == ExitCode.OK, err
    system = "You answer customers of a shop. " * 60  # a long prompt: more input tokens
    suite.write_text(suite.read_text().replace("tasks:", f"defaults: {{system: {system}}}\ntasks:"))
    code, _, err = run_command("run", str(suite), "--fake", "--label", "after")
    assert code == ExitCode.OK, err
    name = "openai/gpt-4.1-nano"
    before, after = (
        Run.objects.get(label=label).report["per_contestant"][name]["cost"]
        for label in ("before", "after")
    )
    rise = after["per_1k_calls_usd"] / before["per_1k_calls_usd"] - 1
    assert rise > 0.01, "the longer prompt must cost more per answer"

    code, _, err = run_command("compare", "before", "after", "--fail-on-regression", "1")

    assert code == ExitCode.GATE_FAILED
    line = next(line for line in err.splitlines() if "cost per answer" in line)
    assert line.startswith(f"regression: {name}: cost per answer if uncached $")
    assert line.endswith(f"up {rise * 100:.1f}% (more than 1%)")


def test_runs_gate_and_compare_agree_on_the_same_two_runs(tmp_path):
    suite = _two_runs(tmp_path, ["scripted/m"], SCORECARD, {"m": 2})
    suite.write_text(
        suite.read_text().replace("tasks:", "gate: {max_regression_points: 5}\ntasks:")
    )
    code, _, err = run_command("baseline", "set", "before")
    assert code == ExitCode.OK, err
    gated, _, _ = run_command(
        "run", str(suite), "--replies", str(tmp_path / "after.yaml"), "--label", "gated"
    )

    code, _, err = run_command("compare", "before", "gated", "--fail-on-regression", "5")

    pinned = Run.objects.get(label="before").id
    gates = Run.objects.get(label="gated").report["gates"]
    failed = [g["message"].replace(f" against the pinned baseline {pinned}", "") for g in gates
              if g["status"] == "failed"]  # fmt: skip
    assert gated == code == ExitCode.GATE_FAILED
    assert failed == [line.removeprefix("regression: ") for line in err.splitlines()]
    assert len(failed) == 3
