"""The report through the console script, as a user runs it: `run`'s summary lines and exit
code, `report`, `last`, `compare`; a calibrated suite headlines its win-rate and an
uncalibrated one is flagged in the terminal, report.md, report.html and report.json alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli import evalsite
from tests.helpers.references import cohen_kappa_score

SUITE = """\
suite: headline
version: 1
models: [scripted/base, scripted/cand]
judge:
  model: scripted/judge
  calibration: {{min_kappa: 0.40, min_labels: {min_labels}, on_below_floor: {on_below}}}
tasks:
  - id: alpha
    prompt: "Answer {{{{q}}}}"
    cases: [{cases_a}]
  - id: beta
    prompt: "Answer {{{{q}}}}"
    cases: [{cases_b}]
labels:
{labels}
"""
CASES = [f"c{i}" for i in range(10)]


def _verdicts(case_winners: dict[str, str]) -> dict[str, list[str]]:
    """Both orders agreeing on `winner` (baseline / candidate / tie) for each case."""
    shown = {"candidate": ("2", "1"), "baseline": ("1", "2"), "tie": ("tie", "tie")}
    return {
        case: [json.dumps({"reason": "r", "winner": w}) for w in shown[winner]]
        for case, winner in case_winners.items()
    }


def _write(tmp_path: Path, *, min_labels: int, winners_beta: str = "candidate",
           on_below: str = "flag", name: str = "replies.yaml") -> tuple[Path, Path]:  # fmt: skip
    winners = {}
    for i, case in enumerate(CASES):
        winners["alpha", case] = ("candidate", "baseline", "tie")[i % 3]
        winners["beta", case] = winners_beta
    labels = "\n".join(
        f"  - {{task: {task}, case: {case}, baseline: scripted/base, candidate: scripted/cand, "
        f"prefer: {prefer}}}"
        for (task, case), prefer in winners.items()
        if task == "alpha"
    )
    cases = ", ".join(f"{{id: {c}, vars: {{q: '{c}'}}}}" for c in CASES)
    suite = tmp_path / "headline.yaml"
    suite.write_text(
        SUITE.format(
            min_labels=min_labels, on_below=on_below, cases_a=cases, cases_b=cases, labels=labels
        )
    )
    lines = ["base:"] + [f"  {t}/{c}: ['base {c}']" for t in ("alpha", "beta") for c in CASES]
    lines += ["cand:"] + [f"  {t}/{c}: ['cand {c}']" for t in ("alpha", "beta") for c in CASES]
    lines += ["judge:"]
    for (task, case), winner in winners.items():
        lines.append(f"  judge/{task}/{case}: {json.dumps(_verdicts({case: winner})[case])}")
    replies = tmp_path / name
    replies.write_text("\n".join(lines) + "\n")
    return suite, replies


def _report_files(report: dict) -> dict[str, str]:
    folder = Path(report["report_path"])
    return {name: (folder / name).read_text() for name in ("report.md", "report.html")}


def test_a_calibrated_suite_headlines_its_win_rate_everywhere(tmp_path):
    suite, replies = _write(tmp_path, min_labels=10)
    data = tmp_path / "data"

    shown = evalsite(data, "run", str(suite), "--replies", str(replies))
    as_json = evalsite(data, "report", "latest", "--format", "json")

    assert shown.returncode == 0, shown.stderr
    report = json.loads(as_json.stdout)
    assert report["headline_eligible"] is True
    assert report["calibration"]["status"] == "ok" and report["calibration"]["kappa"] == 1.0
    lines = shown.stdout.splitlines()
    assert (
        lines[2]
        == "  calibration: ok - kappa 1.00 (almost perfect) over 10 labels - headline eligible: true"
    )
    assert lines[3].startswith("  scripted/cand vs scripted/base: win-rate 0.775 [")
    assert "UNCALIBRATED" not in shown.stdout
    for name, text in _report_files(report).items():
        assert "UNCALIBRATED" not in text, name
        assert "0.775" in text, name


def test_too_few_labels_flag_the_win_rate_in_the_terminal_md_html_and_json(tmp_path):
    suite, replies = _write(tmp_path, min_labels=30)
    data = tmp_path / "data"

    shown = evalsite(data, "run", str(suite), "--replies", str(replies))
    report = json.loads(evalsite(data, "report", "latest", "--json").stdout)

    assert shown.returncode == 0, shown.stderr
    assert report["headline_eligible"] is False
    assert report["calibration"]["status"] == "insufficient_labels"
    assert "the gate needs 30" in report["calibration"]["reason"]
    lines = shown.stdout.splitlines()
    assert lines[2].startswith("  calibration: insufficient_labels - kappa 1.00 (almost perfect)")
    assert lines[2].endswith("headline eligible: false")
    assert "win-rate 0.775 (UNCALIBRATED) [" in lines[3]
    files = _report_files(report)
    assert "Win-rates — UNCALIBRATED" in files["report.md"] and "0.775†" in files["report.md"]
    assert "UNCALIBRATED" in files["report.html"] and "0.775" in files["report.html"]
    html_title = files["report.html"].index("UNCALIBRATED")
    assert html_title < files["report.html"].index("0.775")


def test_on_below_floor_fail_exits_1_when_the_gate_is_not_ok(tmp_path):
    suite, replies = _write(tmp_path, min_labels=30, on_below="fail")

    shown = evalsite(tmp_path / "data", "run", str(suite), "--replies", str(replies))

    assert shown.returncode == 1, shown.stderr
    assert "headline eligible: false" in shown.stdout


def test_kappa_in_report_json_equals_scikit_learn_on_the_runs_pairs(tmp_path):
    suite, replies = _write(tmp_path, min_labels=10)
    data = tmp_path / "data"
    evalsite(data, "run", str(suite), "--replies", str(replies))
    report = json.loads(evalsite(data, "report", "latest", "--json").stdout)
    pairs_file = Path(report["report_path"]) / "pairs.jsonl"
    pairs = [json.loads(line) for line in pairs_file.read_text().splitlines()]

    labelled = {c: ("candidate", "baseline", "tie")[i % 3] for i, c in enumerate(CASES)}
    judge = [p["category"] for p in pairs if p["task"] == "alpha"]
    human = [labelled[p["case"]] for p in pairs if p["task"] == "alpha"]

    assert report["calibration"]["kappa"] == pytest.approx(
        cohen_kappa_score(human, judge, labels=["baseline", "candidate", "tie"])
    )
    assert len(pairs) == report["totals"]["pairs"] == 20
    assert (
        sum(1 for p in pairs if p["score"] is not None) == report["win_rates"]["scripted/cand"]["n"]
    )


def test_last_and_compare_print_the_latest_summary_and_the_movers(tmp_path):
    suite, replies = _write(tmp_path, min_labels=10)
    _, worse = _write(tmp_path, min_labels=10, winners_beta="baseline", name="worse.yaml")
    data = tmp_path / "data"
    first = evalsite(data, "run", str(suite), "--replies", str(replies), "--label", "before")
    second = evalsite(
        data, "run", str(suite), "--replies", str(worse), "--no-cache", "--label", "after"
    )
    assert first.returncode == 0 and second.returncode == 0, second.stderr

    last = evalsite(data, "last", "headline")
    compared = evalsite(data, "compare", "before", "after")
    gated = evalsite(data, "compare", "before", "after", "--fail-on-regression", "10")

    assert last.returncode == 0 and last.stdout == second.stdout
    assert compared.returncode == 0, compared.stderr
    assert "beta" in compared.stdout and "alpha" not in _mover_lines(compared.stdout)
    assert gated.returncode == 1
    assert "scripted/cand" in gated.stderr


def _mover_lines(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if "beta" in line or "alpha" in line)


def test_report_and_compare_name_what_is_wrong_with_a_bad_reference(tmp_path):
    data = tmp_path / "data"

    missing = evalsite(data, "report", "nope")
    compared = evalsite(data, "compare", "nope", "latest")

    assert (
        missing.returncode == 2 and "no run has the id, id prefix or label 'nope'" in missing.stderr
    )
    assert compared.returncode == 2 and "Traceback" not in compared.stderr
