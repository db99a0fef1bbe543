"""Execution checks: the fixture lifecycle, blocks, verdicts, and support-desk's code tasks."""

from __future__ import annotations

import errno
import pathlib

import pytest
import yaml

from evalsite.core.scoring import sandbox as sandbox_module
from evalsite.core.scoring.execution import run_execution_check, run_many
from evalsite.core.scoring.sandbox import (
    ANSWER_TEXT_MAX_BYTES,
    BwrapSandbox,
    MemoryCgroups,
    NoSandbox,
    SandboxUnavailable,
    detect_sandbox,
)
from evalsite.core.suites import load_suite
from tests.helpers.sandbox import block, no_processes_left

EXAMPLES = pathlib.Path(__file__).parents[3] / "examples"


@pytest.fixture(scope="module")
def support_desk():
    suite = load_suite(EXAMPLES / "support-desk.yaml")
    replies = yaml.safe_load((EXAMPLES / "support-desk.replies.yaml").read_text())
    return suite, replies


def support_desk_check(support_desk, contestant: str, task_id: str, case_id: str, sandbox):
    suite, replies = support_desk
    case = suite.task(task_id).case(case_id)
    (answer,) = replies[contestant][f"{task_id}/{case_id}"]
    return run_execution_check(answer, case.check, sandbox=sandbox)


CODE_CASES = [
    ("slugify-function", "punctuation-and-empty"),
    ("slugify-function", "long-titles"),
    ("log-oneliner", "distinct-5xx-customers"),
    ("log-oneliner", "slowest-path"),
]


@pytest.mark.parametrize(("task_id", "case_id"), CODE_CASES)
def test_support_desk_good_code_passes_in_the_sandbox(support_desk, sandbox, task_id, case_id):
    result = support_desk_check(support_desk, "good", task_id, case_id, sandbox)
    assert (result.verdict, result.exit_code, result.note) == ("pass", 0, None)
    assert result.isolation == "bwrap"


@pytest.mark.parametrize(("task_id", "case_id"), CODE_CASES)
def test_support_desk_sloppy_code_fails_in_the_sandbox(support_desk, sandbox, task_id, case_id):
    result = support_desk_check(support_desk, "sloppy", task_id, case_id, sandbox)
    assert (result.verdict, result.exit_code, result.note) == ("fail", 1, "exit code 1")


def test_the_sloppy_slugify_output_says_what_went_wrong(support_desk, sandbox):
    result = support_desk_check(
        support_desk, "sloppy", "slugify-function", "punctuation-and-empty", sandbox
    )
    assert "slugify('Café & Crème: billing FAQ') = 'caf-cr-me-billing-faq'" in result.output_tail


def test_a_retracted_first_block_is_recorded_and_the_last_block_is_the_verdict(
    support_desk, sandbox
):
    result = support_desk_check(
        support_desk, "good", "slugify-function", "punctuation-and-empty", sandbox
    )
    assert result.verdict == "pass"
    assert len(result.blocks) == 1
    first = result.blocks[0]
    assert (first.verdict, first.exit_code, first.note) == ("fail", 1, "exit code 1")
    assert "expected 'untitled'" in first.output_tail


def test_each_block_gets_a_fresh_fixture_with_setup_run_again(sandbox):
    answer = block("first") + "or rather\n" + block("second")
    check = {
        "setup": "echo setup >> runs.log",
        "run": 'test "$(wc -l < runs.log)" = 1 && echo "block: $(cat "$ANSWER")"',
    }
    result = run_execution_check(answer, check, sandbox=sandbox)
    assert (result.verdict, result.blocks[0].verdict) == ("pass", "pass")
    assert "block: first" in result.blocks[0].output_tail
    assert "block: second" in result.output_tail


def test_answer_is_the_blocks_code_and_answer_text_the_whole_answer(sandbox):
    answer = "Prose first.\n```python\nprint('hi')\n```\nProse after."
    check = {"run": 'echo "file=$ANSWER"; cat "$ANSWER"; echo "text=$ANSWER_TEXT"'}
    result = run_execution_check(answer, check, sandbox=sandbox)
    assert result.verdict == "pass"
    assert "file=/work/answer.py\nprint('hi')\n" in result.output_tail
    assert "text=Prose first.\n```python\nprint('hi')\n```\nProse after." in result.output_tail


def test_an_answer_without_a_fenced_block_runs_as_a_whole(sandbox):
    result = run_execution_check(
        "  echo whole-answer  \n", {"run": 'bash "$ANSWER"'}, sandbox=sandbox
    )
    assert (result.verdict, result.blocks) == ("pass", ())
    assert result.output_tail == "whole-answer\n"


def test_a_huge_answer_text_is_cut_to_the_documented_size(sandbox):
    answer = "é" * 80_000  # 160,000 bytes of UTF-8
    result = run_execution_check(
        answer, {"run": 'printf %s "$ANSWER_TEXT" | wc -c'}, sandbox=sandbox
    )
    assert result.verdict == "pass"
    assert int(result.output_tail) == ANSWER_TEXT_MAX_BYTES


def test_a_failing_setup_is_an_error_not_the_answers_fault(sandbox):
    check = {"setup": "echo 'fixture broke' >&2; exit 7", "run": "true"}
    result = run_execution_check(block("print(1)"), check, sandbox=sandbox)
    assert (result.verdict, result.exit_code) == ("error", 7)
    assert result.note == "setup failed with exit code 7"
    assert "fixture broke" in result.output_tail


def test_a_setup_that_never_ends_is_an_error(sandbox):
    check = {"setup": "sleep 30", "run": "true", "timeout_s": 1}
    result = run_execution_check(block("print(1)"), check, sandbox=sandbox)
    assert (result.verdict, result.note) == ("error", "setup timed out after 1s")


def test_the_answer_cannot_forge_a_setup_failure(sandbox):
    code = "import os\nfor fd in range(3, 64):\n    try: os.write(fd, b'9\\n')\n    except OSError: pass\nraise SystemExit(1)"
    result = run_execution_check(block(code), {"run": 'python3 "$ANSWER"'}, sandbox=sandbox)
    assert (result.verdict, result.note) == ("fail", "exit code 1")


def test_a_check_without_run_is_an_error(sandbox):
    result = run_execution_check("x", {"setup": "true"}, sandbox=sandbox)
    assert (result.verdict, result.note) == ("error", "the execution check has no 'run' command")


def test_results_serialise_to_plain_dicts(sandbox):
    result = run_execution_check(block("a") + block("b"), {"run": "exit 3"}, sandbox=sandbox)
    data = result.to_dict()
    assert (data["verdict"], data["exit_code"], data["isolation"]) == ("fail", 3, "bwrap")
    assert [b["verdict"] for b in data["blocks"]] == ["fail"]
    assert data["duration_ms"] >= data["blocks"][0]["duration_ms"]


def test_run_many_keeps_the_order_of_the_jobs(sandbox):
    jobs = [(block(str(n)), {"run": f'test "$(cat "$ANSWER")" = {n}'}) for n in range(6)]
    jobs[3] = (block("wrong"), jobs[3][1])
    results = run_many(jobs, sandbox=sandbox, max_workers=3)
    assert [r.verdict for r in results] == ["pass", "pass", "pass", "fail", "pass", "pass"]


# --- without a sandbox -------------------------------------------------------------------


def test_no_sandbox_still_strips_the_environment_and_kills_its_process_group(monkeypatch):
    monkeypatch.setenv("FOO_API_KEY", "canary-no-sandbox-4711")
    check = {"run": 'env; sleep 1000 & echo "started $!"'}
    result = run_execution_check(block("print(1)"), check, sandbox=NoSandbox())
    assert (result.verdict, result.isolation) == ("pass", "none")
    assert "canary-no-sandbox-4711" not in result.output_tail
    assert "ANSWER_TEXT=" in result.output_tail
    assert no_processes_left(cmdline="sleep 1000") == []


def test_detect_sandbox_refuses_without_bwrap_unless_the_operator_opted_out(monkeypatch, tmp_path):
    monkeypatch.setattr(sandbox_module, "TOOL_PATH", str(tmp_path))
    with pytest.raises(SandboxUnavailable) as refused:
        detect_sandbox(opt_out=False)
    assert "EVALSITE_UNSAFE_NO_SANDBOX" in str(refused.value)
    assert "bwrap" in str(refused.value)
    assert isinstance(detect_sandbox(opt_out=True), NoSandbox)


def test_detect_sandbox_refuses_when_the_smoke_test_fails(monkeypatch):
    monkeypatch.setattr(BwrapSandbox, "argv", staticmethod(lambda timeout, folder: ["false"]))
    with pytest.raises(SandboxUnavailable, match="a test job failed"):
        detect_sandbox(opt_out=False)


def test_detect_sandbox_prefers_bwrap_even_when_opted_out():
    assert detect_sandbox(opt_out=True).isolation == "bwrap"


class StillBusy:
    """A check's cgroup whose last processes leave it after `busy` tries to remove it."""

    def __init__(self, busy: int) -> None:
        self.busy = busy
        self.removed = False

    def rmdir(self) -> None:
        if self.busy:
            self.busy -= 1
            raise OSError(errno.EBUSY, "Device or resource busy")
        self.removed = True


def test_a_busy_cgroup_is_removed_as_soon_as_it_is_free_not_after_a_long_sleep(monkeypatch):
    """Its processes leave it within a millisecond or two of the check's end: a check's
    slot is not held 20 ms more for it (a first wait of 20 ms did about every other check)."""
    slept: list[float] = []
    monkeypatch.setattr(sandbox_module.time, "sleep", slept.append)
    cgroup = StillBusy(busy=2)

    MemoryCgroups.remove(cgroup)  # type: ignore[arg-type]

    assert cgroup.removed
    assert sum(slept) < 0.005
