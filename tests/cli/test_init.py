"""`evalsite init`: the starter's answers and defaults (pure core), and the verb as a user
runs it: questions on a pipe and on a terminal, --yes, refusing to overwrite, and the files
it writes running with --fake and offline with their scripted replies."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from evalsite.core import starter
from evalsite.core.pricing import PriceRow
from evalsite.core.providers import ScriptedReplies
from evalsite.core.starter import Judging, Starter, StarterError
from evalsite.core.suites import load_suite
from tests.helpers import launcher
from tests.helpers.cli import cli_env

ROOT = Path(__file__).resolve().parents[2]
EVALSITE = Path(sys.executable).parent / "evalsite"
ROWS = [
    PriceRow("anthropic/claude-haiku-4-5", Decimal(1), Decimal(5)),
    PriceRow("anthropic/claude-sonnet-4-6", Decimal(3), Decimal(15)),
    PriceRow("fake/small", Decimal("0.01"), Decimal("0.01")),
    PriceRow("google/gemini-2.5-flash-lite", Decimal("0.1"), Decimal("0.4")),
    PriceRow("openai/gpt-4o-mini", Decimal("0.15"), Decimal("0.6")),
    PriceRow("openai/gpt-5-nano", Decimal("0.05"), Decimal("0.4")),
]


# --- the core: answers, defaults, templates ------------------------------------------------


def test_the_default_models_are_the_cheapest_of_the_two_cheapest_providers_never_fake():
    assert starter.default_models(ROWS) == ("openai/gpt-5-nano", "google/gemini-2.5-flash-lite")


def test_the_default_judge_comes_from_a_provider_no_contestant_uses():
    model, note = starter.default_judge(["openai/gpt-5-nano", "google/gemini-2.5-flash-lite"], ROWS)
    assert model == "anthropic/claude-haiku-4-5"
    assert "from a provider none of the contestants use" in note


def test_a_legacy_row_is_never_offered_even_when_it_is_the_cheapest():
    """The table prices older models for older runs and imported suites (claude-3-haiku at
    $0.25/$1.25 made `init` pick it as the judge): init offers current models only."""
    rows = [*ROWS, PriceRow("anthropic/claude-3-haiku", Decimal("0.25"), Decimal("1.25"),
                            legacy=True),
            PriceRow("openai/gpt-3.5-turbo", Decimal("0.01"), Decimal("0.01"), legacy=True)]  # fmt: skip
    models = starter.default_models(rows)
    assert models == ("openai/gpt-5-nano", "google/gemini-2.5-flash-lite")
    assert starter.default_judge(models, rows)[0] == "anthropic/claude-haiku-4-5"


def test_without_an_unused_provider_the_judge_is_the_cheapest_other_model():
    models = ["openai/gpt-5-nano", "google/gemini-2.5-flash-lite", "anthropic/claude-haiku-4-5"]
    assert starter.default_judge(models, ROWS)[0] == "openai/gpt-4o-mini"


def test_a_name_that_is_not_a_suite_name_says_what_a_name_must_be():
    with pytest.raises(StarterError, match="lowercase letters, digits and '-'"):
        starter.suite_name("My Suite")
    assert starter.suite_name(" support-replies ") == "support-replies"


def test_the_default_name_comes_from_the_file_or_for_evalsite_yaml_its_folder(tmp_path):
    assert starter.default_name(Path("Ticket Triage.yaml")) == "ticket-triage"
    folder = tmp_path / "Acme_Support"
    folder.mkdir()
    assert starter.default_name(folder / "evalsite.yaml") == "acme-support"


def test_judging_takes_a_word_or_its_start_and_refuses_anything_else():
    assert starter.judging("Both") is Judging.BOTH
    assert starter.judging("j") is Judging.JUDGE
    with pytest.raises(StarterError, match="not one of checks, judge, both"):
        starter.judging("vibes")


@pytest.mark.parametrize(
    ("text", "mode", "message"),
    [
        (" , ", Judging.CHECKS, "give at least one model"),
        ("openai/gpt-4o-mini, openai/gpt-4o-mini", Judging.CHECKS, "listed twice"),
        ("openai/gpt-4o-mini", Judging.BOTH, "a pairwise judge compares two or more models"),
    ],
)
def test_a_model_list_that_cannot_be_used_says_why(text, mode, message):
    with pytest.raises(StarterError, match=message):
        starter.model_list(text, mode)


def test_one_model_is_enough_for_checks():
    assert starter.model_list("openai/gpt-4o-mini", Judging.CHECKS) == ("openai/gpt-4o-mini",)


def _write(
    folder: Path, mode: Judging, models=("openai/gpt-5-nano", "google/gemini-2.5-flash-lite")
):
    judge, note = starter.default_judge(models, ROWS)
    chosen = Starter("starter-test", mode, tuple(models), judge, note)
    suite = folder / "evalsite.yaml"
    suite.write_text(starter.render_suite(chosen, suite.name, "evalsite.replies.yaml", ["K"]))
    (folder / "evalsite.replies.yaml").write_text(starter.render_replies(chosen, suite.name))
    return suite


@pytest.mark.parametrize("mode", list(Judging))
def test_every_mode_renders_a_suite_that_loads_cleanly_with_a_reply_for_every_case(tmp_path, mode):
    loaded = load_suite(_write(tmp_path, mode))
    assert loaded.warnings == ()
    assert (loaded.judge is not None) is mode.judge
    assert any(case.checks for task in loaded.tasks for case in task.cases) is mode.checks
    replies = ScriptedReplies.load(tmp_path / "evalsite.replies.yaml")
    cases = [(task.id, case.id) for task in loaded.tasks for case in task.cases]
    assert (
        replies.missing("scripted/good", cases) == replies.missing("scripted/sloppy", cases) == []
    )
    assert (replies.missing_judge("scripted/judge", cases) == []) is mode.judge


def _uncommented(text: str, key: str) -> str:
    """`text` with every commented-out `key:` block switched on, as a reader would: the
    "# " removed from the key's line and from the deeper-indented lines under it."""
    lines, column = text.splitlines(), None
    for index, line in enumerate(lines):
        opening = re.fullmatch(rf"( *)# ({key}:.*)", line)
        if opening:
            column = len(opening[1])
            lines[index] = opening[1] + opening[2]
        elif column is not None and line.startswith(" " * column + "#  "):
            lines[index] = line[:column] + line[column + 2 :]
        else:
            column = None
    return "\n".join(lines) + "\n"


def test_the_judge_rubric_and_label_a_checks_starter_shows_commented_out_load_when_switched_on(
    tmp_path,
):
    suite = _write(tmp_path, Judging.CHECKS)
    text = suite.read_text()
    for key in ("judge", "rubric", "labels"):
        text = _uncommented(text, key)
    suite.write_text(text)
    loaded = load_suite(suite)
    assert loaded.judge.model == "anthropic/claude-haiku-4-5"
    assert loaded.task("reply-draft").rubric
    assert [label.prefer for label in loaded.labels] == ["candidate"]


def test_the_checks_a_judge_only_starter_shows_commented_out_load_when_switched_on(tmp_path):
    suite = _write(tmp_path, Judging.JUDGE)
    suite.write_text(_uncommented(suite.read_text(), "checks"))
    (tmp_path / "both").mkdir()
    both = load_suite(_write(tmp_path / "both", Judging.BOTH))
    loaded = load_suite(suite)
    assert [t.checks for t in loaded.tasks] == [t.checks for t in both.tasks]
    assert [c.checks for t in loaded.tasks for c in t.cases] == [
        c.checks for t in both.tasks for c in t.cases
    ]


@pytest.mark.parametrize(
    ("estimate", "cap"),
    [("0.01", "0.50"), ("0.50", "0.50"), ("0.5131", "1"), ("1.5", "2"), ("7", "10"), ("60", "100")],
)
def test_the_cap_is_fifty_cents_or_the_first_round_amount_the_estimate_fits_under(estimate, cap):
    chosen = Starter("s", Judging.BOTH, ("a/b", "c/d"), "e/f", "")
    assert starter.capped(chosen, Decimal(estimate)).max_cost == Decimal(cap)


def test_render_resolves_blocks_and_comments_a_silenced_block_at_its_indentation():
    template = "a: [[x]]\n[[if not on]]\nb: 1\n[[end]]\n  [[on on]]\n  c:\n    d: 2\n  [[end]]\n"
    assert starter.render(template, {"x": "1"}, {"on": False}) == "a: 1\nb: 1\n  # c:\n  #   d: 2\n"
    assert starter.render(template, {"x": "1"}, {"on": True}) == "a: 1\n  c:\n    d: 2\n"


def test_render_refuses_a_value_or_flag_it_is_not_given_and_an_unclosed_block():
    with pytest.raises(KeyError):
        starter.render("[[missing]]", {}, {})
    with pytest.raises(ValueError, match="unclosed"):
        starter.render("[[if x]]\nb\n", {}, {"x": True})


def test_the_starter_core_imports_no_django():
    code = "import sys, evalsite.core.starter; print('django' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.stdout.strip() == "False", result.stderr


# --- the verb ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("init-data")


def _env(data_dir: Path) -> dict[str, str]:
    env = cli_env(data_dir)
    env["PYTHONPATH"] = str(ROOT)  # the checkout's apps, whichever folder init runs in
    return env


def evalsite(data_dir, cwd, *args, input=None):
    return launcher.run(list(args), env=_env(data_dir), cwd=cwd, input=input)


def test_yes_writes_the_default_suite_and_replies_here_and_they_validate(data_dir, tmp_path):
    result = evalsite(data_dir, tmp_path, "init", "--yes")
    assert result.returncode == 0, result.stderr
    suite = load_suite(tmp_path / "evalsite.yaml")
    assert suite.name == re.sub(r"[^a-z0-9]+", "-", tmp_path.name.lower()).strip("-")
    assert suite.models == ("openai/gpt-5-nano", "google/gemini-2.5-flash-lite")
    assert suite.judge.model == "anthropic/claude-haiku-4-5"
    assert "wrote evalsite.yaml and evalsite.replies.yaml" in result.stdout
    assert "ok: evalsite.yaml - 2 tasks, 6 cases, 0 labels" in result.stdout
    checked = evalsite(data_dir, tmp_path, "validate", "evalsite.yaml")
    assert checked.returncode == 0, checked.stderr


def test_answers_on_a_pipe_name_the_suite_choose_the_judging_and_the_models(data_dir, tmp_path):
    answers = "support-replies\nchecks\nopenai/gpt-4o-mini, anthropic/claude-haiku-4-5\n"
    result = evalsite(data_dir, tmp_path, "init", "suites/replies.yaml", input=answers)
    assert result.returncode == 0, result.stderr
    suite = load_suite(tmp_path / "suites" / "replies.yaml")
    assert (suite.name, suite.judge) == ("support-replies", None)
    assert suite.models == ("openai/gpt-4o-mini", "anthropic/claude-haiku-4-5")
    assert (tmp_path / "suites" / "replies.replies.yaml").is_file()
    assert "Suite name [replies]: support-replies\n" in result.stdout  # the answer shown


def test_answers_typed_on_a_terminal_are_read_the_same_way(data_dir, tmp_path):
    controller, terminal = pty.openpty()
    try:
        process = subprocess.Popen(
            [str(EVALSITE), "init", "typed.yaml"],
            cwd=tmp_path,
            env=_env(data_dir),
            stdin=terminal,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        os.write(controller, b"typed-suite\njudge\n\n")
        out, err = process.communicate(timeout=120)
    finally:
        os.close(controller)
        os.close(terminal)
    assert process.returncode == 0, err
    suite = load_suite(tmp_path / "typed.yaml")
    assert suite.name == "typed-suite" and suite.judge is not None
    assert not any(case.checks for task in suite.tasks for case in task.cases)
    assert "Suite name [typed]: typed-suite" not in out  # a terminal echoes it, not init


def test_yes_refuses_to_overwrite_and_names_the_file(data_dir, tmp_path):
    (tmp_path / "evalsite.yaml").write_text("mine\n")
    result = evalsite(data_dir, tmp_path, "init", "--yes")
    assert result.returncode == 2
    assert "error: evalsite.yaml already exists; --yes never overwrites" in result.stderr
    assert (tmp_path / "evalsite.yaml").read_text() == "mine\n"
    assert not (tmp_path / "evalsite.replies.yaml").exists()


def test_an_existing_file_is_overwritten_only_when_the_answer_is_yes(data_dir, tmp_path):
    (tmp_path / "evalsite.replies.yaml").write_text("mine\n")
    declined = evalsite(data_dir, tmp_path, "init", input="n\n")
    assert declined.returncode == 2
    assert "evalsite.replies.yaml already exists. Overwrite it? [no]: n" in declined.stdout
    assert "nothing written" in declined.stderr
    assert (tmp_path / "evalsite.replies.yaml").read_text() == "mine\n"
    accepted = evalsite(data_dir, tmp_path, "init", input="y\n")
    assert accepted.returncode == 0, accepted.stderr
    assert "good:" in (tmp_path / "evalsite.replies.yaml").read_text()


def test_bad_answers_are_asked_again_with_the_reason(data_dir, tmp_path):
    answers = (
        "Bad Name\nok-name\nvibes\nboth\n , \n"
        "openai/gpt-4o-mimi, openai/gpt-5-nano\nopenai/gpt-4o-mini\n\n"
    )
    result = evalsite(data_dir, tmp_path, "init", "x.yaml", input=answers)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "'Bad Name' is not a suite name" in out
    assert "'vibes' is not one of checks, judge, both" in out
    assert "give at least one model" in out
    assert "did you mean 'openai/gpt-4o-mini'?" in out
    assert "a pairwise judge compares two or more models" in out
    assert load_suite(tmp_path / "x.yaml").name == "ok-name"


def test_input_that_ends_on_a_bad_answer_fails_and_writes_nothing(data_dir, tmp_path):
    result = evalsite(data_dir, tmp_path, "init", input="Bad Name\n")
    assert result.returncode == 2
    assert "error: Suite name: 'Bad Name' is not a suite name" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_path_that_is_not_a_yaml_file_is_refused(data_dir, tmp_path):
    result = evalsite(data_dir, tmp_path, "init", "--yes", "suite.txt")
    assert result.returncode == 2
    assert "suite.txt: a suite file's name ends in .yaml or .yml" in result.stderr


@pytest.mark.parametrize("mode", ["both", "checks", "judge"])
def test_the_starter_runs_offline_with_its_scripted_replies(data_dir, tmp_path, mode):
    name = f"offline-{mode}"
    made = evalsite(data_dir, tmp_path, "init", f"{name}.yaml", input=f"\n{mode}\n")
    assert made.returncode == 0, made.stderr
    command = made.stdout.strip().splitlines()[-1].split()
    assert command[:4] == ["evalsite", "run", f"{name}.yaml", "--models"]
    result = evalsite(data_dir, tmp_path, *command[1:])
    assert result.returncode == 0, result.stderr
    assert f"({name})" in result.stdout and "report:" in result.stdout
    assert ("scripted/good vs scripted/sloppy: win-rate" in result.stdout) is (mode != "checks")


def test_the_starter_runs_as_is_with_fake(data_dir, tmp_path):
    made = evalsite(data_dir, tmp_path, "init", "--yes", "fake.yaml")
    assert made.returncode == 0, made.stderr
    result = evalsite(data_dir, tmp_path, "run", "fake.yaml", "--fake")
    assert result.returncode == 0, result.stderr
    assert "(fake)" in result.stdout and "report:" in result.stdout
    assert "simulated run" in result.stdout


def test_a_starter_of_expensive_models_gets_a_cap_its_fake_run_fits_under(data_dir, tmp_path):
    answers = "\nboth\nanthropic/claude-opus-4-1, openai/o3\n"
    made = evalsite(data_dir, tmp_path, "init", "dear.yaml", input=answers)
    assert made.returncode == 0, made.stderr
    assert "limits: {max_cost_usd: 1.00}" in (tmp_path / "dear.yaml").read_text()
    result = evalsite(data_dir, tmp_path, "run", "dear.yaml", "--fake")
    assert result.returncode == 0, result.stdout + result.stderr
