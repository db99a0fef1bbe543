"""The seeds' habits of issue 28 (part 2): what evalblink, evalpin and evaling users type
works as they expect it to, with evalsite's own words."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from runs.models import CachedResponse, PriceTable
from tests.helpers.factories import make_price_table, run_command, write_scripted_suite

pytestmark = pytest.mark.django_db(transaction=True)


def _cache(*models: str) -> None:
    for i, model in enumerate(models):
        CachedResponse.objects.create(
            request_hash=f"{i:064d}", provider="scripted", model=model, text="t"
        )


# --- evalblink's cache verbs ----------------------------------------------------------------


def test_cache_clear_without_yes_counts_and_deletes_nothing():
    _cache("a", "a", "b")
    code, out, err = run_command("cache", "clear")
    assert code == 0, err
    assert out.splitlines() == [
        "3 cached responses would be cleared; nothing was deleted: pass --yes to clear them"
    ]
    assert CachedResponse.objects.count() == 3


def test_cache_clear_yes_clears_and_model_narrows_it():
    _cache("a", "a", "b")
    code, out, _ = run_command("cache", "clear", "--yes", "--model", "a")
    assert (code, out.strip()) == (0, "cleared 2 cached responses")
    assert list(CachedResponse.objects.values_list("model", flat=True)) == ["b"]
    code, out, _ = run_command("cache", "clear", "--yes")
    assert (code, out.strip(), CachedResponse.objects.count()) == (
        0, "cleared 1 cached responses", 0
    )  # fmt: skip


def test_cache_stats_is_cache_info():
    _cache("a", "a", "b")
    info, stats = run_command("cache", "info"), run_command("cache", "stats")
    assert stats == info
    assert info[1].splitlines()[0] == "3 cached responses, 3 characters of text"


# --- `evalsite import`'s next: line works as printed -----------------------------------------

FIXTURES = Path(__file__).parents[1] / "fixtures" / "imports"


def _next_line(out: str) -> str:
    (line,) = [line for line in out.splitlines() if line.startswith("next: ")]
    return line.removeprefix("next: ")


def _run_as_printed(commands: str) -> list[tuple[int, str, str]]:
    """Each `evalsite …` command of `a && b` through its real verb, stopping at a failure."""
    done = []
    for command in commands.split(" && "):
        words = shlex.split(command)
        assert words[0] == "evalsite", command
        done.append(run_command(*words[1:]))
        if done[-1][0] != 0:
            break
    return done


def test_evalpin_s_next_line_runs_the_suite_with_its_replies(tmp_path):
    PriceTable.objects.ensure_default()
    (tmp_path / "suite.txt").write_text("case greet\nprompt: Greet Ana.\nexpect contains: Ana\n")
    (tmp_path / "replies.txt").write_text("reply greet\n| Hello Ana!\nreply greet\n| Hi there.\n")
    out_dir = tmp_path / "out"
    code, out, err = run_command(
        "import", "evalpin", str(tmp_path / "suite.txt"), "--replies",
        str(tmp_path / "replies.txt"), "--repeats", "2", "--out", str(out_dir),
    )  # fmt: skip
    assert code == 0, err
    suite = out_dir / "suite.yaml"
    assert _next_line(out) == f"evalsite validate {suite} && evalsite run {suite}"
    validated, ran = _run_as_printed(_next_line(out))
    assert validated[0] == 0
    # evalpin's README: the first run passes one attempt of two and exits 1 on its gate
    assert ran[0] == 1 and "  scripted/evalpin: pass^2 0/1, pass@2 1/1" in ran[1].splitlines()
    assert "simulated" not in ran[1]


def test_evalblink_s_next_line_names_the_price_rows_then_works_once_they_are_added(tmp_path):
    PriceTable.objects.ensure_default()
    out_dir = tmp_path / "out"
    code, out, err = run_command(
        "import", "evalblink", str(FIXTURES / "evalblink" / "benchmark.yaml"), "--out",
        str(out_dir),
    )  # fmt: skip
    assert code == 0, err
    suite = out_dir / "ticket-routing.yaml"
    needed = [
        "openrouter/anthropic/claude-haiku-4.5",
        "openrouter/google/gemini-2.5-flash",
        "openrouter/openai/gpt-4o-mini",
    ]
    steps, then = _next_line(out).split(", then: ")
    assert steps == (
        f"add price rows for {', '.join(needed)} (the admin's Prices, or `evalsite prices "
        "import FILE --activate`; `evalsite models --catalog` shows OpenRouter's prices)"
    )
    then, now = then.split("; or now, the fake model in their place: ")
    assert then == f"evalsite validate {suite} && evalsite run {suite} --fake"
    assert _run_as_printed(then)[0][0] == 2  # not yet: the rows are missing
    assert now == f"evalsite run {suite} --models fake/small --fake --judge fake/small"
    assert _run_as_printed(now)[0][0] in (0, 1)  # but this runs now
    rows = {str(row.model): (row.input_per_mtok, row.output_per_mtok)
            for row in PriceTable.objects.get(active=True).prices.all()}  # fmt: skip
    PriceTable.objects.update(active=False)
    make_price_table(rows | dict.fromkeys(needed, ("0.1", "0.4")), active=True)
    validated, ran = _run_as_printed(then)
    assert validated[0] == 0 and ran[0] in (0, 1), ran
    assert "simulated" in ran[1]


def _import_bench(tmp_path, models_and_evaluation: str, more_cases: str = "") -> tuple[str, Path]:
    """An evalblink benchmark "Free only" of one exact-match case (and `more_cases`)
    imported to `tmp_path`: the command's stdout and the suite it wrote."""
    PriceTable.objects.ensure_default()
    source = tmp_path / "bench.yaml"
    source.write_text(
        'name: "Free only"\n' + models_and_evaluation
        + 'prompts: [{id: v1, template: "Label {{ text }}"}]\n'
        "test_cases:\n  - {id: a, variables: {text: hi}, expected_output: greeting}\n"
        + more_cases
    )  # fmt: skip
    code, out, err = run_command("import", "evalblink", str(source), "--out", str(tmp_path))
    assert code == 0, err
    return out, tmp_path / "free-only.yaml"


def test_a_suite_with_no_model_translated_gets_a_next_line_naming_one(tmp_path):
    out, suite = _import_bench(  # no evalsite model string
        tmp_path, 'models: ["poolside/laguna xs"]\nevaluation: exact_match\n'
    )
    assert _next_line(out) == (
        f"evalsite validate {suite} && evalsite run {suite} --models fake/small --fake"
    )
    validated, ran = _run_as_printed(_next_line(out))
    assert validated[0] == 0 and ran[0] in (0, 1), ran


def test_an_openrouter_free_variant_is_a_contestant_priced_at_zero(tmp_path):
    """evalblink's benchmarks name OpenRouter's free variants (`…:free`): they are
    contestants, priced at $0 without a row and said so, and the import's next line runs
    as printed (they were listed, and a judge_model ending in :free left graded cases with
    no judge)."""
    out, suite = _import_bench(
        tmp_path,
        'models: ["poolside/laguna-xs-2.1:free"]\n'
        'evaluation: {judge_model: "openai/gpt-oss-120b:free"}\n',
        "  - {id: b, variables: {text: yo}, evaluation: llm_judge, criteria: polite}\n",
    )
    assert _next_line(out) == f"evalsite validate {suite} && evalsite run {suite} --fake"
    validated, ran = _run_as_printed(_next_line(out))
    assert validated[0] == 0, validated
    assert (
        "note: openrouter/poolside/laguna-xs-2.1:free is priced at $0: OpenRouter's free "
        "variant" in validated[1]
    )
    assert "openrouter/openai/gpt-oss-120b:free is priced at $0" in validated[1]
    assert ran[0] in (0, 1), ran


# --- evalpin's per-case table after a run with repeats ---------------------------------------

PIN_SUITE = """\
suite: pin
version: 1
models: [scripted/evalpin]
replies: replies.yaml
repeats: 3
tasks:
  - id: evalpin
    prompt: "{{prompt}}"
    cases:
      - {id: greet, vars: {prompt: Greet Ana.}, checks: [{contains: Ana}]}
      - {id: bye, vars: {prompt: Bye Bo.}, checks: [{contains: Bo}]}
      - {id: hey, vars: {prompt: Hey Cy.}, checks: [{contains: Cy}]}
"""
PIN_REPLIES = """\
evalpin:
  evalpin/greet: [Hello Ana!, Hi there., Hi there.]
  evalpin/bye: [Bye Bo, Bye Bo, Bye Bo]
  evalpin/hey: [Hey Cy, Hey Cy, hey]
"""


def _case_table(out: str) -> list[str]:
    lines = out.splitlines()
    start = lines.index("CASE           PASSED  RATE  ALL")
    return lines[start : start + 4]


def test_a_run_with_repeats_prints_each_case_s_passed_attempts_rate_and_all(tmp_path):
    suite = write_scripted_suite(tmp_path, PIN_SUITE, PIN_REPLIES)
    code, out, err = run_command("run", str(suite))
    assert code == 0, err
    # RATE is a whole percentage, halves up (1/3 is 33%, 2/3 67%), as evalpin prints it
    assert _case_table(out) == [
        "CASE           PASSED  RATE  ALL",
        "evalpin/greet  1/3     33%   no",
        "evalpin/bye    3/3     100%  yes",
        "evalpin/hey    2/3     67%   no",
    ]


def test_cases_prints_the_table_for_a_run_of_one_repeat_and_json_never(tmp_path):
    suite = write_scripted_suite(tmp_path, PIN_SUITE.replace("repeats: 3", "repeats: 1"),
                                 PIN_REPLIES)  # fmt: skip
    _, plain, _ = run_command("run", str(suite))
    assert "PASSED  RATE  ALL" not in plain
    _, out, _ = run_command("run", str(suite), "--cases")
    assert _case_table(out)[1:] == [
        "evalpin/greet  1/1     100%  yes",
        "evalpin/bye    1/1     100%  yes",
        "evalpin/hey    1/1     100%  yes",
    ]
    _, printed, _ = run_command("run", str(suite), "--cases", "--json")
    assert json.loads(printed)["status"] == "done"


# --- evaling's importer: expected values, and the suite's file name --------------------------

EVALING = """\
models:
  - {id: gpt-4o-mini, provider: openai}
variants:
  - {name: plain, prompt: "Answer: {{ question }}"}
cases:
  file: cases.jsonl
scorecard:
  - {criterion: right, weight: 1, scorer: {type: python, file: scorers/right.py}}
  - {criterion: polite, weight: 1, scorer: {type: not-contains, value: "Here's"}}
"""
EVALING_CASES = (
    '{"id": "q1", "question": "Refund time?", "expected": "10 business days"}\n'
    '{"id": "q2", "question": "Express?"}\n'
)


def _evaling_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "rag-pipeline"
    folder.mkdir()
    (folder / "eval.yaml").write_text(EVALING)
    (folder / "cases.jsonl").write_text(EVALING_CASES)
    return folder


def test_an_expected_value_no_check_reads_is_listed_untranslated(tmp_path):
    folder = _evaling_folder(tmp_path)
    code, out, err = run_command("import", "evaling", str(folder / "eval.yaml"), "--out",
                                 str(tmp_path / "out"))  # fmt: skip
    assert code == 0, err
    cases = (tmp_path / "out" / "cases.imported.jsonl").read_text()
    assert "10 business days" not in cases
    assert (
        f"untranslated: {folder / 'cases.jsonl'}:1: case 1: expected: no translated check "
        "compares with it (a python check receives the case's vars: add it there)"
    ) in out.splitlines()
    assert "case 2: expected" not in out  # q2 has none


def test_an_eval_yaml_imported_from_its_own_folder_is_named_after_the_folder(tmp_path, monkeypatch):
    folder = _evaling_folder(tmp_path)
    monkeypatch.chdir(folder)
    code, out, err = run_command("import", "evaling", "eval.yaml", "--out", "out")
    assert code == 0, err
    assert "wrote out/rag-pipeline.yaml" in out.splitlines()
    assert not (folder / "out" / "evaling.yaml").exists()


# --- evaling's --model / --variant filters ----------------------------------------------------

GRID = """\
suite: grid
version: 1
models: [scripted/a, scripted/a@short, scripted/b, scripted/b@short]
replies: replies.yaml
variants:
  short: {system: "Be brief."}
tasks:
  - id: t
    judge: false
    prompt: "Say {{w}}"
    cases: [{id: one, vars: {w: one}, checks: [{contains: one}]}]
"""
GRID_REPLIES = "a:\n  t/one: [one]\nb:\n  t/one: [two]\n"


@pytest.mark.parametrize(
    ("filters", "contestants"),
    [
        (["--variant", "short"], ["scripted/a@short", "scripted/b@short"]),
        (["--variant", "base"], ["scripted/a", "scripted/b"]),
        (["--model", "scripted/b"], ["scripted/b", "scripted/b@short"]),
        (["--model", "b", "--variant", "short"], ["scripted/b@short"]),  # evaling's bare id
        (["--model", "a", "--model", "b", "--variant", "short", "--variant", "base"],
         ["scripted/a", "scripted/a@short", "scripted/b", "scripted/b@short"]),
        (["--models", "scripted/b@short,scripted/a", "--model", "scripted/a"], ["scripted/a"]),
    ],
)  # fmt: skip
def test_model_and_variant_run_the_sub_matrix(tmp_path, filters, contestants):
    suite = write_scripted_suite(tmp_path, GRID, GRID_REPLIES)
    code, printed, err = run_command("run", str(suite), "--json", *filters)
    assert code == 0, err
    assert json.loads(printed)["contestants"] == contestants


def test_a_filter_that_matches_no_contestant_is_one_error(tmp_path):
    suite = write_scripted_suite(tmp_path, GRID, GRID_REPLIES)
    code, out, err = run_command("run", str(suite), "--model", "c", "--variant", "short")
    assert code == 2 and out == ""
    assert err.strip() == (
        "error: --model c --variant short match none of the contestants: scripted/a, "
        "scripted/a@short, scripted/b, scripted/b@short"
    )


# --- evalblink's dry-run budget verdict --------------------------------------------------------


@pytest.mark.parametrize(
    ("cap", "code", "verdict"),
    [
        ("2", 0, "within the budget: estimate $0.0167 <= cap $2.0000"),
        ("0.01", 4, "over the budget: estimate $0.0167 > cap $0.0100; the run would be refused "
                    "(exit 4), nothing is spent"),
    ],
)  # fmt: skip
def test_a_dry_run_says_whether_the_estimate_is_within_the_budget(tmp_path, cap, code, verdict):
    suite = write_scripted_suite(tmp_path, GRID, GRID_REPLIES)
    done, out, err = run_command(
        "run", str(suite), "--dry-run", "--fake", "--models", "fake/small,fake/large",
        "--max-cost", cap,
    )  # fmt: skip
    assert done == code, err
    assert verdict in out.splitlines()
    assert out.splitlines()[0].startswith("estimate (simulated: --fake): $0.0167 against a cap")


# --- evalblink's best-combination gate --------------------------------------------------------

BEST = GRID.replace("tasks:", "gate: {min_best_score: THRESHOLD}\ntasks:").replace(
    "cases: [{id: one, vars: {w: one}, checks: [{contains: one}]}]",
    "cases:\n      - {id: one, vars: {w: one}, checks: [{contains: o}]}\n"
    "      - {id: two, vars: {w: two}, checks: [{contains: t}]}",
)
BEST_REPLIES = "a:\n  t/one: [one]\n  t/two: [two]\nb:\n  t/one: [nix]\n  t/two: [nah]\n"


@pytest.mark.parametrize(
    ("threshold", "code", "status", "line"),
    [
        ("0.9", 0, "passed", None),
        ("1.5", None, None, None),  # refused by validation: a rate is 0-1
    ],
)
def test_min_best_score_passes_when_the_best_combination_reaches_it(
    tmp_path, threshold, code, status, line
):
    suite = write_scripted_suite(tmp_path, BEST.replace("THRESHOLD", threshold), BEST_REPLIES)
    done, printed, err = run_command("run", str(suite), "--json")
    if code is None:
        assert done == 2 and "gate.min_best_score" in err
        return
    assert done == code, err
    (gate,) = json.loads(printed)["gates"]
    assert gate == {
        "gate": "min_best_score", "subject": "scripted/a", "status": status, "figure": 1.0,
        "threshold": 0.9,
        "message": "best combination scripted/a: score 1.000 >= 0.900 (of 4 combinations)",
        "measure": "",
    }  # fmt: skip


def test_min_best_score_fails_naming_the_best_combination_and_its_score(tmp_path):
    suite = write_scripted_suite(tmp_path, BEST.replace("THRESHOLD", "0.9"),
                                 BEST_REPLIES.replace("[two]", "[nope]"))  # fmt: skip
    done, out, _ = run_command("run", str(suite))
    assert done == 1
    assert (
        "  gate failed: min_best_score - best combination scripted/a: score 0.500 < 0.900 "
        "(of 4 combinations)"
    ) in out.splitlines()
