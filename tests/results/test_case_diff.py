"""A suite of one contestant runs (checks and pass^k / pass@k, no pairs), and `evalsite
compare` gives the per-case diff of two runs or of evalpin results files: evalpin's README
example, run 1 `pass^2 0/1, pass@2 1/1`, run 2 `1 better` (issue 18)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalsite.core.exitcodes import ExitCode
from runs.models import Run
from tests.helpers.factories import run_command

pytestmark = pytest.mark.django_db(transaction=True)

SUITE = """\
suite: greetings
version: 1
models: [scripted/evalpin]
repeats: 2
replies: replies.yaml
tasks:
  - id: greet
    prompt: Greet Ana.
    checks: [{contains: Ana}]
    cases: [{id: greet}]
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "suite.yaml").write_text(SUITE)
    return tmp_path


def replies(folder: Path, second: str) -> None:
    (folder / "replies.yaml").write_text(
        json.dumps({"evalpin": {"greet/greet": ["Hello Ana!", second]}})
    )


def test_evalpins_readme_example_one_contestant_then_one_better(folder: Path) -> None:
    replies(folder, "Hi there.")
    code, out, _ = run_command("run", str(folder / "suite.yaml"))
    assert code == ExitCode.OK
    assert "  one contestant: no pairs, no win-rates (checks and pass rates only)" in out
    assert "  scripted/evalpin: pass^2 0/1, pass@2 1/1" in out
    assert "calibration:" not in out and "UNCALIBRATED" not in out
    replies(folder, "Hello again, Ana.")
    code, out, _ = run_command("run", str(folder / "suite.yaml"))
    assert "  scripted/evalpin: pass^2 1/1, pass@2 1/1" in out
    first, second = Run.objects.order_by("created_at").values_list("pk", flat=True)
    code, out, _ = run_command("compare", first, second, "--cases")
    assert code == ExitCode.OK
    assert out.splitlines()[-3:] == [
        "CASE         OLD  NEW  VS",
        "greet/greet  1/2  2/2  better",
        "cases: 1 better, 0 same, 0 worse, 0 new, 0 gone",
    ]
    code, out, _ = run_command("compare", second, first, "--cases", "--show", "changes")
    assert code == ExitCode.GATE_FAILED
    assert "greet/greet  2/2  1/2  worse" in out


def test_two_evalpin_results_files_compare_and_a_worse_case_exits_1(tmp_path: Path) -> None:
    (tmp_path / "first.txt").write_text("evalpin-results 1\ngreet 1 2\nbye 1 1\n")
    (tmp_path / "second.txt").write_text("evalpin-results 1\ngreet 2 2\nhi 0 1\n")
    code, out, _ = run_command("compare", str(tmp_path / "first.txt"), str(tmp_path / "second.txt"))
    assert code == ExitCode.OK
    assert out.splitlines() == [
        "CASE   OLD  NEW  VS",
        "greet  1/2  2/2  better",
        "hi     -    0/1  new",
        "bye    1/1  -    gone",
        "cases: 1 better, 0 same, 0 worse, 1 new, 1 gone",
    ]
    code, out, _ = run_command("compare", str(tmp_path / "second.txt"), str(tmp_path / "first.txt"))
    assert code == ExitCode.GATE_FAILED


def test_a_run_compares_with_a_results_file_by_case_id(folder: Path, tmp_path: Path) -> None:
    replies(folder, "Hi there.")
    run_command("run", str(folder / "suite.yaml"))
    (tmp_path / "old.txt").write_text("evalpin-results 1\ngreet 2 2\n")
    code, out, _ = run_command("compare", str(tmp_path / "old.txt"), "latest", "--json")
    assert code == ExitCode.GATE_FAILED
    assert json.loads(out)["cases"] == [
        {"case": "greet", "before": "2/2", "after": "1/2", "status": "worse"}
    ]


def test_a_broken_results_file_is_an_input_error_naming_its_line(tmp_path: Path) -> None:
    (tmp_path / "bad.txt").write_text("evalpin-results 1\ngreet 3 2\n")
    code, _, err = run_command("compare", str(tmp_path / "bad.txt"), "latest")
    assert code == ExitCode.INPUT_ERROR
    assert "bad.txt:2: PASSED (3) cannot exceed TOTAL (2)" in err


def test_the_baseline_evalsite_import_writes_compares_with_a_run(folder, tmp_path) -> None:
    replies(folder, "Hello again, Ana.")
    run_command("run", str(folder / "suite.yaml"))
    (tmp_path / "first.txt").write_text("evalpin-results 1\ngreet 1 2\n")
    code, _, _ = run_command("import", "evalpin", str(tmp_path / "first.txt"), "--out",
                         str(tmp_path / "imported"))  # fmt: skip
    assert code == ExitCode.OK
    [baseline] = (tmp_path / "imported").glob("*.baseline.json")
    code, out, _ = run_command("compare", str(baseline), "latest")
    assert code == ExitCode.OK
    assert "greet  1/2  2/2  better" in out


def test_evalpin_ids_with_underscores_match_the_imported_case_ids(tmp_path) -> None:
    (tmp_path / "suite.yaml").write_text(SUITE.replace("{id: greet}", "{id: say-hi}"))
    (tmp_path / "replies.yaml").write_text('{"evalpin": {"greet/say-hi": ["Ana"]}}')
    run_command("run", str(tmp_path / "suite.yaml"))
    (tmp_path / "old.txt").write_text("evalpin-results 1\nsay_hi 0 2\n")
    code, out, _ = run_command("compare", str(tmp_path / "old.txt"), "latest")
    assert (code, out.splitlines()[1]) == (ExitCode.OK, "say-hi  0/2  2/2  better")


def test_run_baseline_holds_each_case_against_a_results_file_as_evalpin_does(
    folder: Path, tmp_path: Path
) -> None:
    (tmp_path / "first.txt").write_text("evalpin-results 1\ngreet 1 2\n")
    replies(folder, "Hello again, Ana.")
    code, out, err = run_command("run", str(folder / "suite.yaml"), "--baseline",
                             str(tmp_path / "first.txt"))  # fmt: skip
    assert code == ExitCode.OK
    assert out.splitlines()[-4:] == [
        f"vs baseline ({tmp_path / 'first.txt'}):",
        "  CASE   OLD  NEW  VS",
        "  greet  1/2  2/2  better",
        "  cases: 1 better, 0 same, 0 worse, 0 new, 0 gone",
    ]
    (tmp_path / "perfect.txt").write_text("evalpin-results 1\ngreet 2 2\n")
    replies(folder, "Hi there.")
    code, out, err = run_command("run", str(folder / "suite.yaml"), "--baseline",
                             str(tmp_path / "perfect.txt"))  # fmt: skip
    assert code == ExitCode.GATE_FAILED
    assert "baseline: greet 1/2 is worse" in err


def test_run_baseline_fails_a_new_case_that_does_not_fully_pass(folder: Path, tmp_path) -> None:
    (tmp_path / "other.txt").write_text("evalpin-results 1\nbye 1 1\n")
    replies(folder, "Hi there.")
    code, out, err = run_command("run", str(folder / "suite.yaml"), "--baseline",
                             str(tmp_path / "other.txt"))  # fmt: skip
    assert code == ExitCode.GATE_FAILED
    assert "  cases: 0 better, 0 same, 0 worse, 1 new, 1 gone" in out
    assert "baseline: greet 1/2 is new and not fully passing" in err


def test_run_baseline_takes_a_run_and_refuses_what_names_nothing(folder: Path) -> None:
    replies(folder, "Hello again, Ana.")
    run_command("run", str(folder / "suite.yaml"), "--label", "first")
    code, out, _ = run_command("run", str(folder / "suite.yaml"), "--baseline", "first")
    assert code == ExitCode.OK
    assert "  greet/greet  2/2  2/2  same" in out
    code, _, err = run_command("run", str(folder / "suite.yaml"), "--baseline", "no-such-run")
    assert code == ExitCode.INPUT_ERROR
    assert err.startswith("error: --baseline: ")
    assert Run.objects.count() == 2  # refused before anything was planned or spent


def test_the_compare_page_lists_the_cases_that_changed_and_all_on_request(
    folder: Path, client, django_user_model
) -> None:
    replies(folder, "Hi there.")
    run_command("run", str(folder / "suite.yaml"))
    replies(folder, "Hello again, Ana.")
    run_command("run", str(folder / "suite.yaml"))
    first, second = Run.objects.order_by("created_at").values_list("pk", flat=True)
    client.force_login(django_user_model.objects.create_user("ann", password="x" * 20))
    page = client.get("/compare/", {"a": first, "b": second}).content.decode()
    assert "1 better, 0 same, 0 worse, 0 new, 0 gone" in page
    assert '<tr class="case-better"><td><code>greet/greet</code></td>' in page
    assert '<td class="num">1/2</td><td class="num">2/2</td><td>better</td>' in page
    same = client.get("/compare/", {"a": first, "b": first}).content.decode()
    assert "No case changed." in same
    every = client.get("/compare/", {"a": first, "b": first, "show": "all"}).content.decode()
    assert '<tr class="case-same"><td><code>greet/greet</code></td>' in every


@pytest.mark.parametrize(
    ("text", "note"),
    [
        ("case greet\nprompt: Greet Ana.\nexpect contains: Ana\n",
         "looks like an evalpin suite file, not an evalsite suite: evalsite import evalpin "),
        ("reply greet\n| Hello Ana!\n",
         "looks like an evalpin replies file, not an evalsite suite: evalsite import evalpin "
         "SUITE --replies "),
        ("evalpin-results 1\ngreet 1 2\n",
         "looks like an evalpin results file, not an evalsite suite: evalsite compare "),
        ("prompts: ['Say {{x}}']\nproviders: [openai:gpt-4o-mini]\ntests: [{vars: {x: hi}}]\n",
         "looks like a promptfoo suite file, not an evalsite suite: evalsite import promptfoo "),
    ],
)  # fmt: skip
def test_validate_and_run_say_which_tool_wrote_a_file_they_refuse(tmp_path, text, note) -> None:
    (tmp_path / "file.txt").write_text(text)
    for verb in ("validate", "run"):
        code, _, err = run_command(verb, str(tmp_path / "file.txt"))
        assert code == ExitCode.INPUT_ERROR
        assert note in err, verb


def test_import_as_the_first_command_on_a_new_data_dir_succeeds(tmp_path: Path) -> None:
    """`evalsite import` read the price table of a data dir nobody had migrated yet and
    failed with 'no such table' (exit 3) after writing its files."""
    from tests.helpers.cli import evalsite

    (tmp_path / "suite.txt").write_text("case greet\nprompt: Greet Ana.\nexpect contains: Ana\n")
    done = evalsite(tmp_path / "new-data", "import", "evalpin", str(tmp_path / "suite.txt"),
                    "--out", str(tmp_path / "out"), fresh=True)  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    assert "everything translated" in done.stdout


def test_run_baseline_filters_the_cases_a_partial_run_left_out(tmp_path: Path) -> None:
    """evalpin: a baseline case omitted by --only is filtered, not gone; one the suite no
    longer has is gone."""
    (tmp_path / "suite.yaml").write_text(SUITE.replace(
        "cases: [{id: greet}]", "cases: [{id: greet}, {id: wave}]"))  # fmt: skip
    (tmp_path / "replies.yaml").write_text(
        '{"evalpin": {"greet/greet": ["Ana"], "greet/wave": ["Ana"]}}'
    )
    (tmp_path / "old.txt").write_text("evalpin-results 1\ngreet 2 2\nwave 0 2\nbye 1 1\n")
    code, out, _ = run_command("run", str(tmp_path / "suite.yaml"), "--only", "greet/greet",
                           "--baseline", str(tmp_path / "old.txt"))  # fmt: skip
    assert code == ExitCode.OK
    assert "  cases: 0 better, 1 same, 0 worse, 0 new, 1 gone" in out
    assert "wave" not in out.split("vs baseline")[1]


GATED = SUITE.replace("repeats: 2\n", "repeats: 2\ngate: {min_pass_all_rate: 1}\n")


def test_run_baseline_on_an_imported_suite_holds_cases_to_the_baseline_not_the_gate(
    tmp_path: Path,
) -> None:
    """evalpin: with --baseline, a case fails only when worse or new and not fully passing;
    the imported `gate: {min_pass_all_rate: 1}` is evalpin's rule without a baseline
    (issue 28 item 7)."""
    (tmp_path / "suite.yaml").write_text(GATED)
    replies(tmp_path, "Hi there.")  # greet passes 1 of 2 attempts
    (tmp_path / "same.txt").write_text("evalpin-results 1\ngreet 1 2\n")
    code, out, err = run_command("run", str(tmp_path / "suite.yaml"), "--baseline",
                             str(tmp_path / "same.txt"))  # fmt: skip
    assert code == ExitCode.OK, out + err
    assert "  greet  1/2  1/2  same" in out
    assert "gate failed" not in out + err
    run = Run.objects.latest("created_at")
    assert run.report["gates_passed"] is True
    assert [gate["status"] for gate in run.report["gates"]] == ["skipped", "passed"]
    assert "--baseline" in run.report["gates"][0]["message"]
    assert run.report["gates"][1]["gate"] == "baseline"

    (tmp_path / "perfect.txt").write_text("evalpin-results 1\ngreet 2 2\n")
    code, out, err = run_command("run", str(tmp_path / "suite.yaml"), "--baseline",
                             str(tmp_path / "perfect.txt"))  # fmt: skip
    assert code == ExitCode.GATE_FAILED
    assert "  greet  2/2  1/2  worse" in out
    assert "baseline: greet 1/2 is worse" in err

    code, out, err = run_command("run", str(tmp_path / "suite.yaml"))  # no baseline: the gate
    assert code == ExitCode.GATE_FAILED
    assert "min_pass_all_rate" in out + err


def test_a_report_json_path_or_its_folder_names_its_run_wherever_a_run_is_named(
    folder: Path,
) -> None:
    """evalmine compares reports by path (issue 28): `compare reports/…/report.json
    reports/…/report.json`, the report folder too, in compare, report and --baseline."""
    replies(folder, "Hi there.")
    run_command("run", str(folder / "suite.yaml"))
    replies(folder, "Hello again, Ana.")
    run_command("run", str(folder / "suite.yaml"))
    first, second = Run.objects.order_by("created_at")
    a, b = first.report_dir / "report.json", second.report_dir / "report.json"
    code, out, err = run_command("compare", str(a), str(b), "--cases")
    assert code == ExitCode.OK, err
    assert "greet/greet  1/2  2/2  better" in out
    code, out, err = run_command("compare", str(first.report_dir), str(second.report_dir))
    assert code == ExitCode.OK, err
    code, out, err = run_command("report", str(second.report_dir) + "/")
    assert code == ExitCode.OK, err
    assert second.id in out
    code, out, err = run_command("run", str(folder / "suite.yaml"), "--baseline", str(a))
    assert code == ExitCode.OK, err
    assert f"vs baseline (run {first.id}):" in out


def test_a_report_path_of_a_run_not_in_this_data_dir_is_refused_by_name(tmp_path: Path) -> None:
    report = tmp_path / "elsewhere" / "20260101T000000Z_x" / "report.json"
    report.parent.mkdir(parents=True)
    report.write_text('{"run_id": "20260101T000000Z_x", "suite": {"name": "x"}}')
    code, _, err = run_command("compare", str(report), str(report))
    assert code == ExitCode.INPUT_ERROR
    assert "20260101T000000Z_x" in err and "not in this data dir" in err


def test_run_baseline_verdict_is_a_gate_of_the_report_every_face_reads(tmp_path: Path) -> None:
    """`run --baseline` with a worse case exited 1 while report.json said `gates_passed:
    true`: the per-case verdict was worked out by the command after the report was written
    (issue 28, the gap left at its first close). It is a gate result of the report now, one
    per failing case, that the CLI, report.json and `evalsite report --json` all read."""
    (tmp_path / "suite.yaml").write_text(SUITE)
    replies(tmp_path, "Hi there.")  # greet passes 1 of 2 attempts
    (tmp_path / "perfect.txt").write_text("evalpin-results 1\ngreet 2 2\n")
    code, out, err = run_command("run", str(tmp_path / "suite.yaml"), "--baseline",
                             str(tmp_path / "perfect.txt"))  # fmt: skip
    assert code == ExitCode.GATE_FAILED
    assert "baseline: greet 1/2 is worse" in err
    run = Run.objects.latest("created_at")
    assert run.report["gates_passed"] is False
    [gate] = run.report["gates"]
    assert (gate["gate"], gate["subject"], gate["status"]) == ("baseline", "greet", "failed")
    assert gate["message"] == "greet 1/2 is worse"
    on_disk = json.loads((run.report_dir / "report.json").read_text())
    assert on_disk["gates_passed"] is False
    code, out, _ = run_command("report", run.id, "--json")
    assert json.loads(out)["gates_passed"] is False
    assert "greet 1/2 is worse" in (run.report_dir / "report.md").read_text()

    (tmp_path / "same.txt").write_text("evalpin-results 1\ngreet 1 2\n")
    code, out, err = run_command("run", str(tmp_path / "suite.yaml"), "--baseline",
                             str(tmp_path / "same.txt"))  # fmt: skip
    assert code == ExitCode.OK, out + err
    run = Run.objects.latest("created_at")
    [gate] = run.report["gates"]
    assert (gate["gate"], gate["status"]) == ("baseline", "passed")
    assert gate["message"] == f"no case worse than {tmp_path / 'same.txt'} (1 compared)"
