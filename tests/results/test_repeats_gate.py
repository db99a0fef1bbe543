"""Issue 27's repro, through the console script: ten cases whose scripted verdicts are the same
in every repeat give the same win-rate gate verdict at 1, 3 and 10 repeats, with an interval
no narrower than 0.8x the one-repeat width; one case in 8 repeats prints no interval at all,
and says there are too few cases. Copying a verdict must never buy confidence."""

from __future__ import annotations

import json

import pytest

from tests.helpers.cli import evalsite
from tests.results.test_report_cli import _verdicts

SUITE = """\
suite: repeats-gate
version: 1
models: [scripted/base, scripted/cand]
repeats: {repeats}
judge: {{model: scripted/judge}}
gate: {{min_win_rate_lower_bound: 0.5}}
tasks:
  - id: t
    prompt: "Answer {{{{q}}}}"
    cases: [{cases}]
"""
# 7 wins and 3 losses: win-rate 0.7, a one-repeat interval that reaches below 0.5
WINNERS = ["candidate"] * 7 + ["baseline"] * 3


def _run(tmp_path, repeats: int, winners: list[str]):
    cases = [f"c{i}" for i in range(len(winners))]
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        SUITE.format(
            repeats=repeats,
            cases=", ".join(f"{{id: {c}, vars: {{q: '{c}'}}}}" for c in cases),
        )
    )
    verdicts = _verdicts(dict(zip(cases, winners, strict=True)))
    lines = ["base:"] + [f"  t/{c}: ['base {c}']" for c in cases]
    lines += ["cand:"] + [f"  t/{c}: ['cand {c}']" for c in cases]
    lines += ["judge:"] + [f"  judge/t/{c}: {json.dumps(verdicts[c])}" for c in cases]
    replies = tmp_path / "replies.yaml"
    replies.write_text("\n".join(lines) + "\n")
    data = tmp_path / "data"
    shown = evalsite(data, "run", str(suite), "--replies", str(replies))
    report = json.loads(evalsite(data, "report", "latest", "--format", "json").stdout)
    return shown, report["win_rates"]["scripted/cand"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return {
        repeats: _run(tmp_path_factory.mktemp(f"r{repeats}"), repeats, WINNERS)
        for repeats in (1, 3, 10)
    }


def test_the_gate_verdict_does_not_change_with_copied_repeats(runs):
    codes = {repeats: shown.returncode for repeats, (shown, _) in runs.items()}
    assert codes == {1: 1, 3: 1, 10: 1}, {r: s.stdout + s.stderr for r, (s, _) in runs.items()}


def test_the_interval_is_no_narrower_than_the_one_repeat_width(runs):
    once = runs[1][1]["ci"]
    for repeats in (3, 10):
        ci = runs[repeats][1]["ci"]
        assert ci[1] - ci[0] >= 0.8 * (once[1] - once[0]), (repeats, ci, once)


def test_the_line_counts_cases_and_pairs_and_says_few_cases(runs):
    shown, rate = runs[3]
    assert (rate["cases"], rate["n"]) == (10, 30)
    line = next(line for line in shown.stdout.splitlines() if "win-rate" in line)
    assert " few cases over schema-passing pairs only, n=10 cases (30 pairs) " in line
    low, high = rate["ci"]
    assert f"[{low:.3f}, {high:.3f}] few cases" in line


def test_one_case_in_eight_repeats_prints_no_interval(tmp_path):
    shown, rate = _run(tmp_path, 8, ["candidate"])
    assert rate["ci"] is None
    assert "95%" not in shown.stdout and "(0.78" not in shown.stdout
    assert "no interval (too few cases: 1; an interval needs 8)" in shown.stdout
    assert "n=1 case (8 pairs)" in shown.stdout
    assert shown.returncode == 1
    assert "scripted/cand: no win-rate interval (too few cases: 1" in shown.stdout


GRADED_ONLY = """\
suite: graded-only
version: 1
models: [scripted/a, scripted/b]
judge: {model: scripted/judge}
tasks:
  - id: essay
    prompt: "Explain {{topic}}"
    judge: false
    grade: {rubric: "Clear and correct.", threshold: 0.75}
    cases: [{id: dns, vars: {topic: DNS}}]
"""


def test_a_run_without_pairwise_judging_prints_no_corrected_or_length_lines(tmp_path):
    (tmp_path / "suite.yaml").write_text(GRADED_ONLY)
    (tmp_path / "replies.yaml").write_text(
        "a: {essay/dns: ['DNS maps names.']}\nb: {essay/dns: ['DNS is magic.']}\n"
        'judge:\n  grade/essay/dns: [\'{"reasoning": "ok", "score": 5}\']\n'
    )
    shown = evalsite(
        tmp_path / "data", "run", str(tmp_path / "suite.yaml"),
        "--replies", str(tmp_path / "replies.yaml"),
    )  # fmt: skip
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "corrected win-rate" not in shown.stdout
    assert "length-controlled" not in shown.stdout
    assert shown.stdout.count("no task is judged in pairs") == 1
