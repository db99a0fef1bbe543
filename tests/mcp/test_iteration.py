"""The MCP iteration verbs through the official SDK's stdio client, as an agent drives
them: `render_prompt` (the exact request, nothing called), `get_case_result` (verdicts and
where to read the answers, never their text), `list_runs` and `set_baseline`, with the
same refusals, scrubbing and calibration status as the first four tools.

The server, its data dir and the reply checks (no answer text, rationale or key in any
reply) are tests/mcp/test_tools.py's; this module adds its own suites to the suite root.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import launcher
from tests.helpers.engine import LocalServer
from tests.mcp import test_tools
from tests.mcp.test_tools import CANARY, TOOLS, Server, Site, _refused, serving

site = test_tools.site  # the fixture: the data dir and suite root of tests/mcp/test_tools.py

NEW_TOOLS = {"render_prompt", "get_case_result", "list_runs", "set_baseline"}

# greet/ada has one check of each note kind: `equals` quotes the answer in its note, the
# others only the suite. greet/bob's candidate fails quoting a key. A case id `ada` in two
# tasks makes the bare id ambiguous.
ITER = """\
suite: iter-demo
version: 1
models: [scripted/base, scripted/cand]
replies: iter-demo.replies.yaml
defaults: {temperature: 0.2, max_tokens: 120}
variants:
  terse: {system: "Be terse."}
judge:
  model: scripted/judge
tasks:
  - id: greet
    system: "You greet people."
    prompt: "Greet {{name}} warmly."
    cases:
      - id: ada
        vars: {name: Ada}
        checks:
          - equals: "Hello Ada"
          - contains: "warm"
          - max_chars: 10
          - contains: "Ada"
      - id: bob
        vars: {name: Bob}
  - id: echo
    prompt: "Repeat {{word}}."
    cases: [{id: ada, vars: {word: lovelace}}]
"""
ITER_REPLIES = f"""\
base:
  greet/ada: ['Hi Ada, BASE-ANSWER-zq']
  greet/bob: ['Hi Bob, BASE-ANSWER-zq']
  echo/ada: ['lovelace BASE-ANSWER-zq']
cand:
  greet/ada: ['Hello there Ada, CAND-ANSWER-zq']
  greet/bob: [{{error: 'upstream refused key {CANARY}'}}]
  echo/ada: ['lovelace CAND-ANSWER-zq']
judge:
  judge/greet/ada: ['{{"reason": "RATIONALE-zq", "winner": "2"}}', '{{"reason": "RATIONALE-zq", "winner": "1"}}']
  judge/greet/bob: ['{{"reason": "RATIONALE-zq", "winner": "tie"}}']
  judge/echo/ada: ['{{"reason": "RATIONALE-zq", "winner": "tie"}}', '{{"reason": "RATIONALE-zq", "winner": "tie"}}']
"""
# A command model and a model on an HTTP endpoint, each of which leaves a trace when called.
PROBE = """\
suite: probe
version: 1
models: [command/probe, mock/a]
tasks:
  - id: ping
    prompt: "Say {{word}}"
    cases: [{id: one, vars: {word: pong}}]
"""
ENDPOINT = """
from runs.models import Endpoint, Price, PriceTable
from runs.setup import prepare_database

prepare_database()
Endpoint.objects.create(name="mock", base_url={url!r})
Price.objects.create(table=PriceTable.objects.current(), model="mock/a", input_per_mtok=1, output_per_mtok=1)
"""


@pytest.fixture(scope="module")
def endpoint() -> Iterator[LocalServer]:
    with LocalServer(latency=0) as http:
        yield http


@pytest.fixture(scope="module")
def marker(site: Site) -> Path:
    return site.data.parent / "probe-called"


@pytest.fixture(scope="module")
def server(site: Site, endpoint: LocalServer, marker: Path) -> Iterator[Server]:
    (site.root / "iter-demo.yaml").write_text(ITER)
    (site.root / "iter-demo.replies.yaml").write_text(ITER_REPLIES)
    (site.root / "probe.yaml").write_text(PROBE)
    done = launcher.run(["shell", "-c", ENDPOINT.format(url=endpoint.url)], env=site.env())
    assert done.returncode == 0, done.stderr
    probe = f"sh -c 'echo called >> {marker}; echo pong'"
    with serving(site, EVALSITE_COMMAND_PROBE=probe) as server:
        yield server


@pytest.fixture(scope="module")
def iter_run(server: Server) -> dict:
    reply = server.call("run_suite", suite_path="iter-demo.yaml")
    assert reply.data.get("status") == "done", reply.data
    return reply.data


@pytest.fixture(scope="module")
def refused_run(server: Server) -> dict:
    """A run stored as refused (its estimate is over the cap): it has no report."""
    reply = server.call("run_suite", suite_path="support-desk.yaml", fake=True, max_cost=1e-6)
    _refused(reply, "estimate_over_cap")
    return reply.data


def _stored(site: Site) -> tuple[int, ...]:
    """What a call that makes, registers or stores anything would change."""
    counts = site.rows(
        "SELECT (SELECT count(*) FROM runs_run), (SELECT count(*) FROM runs_answer), "
        "(SELECT count(*) FROM runs_judgement), (SELECT count(*) FROM runs_suiteversion), "
        "(SELECT count(*) FROM runs_cachedresponse)"
    )
    return counts[0]


def test_the_server_lists_the_iteration_tools_beside_the_four(server):
    assert NEW_TOOLS < server.tools == TOOLS


# --- render_prompt -------------------------------------------------------------------------


def test_render_prompt_shows_the_variants_system_the_rendered_case_and_the_params(server):
    reply = server.call(
        "render_prompt",
        suite_path="support-desk.yaml",
        contestant="anthropic/claude-haiku-4-5@concise",
        case="charged-twice-after-upgrade",
    )

    data = reply.data
    assert not reply.error, data
    assert (data["task"], data["case"]) == ("ticket-triage", "charged-twice-after-upgrade")
    assert data["contestant"] == "anthropic/claude-haiku-4-5@concise"
    assert data["system"] == "Answer in as few words as will do."
    assert [m["role"] for m in data["messages"]] == ["user"]
    assert "Marta, finance at Orchard Labs" in data["messages"][0]["content"]
    assert "{{" not in data["messages"][0]["content"]
    assert data["params"] == {
        "temperature": 0,
        "max_tokens": 700,
        "top_p": None,
        "stop": [],
        "timeout_s": 60,
    }
    assert data["schema"]["required"] == ["category", "severity", "needs_human", "summary"]
    assert data["key"] == {"name": "ANTHROPIC_API_KEY", "set": True}
    assert data["called"] is False and data["spent_usd"] == 0


def test_render_prompt_is_the_request_a_run_stores_and_hashes(site, server, iter_run):
    rendered = server.call(
        "render_prompt", suite_path="iter-demo.yaml", contestant="scripted/cand", case="greet/ada"
    ).data
    terse = server.call(
        "render_prompt", suite_path="iter-demo.yaml", contestant="scripted/cand@terse", case="bob"
    ).data

    ((stored, digest),) = site.rows(
        "SELECT request, request_hash FROM runs_answer WHERE run_id = ? AND task_id = 'greet' "
        "AND case_id = 'ada' AND contestant = 'scripted/cand'",
        (iter_run["run_id"],),
    )
    request = json.loads(stored)
    assert [{"role": "system", "content": rendered["system"]}, *rendered["messages"]] == (
        request["messages"]
    )
    assert rendered["params"] == {key: request[key] for key in rendered["params"]}
    assert rendered["request_hash"] == digest
    assert rendered["messages"] == [{"role": "user", "content": "Greet Ada warmly."}]
    assert (rendered["system"], rendered["params"]["temperature"]) == ("You greet people.", 0.2)
    assert terse["system"] == "Be terse." and terse["case"] == "bob"
    assert rendered["key"] is None


def test_render_prompt_makes_no_call_and_stores_nothing(site, server, endpoint, marker):
    before = _stored(site)

    command = server.call(
        "render_prompt", suite_path="probe.yaml", contestant="command/probe", case="one"
    )
    http = server.call("render_prompt", suite_path="probe.yaml", contestant="mock/a", case="one")

    assert not command.error and not http.error, (command.data, http.data)
    assert http.data["messages"] == [{"role": "user", "content": "Say pong"}]
    assert http.data["cached"] is False and command.data["cached"] is False
    assert endpoint.calls == [] and not marker.exists()
    assert _stored(site) == before
    # the same contestants in a run do call, so the traces above would have shown a call
    ran = server.call("run_suite", suite_path="probe.yaml")
    assert ran.data.get("status") == "done", ran.data
    assert len(endpoint.calls) == 1 and marker.read_text() == "called\n"


def test_render_prompt_refuses_what_a_run_would_refuse_and_stores_nothing(site, server):
    before = _stored(site)

    def render(suite_path="iter-demo.yaml", contestant="scripted/base", case="greet/ada"):
        return server.call("render_prompt", suite_path=suite_path, contestant=contestant, case=case)

    refusals = {
        "unknown case": (render(case="greet/nobody"), "no_such_case", "no case 'nobody'"),
        "unknown task": (render(case="shout/ada"), "no_such_case", "no task 'shout'"),
        "ambiguous": (render(case="ada"), "no_such_case", "greet, echo"),
        "unknown model": (
            render(
                suite_path="support-desk.yaml",
                contestant="openai/gpt-nope",
                case="ticket-triage/charged-twice-after-upgrade",
            ),
            "plan_error",
            "unknown model 'openai/gpt-nope'",
        ),
        "unknown variant": (render(contestant="scripted/base@tersee"), "plan_error", "'@terse'"),
        "not a contestant": (render(contestant="nothing"), "plan_error", "not a contestant"),
        "broken suite": (render(suite_path="broken.yaml"), "invalid_suite", "broken.yaml"),
        "outside": (render(suite_path="linked.yaml"), "outside_suite_root", str(site.root)),
    }

    for name, (reply, reason, words) in refusals.items():
        _refused(reply, reason)
        assert words in reply.data["message"], (name, reply.data)
    assert _stored(site) == before


# --- get_case_result -----------------------------------------------------------------------


def test_a_case_result_gives_each_verdict_and_where_to_read_the_answer(site, server, iter_run):
    run_id = iter_run["run_id"]

    base = server.call(
        "get_case_result", run_id=run_id, contestant="scripted/base", case="greet/ada"
    )
    cand = server.call(
        "get_case_result", run_id=run_id, contestant="scripted/cand", case="greet/ada"
    )

    data = base.data
    assert not base.error, data
    assert (data["run_id"], data["task"], data["case"]) == (run_id, "greet", "ada")
    assert data["headline_eligible"] is False and data["calibration"]["status"]
    (answer,) = data["answers"]
    assert answer["status"] == "done" and answer["passed"] is False
    assert answer["checks"]["passed"] is False
    assert [(c["kind"], c["passed"]) for c in answer["checks"]["results"]] == [
        ("equals", False),
        ("contains", False),
        ("max_chars", False),
        ("contains", True),
    ]
    notes = [check["note"] for check in answer["checks"]["results"]]
    assert notes == [
        None,
        "does not contain 'warm'",
        "22 characters, more than the maximum of 10",
        None,
    ]
    assert answer["schema"]["verdict"] == "not_applicable" and answer["error"] is None
    (pair,) = data["pairs"]
    assert (pair["role"], pair["opponent"], pair["winner"], pair["outcome"]) == (
        "baseline",
        "scripted/cand",
        "candidate",
        "loss",
    )
    assert [(call["order"], call["side"]) for call in pair["judge_calls"]] == [
        (1, "candidate"),
        (2, "candidate"),
    ]
    assert (
        cand.data["pairs"][0]["outcome"] == "win" and cand.data["pairs"][0]["role"] == "candidate"
    )
    pair_id = site.rows(
        "SELECT id FROM runs_pair WHERE run_id = ? AND task_id = 'greet' AND case_id = 'ada'",
        (run_id,),
    )[0][0]
    assert pair["web_url_path"] == f"/runs/{run_id}/pairs/{pair_id}/"
    assert (
        data["answers_url_path"] == f"/runs/{run_id}/answers/?task=greet&contestant=scripted%2Fbase"
    )
    assert (
        Path(data["answers_file"]).is_file()
        and "BASE-ANSWER-zq" in Path(data["answers_file"]).read_text()
    )


def test_a_failed_answer_shows_its_error_redacted_and_its_pair_excluded(server, iter_run):
    reply = server.call(
        "get_case_result", run_id=iter_run["run_id"], contestant="scripted/cand", case="bob"
    )

    (answer,) = reply.data["answers"]
    assert answer["status"] == "error" and answer["error"]["kind"]
    assert answer["error"]["message"].startswith("upstream refused key sk-[REDACTED]")
    (pair,) = reply.data["pairs"]
    assert pair["excluded"] and pair["outcome"] is None and pair["judge_calls"] == []


def test_get_case_result_refuses_unknown_runs_contestants_and_cases(server, iter_run):
    run_id = iter_run["run_id"]

    def result(run=run_id, contestant="scripted/base", case="greet/ada"):
        return server.call("get_case_result", run_id=run, contestant=contestant, case=case)

    for reply, reason, words in (
        (result(run="no-such-run"), "no_such_run", "no-such-run"),
        (result(contestant="scripted/other"), "no_such_case", "not a contestant of run"),
        (result(case="greet/carol"), "no_such_case", "no case 'carol'"),
        (result(case="ada"), "no_such_case", "several tasks"),
    ):
        _refused(reply, reason)
        assert words in reply.data["message"], reply.data


# --- list_runs and set_baseline -------------------------------------------------------------


def test_list_runs_is_newest_first_with_win_rates_or_the_refusal_and_cost(
    site, server, iter_run, refused_run
):
    later = server.call("run_suite", suite_path="iter-demo.yaml", no_cache=True).data

    by_name = server.call("list_runs", suite="iter-demo").data
    by_file = server.call("list_runs", suite="iter-demo.yaml").data
    one = server.call("list_runs", limit=1).data
    refused = server.call("list_runs", suite="support-desk", limit=1).data

    assert [row["run_id"] for row in by_name["runs"]][:2] == [later["run_id"], iter_run["run_id"]]
    assert by_file == by_name and by_name["suite"] == "iter-demo"
    assert len(by_name["runs"]) == _runs_of(site, "iter-demo") and by_name["more"] is False
    done = by_name["runs"][1]
    assert done["status"] == "done" and done["refusal"] is None
    assert done["contestants"] == ["scripted/base", "scripted/cand"]
    assert set(done["headline"]) == {"scripted/cand"}
    assert done["headline"]["scripted/cand"]["uncalibrated"] is True
    assert done["headline_eligible"] is False and done["calibration"]["status"]
    assert done["cost_usd"] == "0" and done["simulated"] is False
    assert done["web_url_path"] == f"/runs/{done['run_id']}/"
    assert one["runs"][0]["run_id"] == later["run_id"] and one["more"] is True
    (row,) = refused["runs"]
    assert row["run_id"] == refused_run["run_id"] and row["status"] == "refused"
    assert "over the cap" in row["refusal"] and row["headline"] is None


def _runs_of(site: Site, suite: str) -> int:
    return site.rows(
        "SELECT count(*) FROM runs_run r JOIN runs_suiteversion v ON v.id = r.suite_version_id "
        "JOIN runs_suite s ON s.id = v.suite_id WHERE s.name = ?",
        (suite,),
    )[0][0]


def test_list_runs_refuses_an_unknown_suite_and_one_outside_the_root(site, server):
    unknown = server.call("list_runs", suite="no-such-suite")
    outside = server.call("list_runs", suite="linked.yaml")

    _refused(unknown, "no_such_suite")
    _refused(outside, "outside_suite_root")


def test_set_baseline_pins_a_run_with_a_report_and_names_the_previous_pin(site, server, iter_run):
    again = server.call("run_suite", suite_path="iter-demo.yaml").data["run_id"]

    first = server.call("set_baseline", run_id=iter_run["run_id"])
    second = server.call("set_baseline", run_id=again)

    assert not first.error, first.data
    assert first.data["baseline"]["run_id"] == iter_run["run_id"]
    assert second.data["baseline"] == {
        "suite": "iter-demo",
        "run_id": again,
        "previous_run_id": iter_run["run_id"],
    }
    assert second.data["headline_eligible"] is False and "calibration" in second.data
    pinned = site.rows("SELECT baseline_run_id FROM runs_suite WHERE name = 'iter-demo'")
    assert pinned == [(again,)]
    assert server.call("get_run", run_id="baseline").data["run_id"] == again


def test_set_baseline_refuses_a_run_without_a_report_and_keeps_the_pin(site, server, refused_run):
    refused = refused_run
    before = site.rows("SELECT baseline_run_id FROM runs_suite WHERE name = 'iter-demo'")

    no_report = server.call("set_baseline", run_id=refused["run_id"])
    missing = server.call("set_baseline", run_id="no-such-run")

    _refused(no_report, "no_report")
    assert no_report.data["run_id"] == refused["run_id"]
    _refused(missing, "no_such_run")
    assert site.rows("SELECT baseline_run_id FROM runs_suite WHERE name = 'iter-demo'") == before
