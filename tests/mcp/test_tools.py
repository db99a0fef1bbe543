"""`evalsite mcp` through the official SDK's stdio client, as an agent drives it: the tools,
runs that show up in the web app's database, progress, refusals that spend nothing, and no
answer text, rationale or key in any reply.

The server is another process on its own data dir; the tests read its SQLite database
directly (read-only) to see what it stored.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from evalsite.management.commands.mcp import MISSING_EXTRA
from evalsite.mcp.replies import PAGE_SIZE, failures_page, scrub
from tests.helpers.cli import sqlite_rows

ROOT = Path(__file__).resolve().parents[2]
EVALSITE = Path(sys.executable).parent / "evalsite"
CANARY = "sk-ant-canary-0123456789abcdef0123"
TOOLS = {"run_suite", "last_report", "compare", "get_run"} | {
    "render_prompt", "get_case_result", "list_runs", "set_baseline"
}  # fmt: skip
SECRET_MARKS = ("ANSWER-zq", "RATIONALE-zq", CANARY)

# A scripted suite: nothing leaves the machine. The judge agrees with every label on
# `alpha` (a calibrated headline); every candidate answer on `gamma` fails, so the run has
# 30 failures and 30 excluded pairs to page through.
ALPHA = [f"a{i}" for i in range(9)]
GAMMA = [f"g{i}" for i in range(30)]
WINNERS = ("candidate", "baseline", "tie")
SCRIPTED = """\
suite: mcp-demo
version: 1
models: [scripted/base, scripted/cand]
replies: mcp-demo.replies.yaml
limits: {{max_cost_usd: 0.50}}
judge:
  model: scripted/judge
  calibration: {{min_kappa: 0.40, min_labels: 6}}
tasks:
  - id: alpha
    prompt: "Answer {{{{q}}}}"
    cases: [{alpha}]
  - id: gamma
    prompt: "Answer {{{{q}}}}"
    cases: [{gamma}]
labels:
{labels}
"""


def _scripted_suite(folder: Path) -> Path:
    cases = {
        name: ", ".join(f"{{id: {c}, vars: {{q: '{c}'}}}}" for c in ids)
        for name, ids in (("alpha", ALPHA), ("gamma", GAMMA))
    }
    labels = "\n".join(
        f"  - {{task: alpha, case: {c}, baseline: scripted/base, candidate: scripted/cand, "
        f"prefer: {WINNERS[i % 3]}}}"
        for i, c in enumerate(ALPHA)
    )
    suite = folder / "mcp-demo.yaml"
    suite.write_text(SCRIPTED.format(labels=labels, **cases))
    shown = {"candidate": ("2", "1"), "baseline": ("1", "2"), "tie": ("tie", "tie")}
    lines = ["base:"]
    lines += [
        f"  {t}/{c}: ['BASE-ANSWER-zq {c}']"
        for t, ids in (("alpha", ALPHA), ("gamma", GAMMA))
        for c in ids
    ]
    lines += ["cand:"] + [f"  alpha/{c}: ['CAND-ANSWER-zq {c}']" for c in ALPHA]
    lines += [f"  gamma/{c}: [{{error: 'upstream refused key {CANARY} for {c}'}}]" for c in GAMMA]
    lines += ["judge:"]
    for i, c in enumerate(ALPHA):
        verdicts = [
            json.dumps({"reason": f"RATIONALE-zq {c}", "winner": w}) for w in shown[WINNERS[i % 3]]
        ]
        lines.append(f"  judge/alpha/{c}: {json.dumps(verdicts)}")
    tie = json.dumps([json.dumps({"reason": "RATIONALE-zq", "winner": "tie"})])
    lines += [f"  judge/gamma/{c}: {tie}" for c in GAMMA]  # never asked: every pair is excluded
    (folder / "mcp-demo.replies.yaml").write_text("\n".join(lines) + "\n")
    return suite


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Site:
    base = tmp_path_factory.mktemp("mcp")
    root, outside = base / "suites", base / "outside"
    root.mkdir()
    outside.mkdir()
    for name in ("support-desk.yaml", "support-desk.replies.yaml"):
        shutil.copy(ROOT / "examples" / name, root / name)
    shutil.copytree(ROOT / "examples" / "support-desk", root / "support-desk")
    _scripted_suite(root)
    (root / "broken.yaml").write_text("suite: broken\nversion: 1\ntasks: [}\n")
    shutil.copy(ROOT / "examples" / "support-desk.yaml", outside / "escaped.yaml")
    (root / "linked.yaml").symlink_to(outside / "escaped.yaml")
    return Site(base / "data", root, outside, base / "server.log")


@dataclass
class Site:
    data: Path
    root: Path
    outside: Path
    errlog: Path

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            "EVALSITE_DATA_DIR": str(self.data),
            "EVALSITE_MCP_SUITE_ROOT": str(self.root),
            "ANTHROPIC_API_KEY": CANARY,
        }
        # the server runs the code under test (a checkout first on PYTHONPATH), not whatever
        # checkout the virtualenv has installed
        for name in ("EVALSITE_UNSAFE_NO_SANDBOX", "PYTHONPATH"):
            if os.environ.get(name):
                env[name] = os.environ[name]
        return env | extra

    def rows(self, sql: str, params: tuple = ()) -> list[tuple]:
        return sqlite_rows(self.data, sql, params)

    def answers_done(self) -> int:
        return self.rows("SELECT count(*) FROM runs_answer WHERE status = 'done'")[0][0]

    def runs(self) -> int:
        return self.rows("SELECT count(*) FROM runs_run")[0][0]


@dataclass
class Reply:
    data: dict[str, Any]
    error: bool
    text: str
    progress: list[tuple[float, float | None, str | None]] = field(default_factory=list)


class Server:
    """`evalsite mcp` and a client session on it, kept open across calls. The SDK's contexts
    must be entered and left by one task, so one task on a thread's event loop holds them
    and the tests send it their calls."""

    def __init__(self, env: dict[str, str], errlog: Path):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.errlog = errlog
        self._closing = asyncio.Event()
        opened: concurrent.futures.Future = concurrent.futures.Future()
        self._served = asyncio.run_coroutine_threadsafe(self._serve(env, opened), self.loop)
        self.session, self.tools = opened.result(timeout=120)

    async def _serve(self, env: dict[str, str], opened: concurrent.futures.Future) -> None:
        # The MCP SDK, imported by the tests that talk to a server (tests/helpers/references.py).
        from mcp import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(command=str(EVALSITE), args=["mcp"], env=env, cwd=ROOT)
        try:
            with self.errlog.open("a") as errlog:
                async with (
                    stdio_client(params, errlog=errlog) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    listed = await session.list_tools()
                    opened.set_result((session, {tool.name for tool in listed.tools}))
                    await self._closing.wait()
        except BaseException as error:
            if not opened.done():
                opened.set_exception(error)
            raise

    def call(self, name: str, **arguments: Any) -> Reply:
        future = asyncio.run_coroutine_threadsafe(self._call(name, arguments), self.loop)
        return future.result(timeout=300)

    async def _call(self, name: str, arguments: dict[str, Any]) -> Reply:
        reply = Reply({}, False, "")

        async def on_progress(progress, total, message):
            reply.progress.append((progress, total, message))

        result = await self.session.call_tool(name, arguments, progress_callback=on_progress)
        reply.data, reply.error = result.structured_content, bool(result.is_error)
        reply.text = "".join(block.text for block in result.content)
        dumped = json.dumps(reply.data) + reply.text + json.dumps(reply.progress)
        assert not [mark for mark in SECRET_MARKS if mark in dumped], reply.text
        assert json.loads(reply.text) == reply.data
        return reply

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self._closing.set)
        try:
            self._served.result(timeout=60)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)


@contextlib.contextmanager
def serving(site: Site, **env: str) -> Iterator[Server]:
    server = Server(site.env(**env), site.errlog)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def server(site) -> Iterator[Server]:
    with serving(site) as server:
        yield server


def _refused(reply: Reply, reason: str) -> None:
    assert reply.error, reply.text
    assert reply.data["refused"] is True and reply.data["spent_usd"] == 0, reply.data
    assert reply.data["reason"] == reason, reply.data


# --- the tools -------------------------------------------------------------------------------


def test_the_server_lists_its_tools(server):
    assert server.tools == TOOLS


def test_a_fake_run_reports_its_summary_with_progress_and_shows_in_the_web_app(site, server):
    reply = server.call("run_suite", suite_path="support-desk.yaml", fake=True)

    summary = reply.data
    assert not reply.error and summary.get("status") == "done", summary
    assert summary["headline_eligible"] is False
    assert summary["calibration"]["status"] == "below_floor"
    assert "must not be quoted" in summary["note"]
    assert all(rate["uncalibrated"] for rate in summary["win_rates"].values())
    assert summary["gates"] == [] and summary["gates_passed"] is True  # the report's own
    # the interval's unit is the case, as on every other face (issue 27)
    assert [(rate["cases"], rate["n"]) for rate in summary["win_rates"].values()] == [(19, 19)]
    assert summary["totals"]["simulated"] is True and summary["totals"]["answers"] == 50
    assert Path(summary["report_md"]).is_file() and Path(summary["report_path"]).is_dir()
    assert summary["web_url_path"] == f"/runs/{summary['run_id']}/"
    progress = [done for done, _, _ in reply.progress]
    assert progress and progress == sorted(set(progress))
    assert reply.progress[-1][:2] == (88, 88)  # 50 answers and 38 judge calls
    ((origin, status, cap),) = site.rows(
        "SELECT v.origin, r.status, r.cap_usd FROM runs_run r "
        "JOIN runs_suiteversion v ON v.id = r.suite_version_id WHERE r.id = ?",
        (summary["run_id"],),
    )
    assert (origin, status) == ("mcp", "done")
    assert float(cap) == 1.00  # min(the suite's $1.50, EVALSITE_MCP_MAX_COST's $1.00)
    texts = site.rows("SELECT text FROM runs_answer WHERE run_id = ?", (summary["run_id"],))
    texts += site.rows(
        "SELECT rationale FROM runs_judgement WHERE run_id = ?", (summary["run_id"],)
    )
    assert not [text for (text,) in texts if len(text) > 20 and text in reply.text]


def test_a_scripted_run_is_calibrated_and_pages_its_failures(site, server):
    run = server.call("run_suite", suite_path=str(site.root / "mcp-demo.yaml"))
    last = server.call("last_report", suite_path="mcp-demo.yaml")
    summary = server.call("get_run", run_id=run.data["run_id"])
    first, second, past_end = (
        server.call("get_run", run_id=run.data["run_id"], detail="failures", page=page)
        for page in (1, 2, 3)
    )

    assert run.data.get("status") == "done", run.data
    assert run.data["headline_eligible"] is True and "note" not in run.data
    assert run.data["calibration"]["status"] == "ok"
    assert run.data["win_rates"]["scripted/cand"]["uncalibrated"] is False
    assert last.data == run.data == summary.data
    cap = site.rows("SELECT cap_usd FROM runs_run WHERE id = ?", (run.data["run_id"],))[0][0]
    assert float(cap) == 0.50  # the suite's own limit is below EVALSITE_MCP_MAX_COST
    assert first.data["failures_total"] == 30 and first.data["exclusions_total"] == 30
    assert first.data["pages"] == 2 and len(first.data["failures"]) == PAGE_SIZE
    assert len(second.data["exclusions"]) == 30 - PAGE_SIZE and past_end.data["failures"] == []
    failure = first.data["failures"][0]
    assert failure["task"] == "gamma" and failure["contestant"] == "scripted/cand"
    assert failure["message"].startswith("upstream refused key sk-[REDACTED]")
    assert first.data["calibration"]["status"] == "ok" and first.data["headline_eligible"]


def test_compare_reads_two_runs_with_their_calibration(server):
    a = server.call("run_suite", suite_path="mcp-demo.yaml", models=[]).data["run_id"]
    b = server.call("run_suite", suite_path="mcp-demo.yaml", no_cache=True).data["run_id"]

    compared = server.call("compare", run_a=a, run_b=b)
    missing = server.call("compare", run_a="no-such-run", run_b=b)

    assert compared.data["comparable"] is True
    assert (compared.data["a"], compared.data["b"]) == (a, b)
    assert compared.data["headline_eligible"] is True
    assert compared.data["calibration"]["status"] == "ok"
    assert compared.data["calibration"]["a"]["calibration"]["kappa"] == 1.0
    assert [change["name"] for change in compared.data["win_rates"]] == ["scripted/cand"]
    assert compared.data["web_url_path"] == f"/compare/?a={a}&b={b}"
    _refused(missing, "no_such_run")


def test_a_key_quoted_by_a_provider_reaches_no_reply_and_no_log(site, server):
    # Every reply is checked for the canary as it arrives (Server._call); the scripted
    # candidate's errors quote it, and the judge's key is the canary itself.
    run = server.call("run_suite", suite_path="mcp-demo.yaml")
    failures = server.call("get_run", run_id=run.data["run_id"], detail="failures")
    keyless = server.call(
        "run_suite",
        suite_path="support-desk.yaml",
        models=["anthropic/claude-haiku-4-5", "openai/gpt-4o-mini"],
    )

    assert failures.data["failures_total"] == 30
    _refused(keyless, "plan_error")
    assert "OPENAI_API_KEY" in keyless.data["message"]
    assert CANARY not in site.errlog.read_text()


# --- refusals: structured, and nothing is called or spent --------------------------------------


def test_suites_outside_the_root_are_refused_by_path_dotdot_and_symlink(site, server):
    before = (site.runs(), site.answers_done())

    replies = [
        server.call("run_suite", suite_path=str(site.outside / "escaped.yaml"), fake=True),
        server.call("run_suite", suite_path="../outside/escaped.yaml", fake=True),
        server.call("run_suite", suite_path=f"{site.root}/../outside/escaped.yaml", fake=True),
        server.call("run_suite", suite_path="linked.yaml", fake=True),
        server.call("last_report", suite_path="linked.yaml"),
    ]

    for reply in replies:
        _refused(reply, "outside_suite_root")
        assert str(site.root) in reply.data["message"]
    assert (site.runs(), site.answers_done()) == before


def test_a_max_cost_above_the_ceiling_is_refused_not_clamped(site, server):
    before = (site.runs(), site.answers_done())

    reply = server.call("run_suite", suite_path="support-desk.yaml", fake=True, max_cost=50)

    _refused(reply, "max_cost_above_ceiling")
    assert reply.data["ceiling_usd"] == "5.00"
    assert (site.runs(), site.answers_done()) == before


def test_an_estimate_over_the_cap_is_refused_before_any_call(site, server):
    before = site.answers_done()

    given = server.call("run_suite", suite_path="support-desk.yaml", fake=True, max_cost=1e-6)
    with serving(site, EVALSITE_MCP_MAX_COST="0.000001") as tight:
        configured = tight.call("run_suite", suite_path="support-desk.yaml", fake=True)

    for reply in (given, configured):
        _refused(reply, "estimate_over_cap")
        assert reply.data["cap_usd"] == "0.000001"
        assert float(reply.data["estimate_usd"]) > 0.000001
        run_id = reply.data["run_id"]
        assert site.rows("SELECT status FROM runs_run WHERE id = ?", (run_id,)) == [("refused",)]
        assert site.rows("SELECT count(*) FROM runs_answer WHERE run_id = ?", (run_id,)) == [(0,)]
    assert site.answers_done() == before
    stored = server.call("get_run", run_id=given.data["run_id"])
    assert stored.data["status"] == "refused" and stored.data["headline_eligible"] is False
    assert stored.data["calibration"] == {"status": "none"}
    assert "over the cap" in stored.data["detail"] and stored.data["totals"]["answers"] == 0


def test_bad_suites_models_arguments_and_runs_are_refused_with_their_reason(site, server):
    before = (site.runs(), site.answers_done())

    broken = server.call("run_suite", suite_path="broken.yaml", fake=True)
    missing = server.call("run_suite", suite_path="nowhere.yaml")
    unknown = server.call(
        "run_suite", suite_path="support-desk.yaml", models=["openai/gpt-nope", "fake/x"]
    )
    negative = server.call("run_suite", suite_path="support-desk.yaml", max_cost=-1)
    no_run = server.call("get_run", run_id="no-such-run")
    no_report = server.call("last_report", suite_path="broken.yaml")

    _refused(broken, "invalid_suite")
    assert "broken.yaml" in broken.data["message"]
    _refused(missing, "invalid_suite")
    _refused(unknown, "plan_error")
    assert "openai/gpt-nope" in unknown.data["message"]
    _refused(negative, "invalid_argument")
    _refused(no_run, "no_such_run")
    _refused(no_report, "invalid_suite")
    assert (site.runs(), site.answers_done()) == before


# --- reply shaping (plain functions) ----------------------------------------------------------


def test_scrub_redacts_key_shapes_and_the_servers_secret_values():
    reply = {"message": f"bad key {CANARY}", "items": [{"note": "token hunter2-secret-value"}]}

    scrubbed = scrub(reply, secrets=["hunter2-secret-value", "short"])

    assert scrubbed == {"message": "bad key sk-[REDACTED]", "items": [{"note": "token [REDACTED]"}]}


def test_a_failure_message_is_cut_to_300_characters_and_a_page_has_25_of_each_list():
    failures = [{"task": "t", "case": f"c{i}", "message": "x" * 1000} for i in range(26)]

    page = failures_page(failures, [], page=2)

    assert (page["pages"], page["failures_total"], page["exclusions_total"]) == (2, 26, 0)
    assert [item["case"] for item in page["failures"]] == ["c25"]
    assert len(page["failures"][0]["message"]) == 300 and page["failures"][0]["kind"] == "error"


# --- the process ---------------------------------------------------------------------------


def test_stdout_carries_only_the_protocol_even_on_a_first_start(tmp_path):
    from mcp_types.version import LATEST_HANDSHAKE_VERSION

    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": LATEST_HANDSHAKE_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "EVALSITE_DATA_DIR": str(tmp_path / "fresh"),
        "EVALSITE_MCP_SUITE_ROOT": str(tmp_path),
    }

    # stdin stays open until both replies are in: closing it at once can end the session
    # before the second request is answered
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as stderr:
        # unbuffered bytes: a reply already read into a buffer would never wake `select`
        server = subprocess.Popen(
            [str(EVALSITE), "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            bufsize=0,
            env=env,
            cwd=ROOT,
        )
        server.stdin.write("".join(json.dumps(m) + "\n" for m in messages).encode())
        replies = [_line_within(server, 120), _line_within(server, 120)]
        server.stdin.close()
        rest = server.stdout.read().decode()
        server.wait(timeout=120)
    done = subprocess.CompletedProcess(
        server.args, server.returncode, "".join(replies) + rest, errors.read_text()
    )

    lines = done.stdout.splitlines()
    assert [json.loads(line)["jsonrpc"] for line in lines] == ["2.0", "2.0"], done.stderr
    assert {tool["name"] for tool in json.loads(lines[1])["result"]["tools"]} == TOOLS


def _line_within(server: subprocess.Popen, seconds: float) -> str:
    """The server's next line of stdout; fails (and stops it) rather than hang."""
    ready, _, _ = select.select([server.stdout], [], [], seconds)
    if not ready:
        server.kill()
        pytest.fail(f"no reply from `evalsite mcp` within {seconds:g} s")
    return server.stdout.readline().decode()


def test_without_the_mcp_package_the_command_says_which_extra_to_install(tmp_path):
    hide_the_sdk = (
        "import sys; sys.modules['mcp'] = None; from evalsite.console import main; main(['mcp'])"
    )

    done = subprocess.run(
        [sys.executable, "-c", hide_the_sdk],
        capture_output=True,
        text=True,
        env=os.environ | {"EVALSITE_DATA_DIR": str(tmp_path)},
        cwd=ROOT,
        timeout=60,
    )

    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == f"error: {MISSING_EXTRA}" and done.stdout == ""
