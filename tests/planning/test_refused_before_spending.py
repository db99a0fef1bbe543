"""One preparation of a run (runs.planning.start): every refusal an entry point makes before
spending, `evalsite validate` makes too. A suite whose `python:` check module is not there
validates with an error naming the check, and `evalsite run` refuses it before anything is
stored or spent, as MCP does (issue 28 item 8)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

import runs.engine.sandbox
from evalsite.core.scoring.sandbox import NoSandbox, SandboxUnavailable
from runs.models import Answer, PriceTable, Run
from runs.planning import validation
from tests.helpers.factories import run_command

pytestmark = pytest.mark.django_db

SUITE = """\
suite: {name}
version: 1
models: [scripted/good]
replies: {name}.replies.yaml
tasks:
  - id: greet
    prompt: "Greet {{{{who}}}}"
    cases:
      - id: one
        vars: {{who: Ada}}
        checks: [{{python: "{module}:names_them"}}]
"""
REPLIES = "good:\n  greet/one: ['Hello Ada!']\n"


def _suite(folder: Path, name: str, module: str) -> Path:
    (folder / f"{name}.replies.yaml").write_text(REPLIES)
    path = folder / f"{name}.yaml"
    path.write_text(SUITE.format(name=name, module=module))
    return path


def test_validate_refuses_a_python_check_whose_module_is_not_there(tmp_path):
    PriceTable.objects.ensure_default()
    path = _suite(tmp_path, "no-module", "nowhere_to_be_found_h5")
    code, out, err = run_command("validate", str(path))
    assert code == 2, out + err
    assert "cases[0].checks[0].python" in err
    assert "nowhere_to_be_found_h5:names_them" in err
    code, out, _ = run_command("validate", str(path), "--json")
    outcome = json.loads(out)
    assert code == 2 and not outcome["ok"]
    assert any("nowhere_to_be_found_h5" in error for error in outcome["errors"])


def test_validate_accepts_the_same_suite_once_its_module_is_there(tmp_path):
    PriceTable.objects.ensure_default()
    path = _suite(tmp_path, "with-module", "check_with_module_h5")
    (tmp_path / "check_with_module_h5.py").write_text(
        "def names_them(answer, case_vars):\n    return case_vars['who'] in answer\n"
    )
    code, out, err = run_command("validate", str(path))
    assert code == 0, out + err
    assert out.splitlines()[-1].startswith("ok: ")


@pytest.mark.django_db(transaction=True)  # without the fix, the run executes on a thread
def test_run_refuses_a_missing_python_check_module_before_spending(tmp_path):
    PriceTable.objects.ensure_default()
    path = _suite(tmp_path, "run-no-module", "nowhere_either_h5")
    code, out, err = run_command("run", str(path), "--fake")
    assert code == 2, out + err
    assert "nowhere_either_h5:names_them" in err
    assert not Run.objects.exists() and not Answer.objects.exists()


CHECKED = """\
suite: checked
version: 1
models: [fake/small]
tasks:
  - id: code
    prompt: "Write {{what}}"
    check: {run: "true"}
    cases: [{id: one, vars: {what: code}}]
"""


@pytest.mark.django_db(transaction=True)  # without the fix, the run executes on a thread
def test_without_a_sandbox_a_dry_run_estimates_and_validate_warns_while_run_refuses(
    tmp_path, monkeypatch
):
    """A dry run makes no call and runs no check, as it needs no key: the missing sandbox
    is said, not refused; validate says it too; the real run refuses before spending."""
    import runs.planning.planner

    monkeypatch.setattr(runs.planning.planner, "sandbox_or_none", lambda: None)
    PriceTable.objects.ensure_default()
    path = tmp_path / "checked.yaml"
    path.write_text(CHECKED)
    code, out, err = run_command("run", str(path), "--dry-run")
    assert code == 0, out + err
    assert out.startswith("estimate")
    assert "note: this run has execution checks and no sandbox is available" in out
    code, out, err = run_command("validate", str(path))
    assert code == 0, out + err
    assert "warning: this run has execution checks and no sandbox is available" in err
    code, out, err = run_command("run", str(path), "--fake")
    assert code == 2
    assert "error: this run has execution checks and no sandbox is available" in err
    assert not Run.objects.exists()


def test_validate_refuses_what_the_plan_of_the_suites_own_run_refuses(tmp_path):
    """A scripted contestant with no reply for a case: `run` refuses it before spending,
    so validate does, by planning the suite's own run (a dry run: nothing stored)."""
    PriceTable.objects.ensure_default()
    path = _suite(tmp_path, "short-replies", "check_short_replies_h5")
    (tmp_path / "check_short_replies_h5.py").write_text(
        "def names_them(answer, case_vars):\n    return True\n"
    )
    (tmp_path / "short-replies.replies.yaml").write_text("good:\n  greet/other: ['Hi']\n")
    code, out, err = run_command("validate", str(path))
    assert code == 2, out + err
    assert "has no reply for scripted/good on: greet/one" in err
    assert not Run.objects.exists()


# --- the sandbox is probed once a validation (issue 31) ---------------------------------------
# validate asks twice whether the checks can run: for its warning, and again in its dry-run
# plan. Each probe of bubblewrap starts a job (about 60 ms), so a validation probes once and
# both answers are that probe's. Outside a validation each ask probes again, as a server or a
# worker always has.

NO_SANDBOX = "this run has execution checks and no sandbox is available"


@pytest.fixture
def probes(monkeypatch) -> list[str]:
    """The thread each probe was made on; every probe finds no bubblewrap."""
    made: list[str] = []

    def probe(opt_out: bool):
        made.append(threading.current_thread().name)
        raise SandboxUnavailable("bubblewrap is not usable here")

    monkeypatch.setattr(runs.engine.sandbox, "detect_sandbox", probe)
    return made


def validated_without_a_sandbox(folder: Path) -> dict:
    PriceTable.objects.ensure_default()
    path = folder / "checked.yaml"
    path.write_text(CHECKED)
    outcome = validation.validate(str(path))
    assert outcome["ok"], outcome["errors"]
    assert [w for w in outcome["warnings"] if NO_SANDBOX in w] != []
    return outcome


def test_validate_probes_the_sandbox_once_for_its_warning_and_its_plan(tmp_path, probes):
    validated_without_a_sandbox(tmp_path)

    assert len(probes) == 1


def test_outside_a_validation_each_ask_probes_again(probes):
    assert runs.engine.sandbox.sandbox_or_none() is None
    assert runs.engine.sandbox.sandbox_or_none() is None
    assert len(probes) == 2


def test_one_probe_answers_the_same_until_its_block_ends(probes):
    with runs.engine.sandbox.one_sandbox_probe():
        assert runs.engine.sandbox.sandbox_or_none() is None
        assert runs.engine.sandbox.sandbox_or_none() is None
        assert len(probes) == 1
    assert runs.engine.sandbox.sandbox_or_none() is None
    assert len(probes) == 2


def test_validate_probes_on_a_thread_of_its_own_beside_its_other_checks(
    tmp_path, probes, monkeypatch
):
    """The probe is a job in bubblewrap, mostly waiting on the kernel: it is started as soon
    as the suite is read, and the models, files and plan are checked beside it."""

    def prepare_database():  # the first of the other checks: goes on once the probe is made
        waited = time.monotonic() + 10
        while not probes and time.monotonic() < waited:
            time.sleep(0.005)

    monkeypatch.setattr(validation, "prepare_database", prepare_database)

    validated_without_a_sandbox(tmp_path)

    assert probes == ["sandbox-probe"]


@pytest.mark.django_db(transaction=True)  # the run executes on a thread
def test_a_run_probes_the_sandbox_once_for_its_plan_and_its_scoring(tmp_path, monkeypatch):
    """Planning asks whether the checks can run, then scoring asks for the sandbox to run
    them in, on the run's own thread: both get the one probe, made on a thread of its own
    as soon as the suite is read, beside planning."""
    made: list[str] = []

    def probe(opt_out: bool):
        made.append(threading.current_thread().name)
        return NoSandbox()

    monkeypatch.setattr(runs.engine.sandbox, "detect_sandbox", probe)
    PriceTable.objects.ensure_default()
    path = tmp_path / "checked.yaml"
    path.write_text(CHECKED)

    code, out, err = run_command("run", str(path), "--fake")

    assert code == 0, out + err
    assert Answer.objects.get().exec_verdict == "pass"
    assert made == ["sandbox-probe"]


def test_a_validation_that_fails_half_way_waits_for_its_probe_to_end(tmp_path, monkeypatch):
    """The probe's job (a temporary folder, a memory cgroup, a bubblewrap process) is
    cleaned up before validate returns or raises, never cut short as the process exits."""
    ended: list[str] = []

    def probe(opt_out: bool):
        time.sleep(0.2)
        ended.append(threading.current_thread().name)
        raise SandboxUnavailable("bubblewrap is not usable here")

    def prepare_database():
        raise RuntimeError("the database is gone")

    monkeypatch.setattr(runs.engine.sandbox, "detect_sandbox", probe)
    monkeypatch.setattr(validation, "prepare_database", prepare_database)
    path = tmp_path / "checked.yaml"
    path.write_text(CHECKED)

    with pytest.raises(RuntimeError, match="the database is gone"):
        validation.validate(str(path))

    assert ended == ["sandbox-probe"]
