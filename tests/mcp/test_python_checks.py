"""`python:` checks in suites registered over MCP (SPEC §7.2, §14): an MCP suite is a
filesystem suite, so its python checks run, from the suite's folder inside the MCP suite
root; the same file run first over MCP and then by the CLI (or the other way round) is one
suite version, and both runs end done with the check's verdicts; a check that cannot be
imported is refused before anything is spent; an uploaded suite never gets one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import override_settings

from evalsite.core.suites import SuiteError, parse_suite
from evalsite.mcp import tools
from runs.engine.runner import execute
from runs.models import Answer, PriceTable, Run, SuiteVersion

pytestmark = pytest.mark.django_db(transaction=True)

SUITE = """\
suite: {name}
version: 1
models: [scripted/good, scripted/bad]
replies: {name}.replies.yaml
tasks:
  - id: greet
    prompt: "Greet {{{{who}}}}"
    checks: [{{python: "{module}:names_them"}}]
    cases: [{{id: one, vars: {{who: Ada}}}}, {{id: two, vars: {{who: Grace}}}}]
"""
REPLIES = """\
good:
  greet/one: ["Hello Ada!"]
  greet/two: ["Hello Grace!"]
bad:
  greet/one: ["Hello you."]
  greet/two: ["Hi there."]
"""
MODULE = """\
def names_them(answer, case_vars):
    if case_vars["who"] in answer:
        return True
    return False, "never names " + case_vars["who"]
"""
VERDICTS = {
    ("scripted/good", "one"): (True, None),
    ("scripted/good", "two"): (True, None),
    ("scripted/bad", "one"): (False, "never names Ada"),
    ("scripted/bad", "two"): (False, "never names Grace"),
}


@pytest.fixture
def root(tmp_path) -> Path:
    PriceTable.objects.ensure_default()
    folder = tmp_path / "mcp-root"
    folder.mkdir()
    with override_settings(EVALSITE_MCP_SUITE_ROOT=folder):
        yield folder


def _suite(root: Path, name: str, *, module: str | None = None) -> Path:
    """A suite in its own folder of the root, with its replies and (unless `module` names
    one that is not there) its python check module beside it; the module's name is unique
    to the test, since an imported module stays imported for the process."""
    folder = root / name
    folder.mkdir()
    module = module or f"check_{name.replace('-', '_')}"
    (folder / f"{name}.replies.yaml").write_text(REPLIES)
    if module.startswith("check_"):
        (folder / f"{module}.py").write_text(MODULE)
    path = folder / f"{name}.yaml"
    path.write_text(SUITE.format(name=name, module=module))
    return path


@pytest.fixture(autouse=True)
def _forget_check_modules():
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith("check_"):
            del sys.modules[name]


def _mcp_run(path: Path) -> Run:
    started, rest = tools.start_run(str(path.relative_to(path.parents[1])), [])
    assert rest is None  # a plan this small is stored whole at once
    return execute(started.id)


def _cli_run(path: Path) -> Run:
    with pytest.raises(SystemExit) as exited:
        call_command("run", str(path), "--json")
    assert exited.value.code == 0
    return Run.objects.order_by("-created_at").first()


def _verdicts(run: Run) -> dict:
    answers = Answer.objects.filter(run=run)
    return {
        (a.contestant, a.case_id): (a.checks_passed, a.checks["note"])
        for a in answers
        if a.checks["results"]
        == [{"kind": "python", "passed": a.checks_passed, "note": a.checks["note"]}]  # fmt: skip
    }


def test_a_suite_registered_over_mcp_runs_its_python_check_and_a_later_cli_run_does_too(root):
    path = _suite(root, "mcp-first")

    over_mcp = _mcp_run(path)
    assert over_mcp.status == Run.Status.DONE, over_mcp.detail
    assert _verdicts(over_mcp) == VERDICTS

    by_cli = _cli_run(path)
    assert by_cli.suite_version_id == over_mcp.suite_version_id  # same bytes, one version
    assert by_cli.suite_version.origin == SuiteVersion.Origin.MCP
    assert by_cli.status == Run.Status.DONE, by_cli.detail
    assert _verdicts(by_cli) == VERDICTS


def test_a_suite_first_run_by_the_cli_runs_its_python_check_over_mcp_too(root):
    path = _suite(root, "cli-first")

    by_cli = _cli_run(path)
    assert by_cli.status == Run.Status.DONE, by_cli.detail
    assert _verdicts(by_cli) == VERDICTS

    over_mcp = _mcp_run(path)
    assert over_mcp.suite_version_id == by_cli.suite_version_id
    assert over_mcp.status == Run.Status.DONE, over_mcp.detail
    assert _verdicts(over_mcp) == VERDICTS


def test_over_mcp_a_python_check_that_cannot_be_imported_is_refused_before_any_run(root):
    missing = _suite(root, "no-module", module="nowhere_to_be_found")
    with pytest.raises(tools.Refused) as refused:
        tools.start_run("no-module/no-module.yaml", [])
    reply = refused.value.reply
    assert reply["reason"] == "invalid_suite" and reply["spent_usd"] == 0
    assert "tasks[0].checks[0].python" in reply["message"]
    assert "nowhere_to_be_found:names_them" in reply["message"]
    assert "ModuleNotFoundError" in reply["message"]
    assert not Run.objects.exists() and not Answer.objects.exists()

    no_function = _suite(root, "no-function")
    module = no_function.parent / "check_no_function.py"
    module.write_text("def something_else(answer, case_vars):\n    return True\n")
    with pytest.raises(tools.Refused) as refused:
        tools.start_run("no-function/no-function.yaml", [])
    assert "has no function 'names_them'" in refused.value.reply["message"]
    assert not Run.objects.exists()
    assert missing.exists()


def test_an_uploaded_suite_with_a_python_check_is_a_validation_error_at_its_line():
    text = SUITE.format(name="uploaded", module="check_uploaded")
    with pytest.raises(SuiteError) as error:
        parse_suite(text.encode(), filename="uploaded.yaml", origin="upload")
    shown = [str(problem) for problem in error.value.problems]
    assert any(
        line.startswith("uploaded.yaml:8: tasks[0].checks[0].python:") and "not in uploaded" in line
        for line in shown
    ), shown
