"""`evalsite run` at its edges, as a user runs it (issue 12): repeats do not multiply labels,
`--only` adds up, a dry run needs no key, scripted replies are never served stale, Ctrl-C
and SIGKILL leave no run active with nobody working on it, and `latest` / `baseline`."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import launcher
from tests.helpers.cli import cli_env

ROOT = Path(__file__).resolve().parents[2]
EVALSITE = Path(sys.executable).parent / "evalsite"
DEMO = "examples/support-desk.yaml"
ACTIVE = ("queued", "running", "judging", "reporting")
KEY_NAMES = ("ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY")

SLOW_SUITE = """\
suite: slow
version: 1
models: [command/slow-a, command/slow-b]
tasks:
  - id: echo
    prompt: "Echo {{n}}"
    checks: [{contains: "ok"}]
    cases:
"""
SLOW = f"{sys.executable} -c \"import time; time.sleep(0.4); print('ok')\""

SCRIPTED_SUITE = """\
suite: scripted
version: 1
models: [scripted/a, scripted/b]
replies: replies.yaml
tasks:
  - id: t
    prompt: "Say {{w}}"
    checks: [{equals: "yes"}]
    cases: [{id: one, vars: {w: yes}}, {id: two, vars: {w: yes}}]
"""


def env_for(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in cli_env(data_dir).items() if k not in KEY_NAMES}
    env["EVALSITE_COMMAND_SLOW_A"] = SLOW
    env["EVALSITE_COMMAND_SLOW_B"] = SLOW
    return env | extra


def evalsite(data_dir: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    return launcher.run(list(args), env=env_for(data_dir, **extra), timeout=300)


def report_json(data_dir: Path, reference: str = "latest") -> dict:
    result = evalsite(data_dir, "report", reference, "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def run_status(data_dir: Path, run_id: str) -> str:
    with sqlite3.connect(data_dir / "evalsite.sqlite3", timeout=20) as db:
        return db.execute("select status from runs_run where id = ?", (run_id,)).fetchone()[0]


def slow_suite(tmp_path: Path, cases: int = 20) -> Path:
    text = SLOW_SUITE + "".join(f"      - {{id: c{i}, vars: {{n: '{i}'}}}}\n" for i in range(cases))
    path = tmp_path / "slow.yaml"
    path.write_text(text)
    return path


def start_run(data_dir: Path, suite: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [str(EVALSITE), "run", str(suite), "--concurrency", "1", *args], cwd=ROOT,
        env=env_for(data_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip


def wait_for_answers(data_dir: Path, at_least: int, timeout: float = 60) -> str:
    """The id of the running run once it has `at_least` finished answers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with sqlite3.connect(data_dir / "evalsite.sqlite3", timeout=20) as db:
                row = db.execute(
                    "select run_id, count(*) from runs_answer where status = 'done' "
                    "group by run_id order by run_id desc limit 1"
                ).fetchone()
        except sqlite3.OperationalError:
            row = None
        if row and row[1] >= at_least:
            return row[0]
        time.sleep(0.2)
    raise AssertionError("the run did not get going")


# --- repeats, --only, --dry-run ----------------------------------------------------------------


def test_repeats_do_not_multiply_the_suites_labels(tmp_path):
    once = evalsite(tmp_path, "run", DEMO, "--fake", "--max-cost", "5", "--json")
    thrice = evalsite(
        tmp_path, "run", DEMO, "--fake", "--repeats", "3", "--max-cost", "5", "--json"
    )
    assert once.returncode in (0, 1) and thrice.returncode in (0, 1), thrice.stderr
    one, three = json.loads(once.stdout)["calibration"], json.loads(thrice.stdout)["calibration"]
    labels = DEMO_LABELS
    assert one["n"] <= labels and three["n"] <= labels  # 34 of 15 before
    assert three["labels_used"]["total"] <= labels
    assert three["over_repeats"] == three["n"] and three["repeats_rule"]
    summary = evalsite(tmp_path, "report", "latest").stdout
    assert f"over {three['n']} labels" in summary or three["n"] == 0


DEMO_LABELS = len(re.findall(r"prefer:", (ROOT / DEMO).read_text()))


def test_only_is_repeatable_and_adds_up(tmp_path):
    result = evalsite(
        tmp_path, "run", DEMO, "--fake", "--dry-run", "--only", "ticket-triage/charged-twice-after-upgrade",
        "--only", "invoice-extract",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    calls = sum(int(n) for n in re.findall(r": (\d+) calls", result.stdout.split("judge")[0]))
    single = evalsite(tmp_path, "run", DEMO, "--fake", "--dry-run", "--only", "invoice-extract")
    alone = sum(int(n) for n in re.findall(r": (\d+) calls", single.stdout.split("judge")[0]))
    assert calls == alone + 2  # one case, two contestants, on top of the whole task


def test_a_dry_run_needs_no_keys_and_names_the_ones_a_real_run_needs(tmp_path):
    result = evalsite(tmp_path, "run", DEMO, "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "estimate:" in result.stdout
    line = next(line for line in result.stdout.splitlines() if line.startswith("keys"))
    assert line.count("ANTHROPIC_API_KEY") == 1 and "not set" in line
    assert "GEMINI_API_KEY" in line or "GOOGLE_API_KEY" in line
    real = evalsite(tmp_path, "run", DEMO)
    assert real.returncode == 2 and real.stderr.count("ANTHROPIC_API_KEY") == 1


def test_validate_says_which_keys_a_real_run_needs(tmp_path):
    result = evalsite(tmp_path, "validate", DEMO)
    assert result.returncode == 0, result.stderr
    assert "ANTHROPIC_API_KEY (not set" in result.stdout


# --- scripted replies are part of the request ---------------------------------------------------


def test_editing_a_scripted_reply_changes_the_next_runs_verdict_without_no_cache(tmp_path):
    (tmp_path / "suite.yaml").write_text(SCRIPTED_SUITE)
    replies = tmp_path / "replies.yaml"
    replies.write_text("a: {t/one: ['yes'], t/two: ['yes']}\nb: {t/one: ['yes'], t/two: ['yes']}\n")
    first = evalsite(tmp_path, "run", str(tmp_path / "suite.yaml"), "--json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["per_contestant"]["scripted/b"]["checks"]["pass"] == 2

    replies.write_text("a: {t/one: ['yes'], t/two: ['yes']}\nb: {t/one: ['no'], t/two: ['yes']}\n")
    second = evalsite(tmp_path, "run", str(tmp_path / "suite.yaml"), "--json")

    checks = json.loads(second.stdout)["per_contestant"]["scripted/b"]["checks"]
    assert checks["pass"] == 1  # the edited reply, not the cached one
    assert json.loads(second.stdout)["totals"]["cache_hits"] == 3


# --- interruptions -----------------------------------------------------------------------------


def test_sigint_cancels_the_run_keeps_its_answers_and_writes_a_partial_report(tmp_path):
    child = start_run(tmp_path, slow_suite(tmp_path))
    run_id = wait_for_answers(tmp_path, 2)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)

    assert child.returncode == 3, err
    assert "Traceback" not in err and "Task exception" not in err
    assert f"cancelled: run {run_id}" in err and "partial report" in err
    assert run_status(tmp_path, run_id) == "cancelled"
    report = report_json(tmp_path, run_id)
    assert report["status"] == "cancelled" and 2 <= report["totals"]["answers"] < 40


def test_sigterm_does_the_same(tmp_path):
    child = start_run(tmp_path, slow_suite(tmp_path))
    run_id = wait_for_answers(tmp_path, 1)
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 3 and "Traceback" not in err
    assert run_status(tmp_path, run_id) == "cancelled"


@pytest.mark.parametrize("cancel_first", [False, True], ids=["killed", "cancelled-then-killed"])
def test_a_sigkilled_cli_run_is_finished_or_closed_by_a_worker(tmp_path, cancel_first):
    child = start_run(tmp_path, slow_suite(tmp_path, cases=6))
    run_id = wait_for_answers(tmp_path, 1)
    if cancel_first:
        with sqlite3.connect(tmp_path / "evalsite.sqlite3", timeout=20) as db:
            db.execute("update runs_run set cancel_requested = 1 where id = ?", (run_id,))
    os.killpg(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    assert run_status(tmp_path, run_id) == "running"  # nobody is working on it now

    worker = subprocess.Popen(
        [str(EVALSITE), "worker"], cwd=ROOT, env=env_for(tmp_path, EVALSITE_CLAIM_LEASE_S="1"),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240  # a loaded machine: each call starts a python
        while run_status(tmp_path, run_id) in ACTIVE and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        os.killpg(worker.pid, signal.SIGKILL)  # how a worker stops is tested elsewhere
        _, worker_err = worker.communicate(timeout=60)
    assert run_status(tmp_path, run_id) == ("cancelled" if cancel_first else "done"), worker_err
    assert report_json(tmp_path, run_id)["run_id"] == run_id


# --- run references ----------------------------------------------------------------------------


def test_report_latest_skips_a_refused_run_and_baseline_is_the_pinned_run(tmp_path):
    done = evalsite(tmp_path, "run", DEMO, "--fake", "--json")
    first = json.loads(done.stdout)["run_id"]
    refused = evalsite(tmp_path, "run", DEMO, "--fake", "--no-cache", "--max-cost", "0.0001")
    assert refused.returncode == 4

    assert report_json(tmp_path, "latest")["run_id"] == first
    assert evalsite(tmp_path, "baseline", "set", first).returncode == 0
    assert report_json(tmp_path, "baseline")["run_id"] == first
    compared = evalsite(tmp_path, "compare", "baseline", "latest", "--json")
    assert compared.returncode == 0, compared.stderr


def test_a_run_bigger_than_its_first_answers_stores_and_answers_its_whole_plan(tmp_path):
    # `evalsite run` stores 512 answers with the run and the rest beside its first calls
    # (runs.planning.planner.start_plan): every one of 600 is answered and reported.
    cases = "".join(f"      - {{id: c{i}, vars: {{w: w{i}}}}}\n" for i in range(300))
    suite = tmp_path / "big.yaml"
    suite.write_text(
        "suite: big\nversion: 1\nmodels: [fake/small, fake/large]\n"
        "defaults: {max_tokens: 16}\n"
        f'tasks:\n  - id: t\n    prompt: "Say {{{{w}}}}"\n    cases:\n{cases}'
    )

    result = evalsite(tmp_path, "run", str(suite), "--json")

    assert result.returncode == 0, result.stderr
    run_id = json.loads(result.stdout)["run_id"]
    with sqlite3.connect(tmp_path / "evalsite.sqlite3", timeout=20) as db:
        row = db.execute(
            "select r.status, r.plan_stored_at is not null, count(a.id), sum(a.status = 'done') from runs_run r "
            "join runs_answer a on a.run_id = r.id where r.id = ?",
            (run_id,),
        ).fetchone()
    assert row == ("done", 1, 600, 600)
    assert report_json(tmp_path, run_id)["totals"]["answers"] == 600
