"""Issue 28 item 3: MCP's `run_suite`, `get_run` and `last_report` return the summary the
CLI's `--json` prints (one builder, report.json), with the gate verdicts: the matrix, the
scorecard, pass^k, per-tag rates and `gates` / `gates_passed` are the same figures.

The server, its data dir and the reply checks (no answer text, rationale or key in any
reply) are tests/mcp/test_tools.py's; this module adds its own suite to the suite root.
"""

from __future__ import annotations

import json

from tests.helpers.cli import evalsite
from tests.mcp import test_tools
from tests.mcp.test_tools import serving

site = test_tools.site  # the fixture: the data dir and suite root of tests/mcp/test_tools.py

# Two fake contestants, three repeats, a tag, a scorecard and three gates that fail; the
# same run from the CLI exits 1 on them.
GATED = """\
suite: gated-demo
version: 1
models: [fake/small, fake/large]
repeats: 3
tasks:
  - id: greet
    prompt: "Say hello to {{who}}."
    cases:
      - {id: one, tags: [polite], vars: {who: Ada}, checks: [{contains: "zzz-never"}]}
      - {id: two, tags: [polite], vars: {who: Grace}, checks: [{contains: "zzz-never"}]}
scorecard:
  - {criterion: checked, weight: 1, scorer: checks}
gate:
  min_score: 0.9
  min_pass_all_rate: 1.0
  min_check_pass_rate: 0.5
"""


def test_mcp_returns_the_clis_json_summary_with_the_gate_verdicts(site):
    (site.root / "gated-demo.yaml").write_text(GATED)
    cli = evalsite(site.data, "run", str(site.root / "gated-demo.yaml"), "--fake", "--json")
    assert cli.returncode == 1, cli.stderr
    printed = json.loads(cli.stdout)

    with serving(site) as server:
        ran = server.call("run_suite", suite_path="gated-demo.yaml", fake=True)
        got = server.call("get_run", run_id=printed["run_id"])
        last = server.call("last_report", suite_path="gated-demo.yaml")
    reported = json.loads(evalsite(site.data, "report", ran.data["run_id"], "--json").stdout)

    assert not ran.error and ran.data["status"] == "done", ran.data
    assert {key: got.data[key] for key in printed} == printed  # the same object, every key
    assert {key: ran.data[key] for key in reported} == reported
    assert last.data == ran.data
    summary = ran.data
    assert summary["gates_passed"] is False
    failed = {(g["gate"], g["subject"]) for g in summary["gates"] if g["status"] == "failed"}
    assert {gate for gate, _ in failed} == {"min_score", "min_pass_all_rate", "min_check_pass_rate"}
    assert summary["matrix"]["cells"] and summary["scorecard"]["criteria"]
    assert summary["per_contestant"]["fake/large"]["pass_k"]["k"] == 3
    assert [tag["tag"] for tag in summary["per_tag"]] == ["polite"]
    assert summary["web_url_path"] == f"/runs/{summary['run_id']}/"
    assert summary["report_md"].endswith("/report.md")
