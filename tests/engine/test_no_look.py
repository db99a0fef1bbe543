"""No-look runs (docs/no-look.md): a canary in every field of every case is found nowhere
afterwards - not in any byte under the data dir (the SQLite file, its WAL and shared
memory, the reports), not in the command's output, not in the MCP tools' replies - while
the run's scores, verdicts and costs are all there.

Each run is a real `evalsite run` process on a data dir of its own."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import launcher
from tests.helpers.cli import cli_env

ROOT = Path(__file__).resolve().parents[2]
CANARY = "CANARY-7f3a9c"

SUITE = f"""\
suite: canary
version: 1
{{privacy}}models: [scripted/a, scripted/b]
replies: replies.yaml
judge: {{{{model: scripted/judge}}}}
tasks:
  - id: paired
    prompt: "Summarise this note: {{{{note}}}}"
    cases:
      - id: one
        vars: {{{{note: "{CANARY} one"}}}}
        checks: [{{{{contains: "{CANARY}"}}}}]
      - id: two
        tags: [urgent]
        vars: {{{{note: "{CANARY} two"}}}}
        checks: [{{{{not_contains: "{CANARY} nowhere"}}}}, {{{{equals: "{CANARY}"}}}}]
  - id: checked
    judge: false
    prompt: "List the names in: {{{{text}}}}"
    weighted_match: {{{{label: name, threshold: 0.5, fields: {{{{name: {{{{weight: 1}}}}}}}}}}}}
    cases:
      - id: three
        vars: {{{{text: "{CANARY} three"}}}}
        checks: [{{{{contains: "{CANARY}"}}}}, {{{{regex: "{CANARY}-[0-9]+"}}}}]
        expected: [{{{{name: "{CANARY} expected"}}}}]
        grade: {{{{criteria: "{CANARY} criteria", reference: "{CANARY} reference"}}}}
"""
VERDICT = json.dumps({"reason": f"{CANARY} is better", "winner": "2"})
GRADE = json.dumps({"reasoning": f"{CANARY} graded", "score": 4})
NAMES = json.dumps([{"name": f"{CANARY} expected"}])
REPLIES = f"""\
a:
  paired/one: ["{CANARY} answer a one"]
  paired/two: ["{CANARY} answer a two"]
  checked/three: ['{NAMES}']
b:
  paired/one: ["{CANARY} answer b one"]
  paired/two: [{{error: "{CANARY} refused", kind: bad_request}}]
  checked/three: ["not json {CANARY}"]
judge:
  judge/paired/one: ["unreadable {CANARY}", '{VERDICT}']
  judge-retry/paired/one: ['{VERDICT}']
  judge/paired/two: ['{VERDICT}', '{VERDICT}']
  grade/checked/three: ['{GRADE}']
"""

MCP_SCRIPT = textwrap.dedent(
    """
    import json, os, django
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    django.setup()
    from evalsite.mcp import server
    from runs.models import Run
    run = Run.objects.get()
    replies = [
        server.list_runs(),
        server.get_run(run.id),
        server.get_run(run.id, "failures"),
        server.last_report("suite.yaml"),
        server.render_prompt("suite.yaml", "scripted/a", "paired/one"),
    ]
    replies += [
        server.get_case_result(run.id, contestant, case)
        for contestant in ("scripted/a", "scripted/b")
        for case in ("paired/one", "paired/two", "checked/three")
    ]
    print(json.dumps([r.structured_content for r in replies]))
    """
)


def _write(folder: Path, *, privacy: bool) -> Path:
    text = SUITE.format(privacy="privacy: {no_look: true}\n" if privacy else "")
    (folder / "suite.yaml").write_text(text)
    (folder / "replies.yaml").write_text(REPLIES)
    return folder / "suite.yaml"


def _evalsite(data: Path, suite: Path, *args: str) -> subprocess.CompletedProcess:
    return _command(data, suite.parent, "run", str(suite), *args)


def _own_env(data: Path, **extra: str) -> dict[str, str]:
    """The subprocess's environment: its own SQLite data dir (on CI's PostgreSQL leg too),
    whose every byte the test can read: the database file, its WAL and the reports."""
    return cli_env(data, **extra)


def _command(data: Path, folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = _own_env(data, EVALSITE_MCP_SUITE_ROOT=str(folder))
    return launcher.run(list(args), env=env, cwd=folder, timeout=300, text=False)


def _mcp_replies(data: Path, suite: Path) -> bytes:
    env = _own_env(data, EVALSITE_MCP_SUITE_ROOT=str(suite.parent), PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", MCP_SCRIPT], env=env, cwd=suite.parent, capture_output=True
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout + done.stderr


def _every_byte(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _assert_no_canary(data: Path, *outputs: bytes) -> None:
    files = _every_byte(data)
    assert any(name.endswith("evalsite.sqlite3") for name in files)
    assert any(name.endswith("answers.jsonl") for name in files)
    leaked = [name for name, content in files.items() if CANARY.encode() in content]
    assert leaked == []
    for output in outputs:
        assert CANARY.encode() not in output


def _run_values(data: Path) -> dict:
    """What the run kept, read straight from its database."""
    db = sqlite3.connect(f"file:{data / 'evalsite.sqlite3'}?mode=ro", uri=True)
    run = db.execute("select id, status, no_look, report from runs_run").fetchone()
    answers = db.execute(
        "select task_id, case_id, contestant, status, passed, checks_passed, match_score, "
        "grade_score, output_tokens, latency_ms, error_kind from runs_answer"
    ).fetchall()
    pairs = db.execute("select score from runs_pair where score is not null").fetchall()
    version = db.execute("select stripped, parsed from runs_suiteversion").fetchone()
    retried = db.execute("select count(*) from runs_judgement where retried").fetchone()[0]
    return {"run": run, "answers": answers, "pairs": pairs, "version": version, "retried": retried}


@pytest.mark.parametrize(
    ("privacy", "args"),
    [
        (True, ["--fake"]),
        (True, ["--models", "scripted/a,scripted/b", "--judge", "scripted/judge"]),
        (False, ["--no-look", "--models", "scripted/a,scripted/b", "--judge", "scripted/judge"]),
    ],
    ids=["fake", "scripted", "no-look-flag"],
)
def test_a_canary_in_every_case_field_is_found_nowhere_after_a_no_look_run(tmp_path, privacy, args):
    data, folder = tmp_path / "data", tmp_path / "suite"
    folder.mkdir()
    suite = _write(folder, privacy=privacy)

    done = _evalsite(data, suite, *args, "--replies", str(folder / "replies.yaml"))
    assert done.returncode in (0, 1), done.stderr.decode()
    mcp = _mcp_replies(data, suite)
    listed = _command(data, folder, "list")
    report = _command(data, folder, "report", "latest", "--format", "md")

    _assert_no_canary(data, done.stdout, done.stderr, mcp, listed.stdout, report.stdout)
    assert b"no-look" in listed.stdout
    assert b"No-look run: no case data was kept" in report.stdout
    kept = _run_values(data)
    run_id, status, no_look, report = kept["run"]
    assert (status, no_look) == ("done", 1)
    assert json.loads(report)["no_look"] is True
    assert b"no-look run" in done.stdout
    assert kept["version"][0] == 1  # the stored suite was stripped
    assert len(kept["answers"]) == 6
    done_rows = [row for row in kept["answers"] if row[3] == "done"]
    assert len(done_rows) >= 4  # b refused a call: the model is not called again
    assert all(row[8] is not None and row[9] is not None for row in done_rows)
    assert kept["pairs"], "the judge's verdicts are kept"
    if "--fake" not in args:
        by_cell = {(row[0], row[1], row[2]): row for row in kept["answers"]}
        assert by_cell["paired", "one", "scripted/a"][5] == 1  # its contains check passed
        assert by_cell["paired", "two", "scripted/b"][10] == "bad_request"
        assert by_cell["checked", "three", "scripted/a"][6] == 1.0  # weighted match
        assert by_cell["checked", "three", "scripted/a"][7] == 4  # graded
        assert privacy is (b"render_prompt is refused for a no-look suite" in mcp)
        assert kept["retried"] == 1  # the unreadable judge reply was asked again
