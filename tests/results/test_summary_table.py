"""The terminal summary after SPEC §13's lines: an aligned table per contestant (pass rates,
win-rate with interval or UNCALIBRATED, errors, tokens, cost this run and if uncached), the
warnings with the tags below the floor on one line, and colour only on a terminal without
NO_COLOR (https://no-color.org)."""

from __future__ import annotations

import io
import os
import pty
import subprocess

import pytest
from django.core.management import call_command
from django.test import TestCase

from evalsite.core.report.summary import (
    contestant_table,
    summary_lines,
    terminal_summary,
    wants_colour,
    warning_lines,
)
from runs.models import Run
from tests.helpers.cli import EVALSITE, ROOT, cli_env
from tests.helpers.factories import make_run, make_suite_version, small_suite_text
from tests.helpers.report import BASELINE, CANDIDATE, CONCISE, make_report

ESC = "\x1b["


def _table(variant: str = "uncalibrated", **kw) -> list[str]:
    return contestant_table(make_report(variant), **kw)


def test_the_table_has_a_row_per_contestant_under_its_header():
    lines = _table("eligible")
    assert lines[0].split() == [
        "contestant", "schema", "checks", "win-rate", "errors", "tokens", "in/out", "cost",
        "if", "uncached",
    ]  # fmt: skip
    assert [line.split()[0] for line in lines[1:]] == [BASELINE, CANDIDATE, CONCISE]


def test_the_columns_are_aligned():
    lines = _table("eligible")
    starts = {
        line.index(word)
        for line, word in zip(lines[:3], ("win-rate", "baseline", "0.463"), strict=True)
    }
    assert len(starts) == 1
    costs = {line.rindex("$") for line in lines[1:]}
    assert len(costs) == 1


def test_an_eligible_win_rate_shows_its_interval_and_the_baseline_says_so():
    baseline, candidate, concise = _table("eligible")[1:]
    assert " baseline " in baseline
    assert " 0.463 [0.325, 0.613] " in candidate
    assert " 0.575 [0.400, 0.750] " in concise


def test_an_uncalibrated_win_rate_is_not_shown_as_a_number():
    rows = _table("uncalibrated")[1:]
    assert all("UNCALIBRATED" in row for row in rows[1:])
    assert not any("0.463" in row or "0.575" in row for row in rows)


def test_a_row_shows_pass_rates_errors_tokens_and_both_costs():
    report = make_report("eligible")
    card = report["per_contestant"][CONCISE]
    row = contestant_table(report)[3].split()
    assert row[1] == f"{card['schema']['rate']:.3f}" and row[2] == f"{card['checks']['rate']:.3f}"
    assert (
        str(card["errors"]) in row
        and f"{card['tokens']['input']}/{card['tokens']['output']}" in row
    )
    assert row[-2:] == [f"${card['cost']['usd']:.4f}", f"${card['cost']['if_uncached_usd']:.4f}"]


def test_no_judge_says_so_in_the_win_rate_column():
    assert all("no judge" in row for row in _table("no_judge")[2:])


def test_plain_text_has_no_escape_codes_and_colour_keeps_the_columns():
    plain = _table("uncalibrated")
    coloured = _table("uncalibrated", colour=True)
    assert not any(ESC in line for line in plain)
    assert any(ESC in line for line in coloured)
    stripped = [_strip(line) for line in coloured]
    assert stripped == plain


def _strip(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_tag_warnings_share_one_line_per_contestant_and_the_others_keep_theirs():
    def cell(passed: int) -> dict:
        return {"n": 4, "passed": passed, "rate": passed / 4, "flagged": passed / 4 < 0.7}

    report = make_report("uncalibrated")
    report["per_tag"] = [
        {"tag": t, "contestants": {BASELINE: cell(1), CANDIDATE: cell(1 if t == "a" else 4)}}
        for t in ("a", "b", "c")
    ] + [{"tag": "fine", "contestants": {BASELINE: cell(4), CANDIDATE: cell(4)}}]
    report["warnings"] = [
        "win-rates are UNCALIBRATED: too few labels",
        *(f"{BASELINE}: tag {t}: pass rate 0.250 is below 0.70" for t in ("a", "b", "c")),
        f"{CANDIDATE}: tag a: pass rate 0.250 is below 0.70",
        "the price table is UNVERIFIED",
    ]
    lines = warning_lines(report)
    assert lines == [
        "  warnings:",
        "    win-rates are UNCALIBRATED: too few labels",
        "    the price table is UNVERIFIED",
        f"    {BASELINE}: 3 tags pass below 0.70: a 0.250, b 0.250, c 0.250",
        f"    {CANDIDATE}: 1 tag pass below 0.70: a 0.250",
    ]


def test_no_warnings_prints_nothing():
    report = make_report("eligible") | {"warnings": [], "per_tag": []}
    assert warning_lines(report) == []


def test_the_terminal_summary_keeps_the_spec_lines_first():
    report = make_report("uncalibrated")
    lines = terminal_summary(report)
    spec = len(summary_lines(report))
    assert lines[:spec] == summary_lines(report)
    # then pass^k and pass@k per contestant (two repeats here, issue 28), then the table
    named = len(report["per_contestant"])
    assert [line.split(": ")[1].split(",")[0] for line in lines[spec : spec + named]] == [
        "pass^2 16/20"
    ] * named
    assert lines[spec + named] == contestant_table(report)[0]


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_and_never_with_no_color():
    assert wants_colour(Tty(), {}) is True
    assert wants_colour(io.StringIO(), {}) is False
    assert wants_colour(Tty(), {"NO_COLOR": "1"}) is False
    assert wants_colour(Tty(), {"NO_COLOR": ""}) is True  # the spec: set and not empty


class LastCommandTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        version = make_suite_version(small_suite_text("desk"))
        make_run(suite_version=version, status=Run.Status.DONE, report=make_report())

    def _last(self, out: io.StringIO, **env: str) -> str:
        with pytest.MonkeyPatch.context() as patch:
            patch.delenv("NO_COLOR", raising=False)
            for name, value in env.items():
                patch.setenv(name, value)
            call_command("last", "desk", stdout=out)
        return out.getvalue()

    def test_last_prints_the_table_in_colour_on_a_terminal(self):
        text = self._last(Tty())
        assert ESC in text and "UNCALIBRATED" in text
        lines = [_strip(line) for line in text.splitlines()]
        start = lines.index(_table()[0])
        assert lines[start : start + 4] == _table()

    def test_last_is_plain_when_not_a_terminal_or_with_no_color(self):
        assert ESC not in self._last(io.StringIO())
        assert ESC not in self._last(Tty(), NO_COLOR="1")
        assert "  contestant " in self._last(io.StringIO())


def test_the_console_script_on_a_real_terminal_honours_no_color(tmp_path):
    """`run` on a pseudo-terminal: coloured; the same with NO_COLOR: plain."""
    outputs = {}
    for name, extra in (("tty", {}), ("no_color", {"NO_COLOR": "1"})):
        primary, secondary = pty.openpty()
        env = {k: v for k, v in cli_env(tmp_path / name, **extra).items()
               if name == "no_color" or k != "NO_COLOR"}  # fmt: skip
        process = subprocess.run(
            [str(EVALSITE), "run", "examples/support-desk.yaml", "--fake", "--limit", "1"],
            cwd=ROOT, env=env, stdout=secondary, stderr=subprocess.DEVNULL, timeout=120,
        )  # fmt: skip
        os.close(secondary)
        outputs[name] = _read_all(primary)
        assert process.returncode == 0, outputs[name]
    assert ESC in outputs["tty"] and "contestant" in outputs["tty"]
    assert ESC not in outputs["no_color"] and "contestant" in outputs["no_color"]


def _read_all(fd: int) -> str:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the other end closed: EIO on Linux
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks).decode()
