"""Issue 28 item 1: a prompt variant is graded and judged on the prompt it was sent, not on
the task as written. A grade request carries its contestant's rendered prompt; a pair whose
two sides were sent different prompts shows the judge each side's prompt; a pair whose sides
saw the same prompt keeps today's request (so existing caches still hit); and editing only
the base prompt re-grades nothing of a variant whose own prompt did not change."""

from __future__ import annotations

import hashlib
import json
import pathlib
import shutil
from types import SimpleNamespace

import pytest

from evalsite.core.judging import PairSide, pair_requests
from evalsite.core.report.pairing import paired_changes
from evalsite.core.suites import load_suite, parse_suite
from runs.engine import judging
from runs.engine.runner import execute
from runs.models import Judgement, PriceTable, Run, SuiteVersion
from runs.planning.planner import RunOptions, make_plan, store_plan
from tests.helpers.cli import evalsite

MULTIMODAL = pathlib.Path(__file__).parents[2] / "examples" / "multimodal"
GOLDEN = """\
suite: golden
version: 1
models: [fake/a, fake/b]
judge: {model: fake/judge, rubric: Prefer the warmer greeting.}
variants:
  terse: {params: {max_tokens: 50}}
  french: {prompt: "Say hello to {{name}} in French."}
tasks:
  - id: hello
    system: You are polite.
    prompt: "Say hello to {{name}} in English."
    rubric: Names the person.
    grade: {rubric: A warm greeting.}
    cases:
      - {id: ana, vars: {name: Ana}}
"""


def _digest(request) -> str:
    return hashlib.sha256(json.dumps(request.to_json(), sort_keys=True).encode()).hexdigest()


def _golden():
    return parse_suite(GOLDEN.encode(), filename="golden.yaml", origin="upload")


SIDES = PairSide("Hello Ana"), PairSide("Hi Ana!", "fail", "AssertionError")
# The requests' digests as the code before issue 28 built them (task as written): a pair or
# a grade whose prompt is the task's own must keep them, or every cached judge call is lost.
BEFORE_PAIR = [
    "69014de312a1139fc488401ce347821a7b4b702eea2eb6877f35da3b92fd0382",
    "b9581c035049155fb9be7b68928e8f96f39bdd5451eaea0dd24601a37b0deaca",
]
BEFORE_GRADE = "5f5e1c404c324efbcf91fd87615b42e6addd3794a94831e05a7535916d4d5cae"


@pytest.mark.parametrize("contestants", [("fake/a", "fake/b"), ("fake/a", "fake/b@terse")])
def test_a_pair_whose_sides_saw_the_same_prompt_keeps_its_request_byte_for_byte(contestants):
    requests = pair_requests(
        _golden(), "fake/judge", ("hello", "ana", 0), *SIDES, contestants=contestants
    )
    assert [_digest(request) for _, request in requests] == BEFORE_PAIR


@pytest.mark.parametrize("contestant", ["fake/a", "fake/a@terse"])
def test_a_grade_of_an_answer_sent_the_task_as_written_keeps_its_request(contestant):
    suite = _golden()
    answer = SimpleNamespace(
        task_id="hello", case_id="ana", repeat=0, text="Hello Ana", run_id=None,
        contestant=contestant,
    )  # fmt: skip
    request = judging.grade_request(suite, answer, "fake/judge")
    assert _digest(request) == BEFORE_GRADE


def test_a_pair_of_base_and_variant_shows_the_judge_each_sides_prompt():
    requests = dict(
        pair_requests(
            _golden(), "fake/judge", ("hello", "ana", 0), *SIDES,
            contestants=("fake/a", "fake/a@french"),
        )
    )  # fmt: skip
    first = requests[1].messages[-1]["content"]
    english = "You are polite.\n\nSay hello to Ana in English."
    french = "You are polite.\n\nSay hello to Ana in French."
    assert f'<task answer="1">\n{english}\n</task>' in first
    assert f'<task answer="2">\n{french}\n</task>' in first
    assert "were sent different prompts" in first
    # order 2 shows the candidate first: its prompt moves with its answer
    second = requests[2].messages[-1]["content"]
    assert f'<task answer="1">\n{french}\n</task>' in second
    assert f'<task answer="2">\n{english}\n</task>' in second
    assert second.index("Hi Ana!") < second.index("Hello Ana")


def test_two_variants_that_were_sent_one_prompt_are_shown_one_task():
    requests = pair_requests(
        _golden(), "fake/judge", ("hello", "ana", 0), *SIDES,
        contestants=("fake/a@french", "fake/b@french"),
    )  # fmt: skip
    for _, request in requests:
        user = request.messages[-1]["content"]
        assert "<task>\nYou are polite.\n\nSay hello to Ana in French.\n</task>" in user
        assert "<task answer=" not in user and "in English" not in user


# --- through a run --------------------------------------------------------------------------

NAMES = ["Ana", "Bo", "Cy", "Di", "Ed", "Fa", "Gu", "Hal", "Ivo", "Jo", "Kim", "Lu"]
RUN_SUITE = """\
suite: varg
version: 1
models: [openai/gpt-4.1-nano, openai/gpt-4.1-nano@french]
judge: {{model: anthropic/claude-haiku-4-5}}
variants:
  french: {{prompt: "{french}"}}
scorecard:
  - {{criterion: quality, weight: 1, scorer: grade}}
gate: {{max_regression_points: 5}}
tasks:
  - id: hello
    prompt: "{base}"
    grade: {{rubric: "A warm greeting that names the person.", threshold: 0.5}}
    cases:
{cases}
"""
ENGLISH = "Say hello to {{name}} in English."
FRENCH = "Say hello to {{name}} in French."


def _suite_text(base: str = ENGLISH, french: str = FRENCH) -> str:
    cases = "\n".join(f"      - {{id: c{i}, vars: {{name: {n}}}}}" for i, n in enumerate(NAMES))
    return RUN_SUITE.format(base=base, french=french, cases=cases)


def _run(text: str) -> Run:
    PriceTable.objects.ensure_default()
    loaded = parse_suite(text.encode(), filename="varg.yaml", origin="upload")
    version, _ = SuiteVersion.objects.register(loaded, text, origin="upload")
    return execute(store_plan(make_plan(version, loaded, RunOptions(fake=True))).id)


def _grades(run: Run, contestant: str) -> list[Judgement]:
    return list(
        Judgement.objects.filter(
            run=run, kind=Judgement.Kind.GRADE, answer__contestant=contestant
        ).order_by("case_id")
    )


def _asked(call: Judgement) -> str:
    """The judge call's question: its first user message (a retry appends the reply and a
    reminder after it)."""
    return next(m["content"] for m in call.request["messages"] if m["role"] == "user")


@pytest.mark.django_db(transaction=True)
def test_a_variant_answer_is_graded_and_judged_on_its_own_prompt():
    run = _run(_suite_text())
    assert run.status == Run.Status.DONE, run.detail

    french = _grades(run, "openai/gpt-4.1-nano@french")
    assert len(french) == len(NAMES)
    user = _asked(french[0])
    assert "<task>\nSay hello to Ana in French.\n</task>" in user
    assert "in English" not in user
    base = _asked(_grades(run, "openai/gpt-4.1-nano")[0])
    assert "<task>\nSay hello to Ana in English.\n</task>" in base

    pair = Judgement.objects.filter(run=run, kind=Judgement.Kind.PAIR, case_id="c0", order=1)
    user = _asked(pair.get())
    assert '<task answer="1">\nSay hello to Ana in English.\n</task>' in user
    assert '<task answer="2">\nSay hello to Ana in French.\n</task>' in user


@pytest.mark.django_db(transaction=True)
def test_a_grade_is_cached_while_what_it_was_shown_is_unchanged():
    first = _run(_suite_text())
    edited_base = _run(_suite_text(base="Say a warm hello to {{name}} in English."))
    french = "openai/gpt-4.1-nano@french"

    # the variant's own prompt did not change: its answers and their grades come from the cache
    assert all(grade.cached for grade in _grades(edited_base, french))
    scores = [(g.case_id, g.grade_score) for g in _grades(first, french)]
    assert [(g.case_id, g.grade_score) for g in _grades(edited_base, french)] == scores
    # the base answers were sent a new prompt: answered and graded again
    assert not any(grade.cached for grade in _grades(edited_base, "openai/gpt-4.1-nano"))

    edited_variant = _run(_suite_text(french="Say a warm hello to {{name}} in French."))
    assert not any(grade.cached for grade in _grades(edited_variant, french))
    assert all(grade.cached for grade in _grades(edited_variant, "openai/gpt-4.1-nano"))


def test_the_regression_gate_and_mcnemar_of_an_unchanged_variant_do_not_move(tmp_path):
    """The issue's run: pin a run, edit only the base prompt, run again. The variant was sent
    the same prompt both times: its scorecard score, its pass rate's exact test and its
    regression-gate line stay where they were."""
    data = tmp_path / "data"
    before, after = tmp_path / "v1.yaml", tmp_path / "v2.yaml"
    before.write_text(_suite_text())
    after.write_text(_suite_text(base="Say a warm hello to {{name}} in English."))
    first = evalsite(data, "run", str(before), "--fake")
    assert first.returncode == 0, first.stdout + first.stderr
    report_a = json.loads(evalsite(data, "report", "latest", "--format", "json").stdout)
    pinned = evalsite(data, "baseline", "set", "latest")
    assert pinned.returncode == 0, pinned.stdout + pinned.stderr
    second = evalsite(data, "run", str(after), "--fake")
    report_b = json.loads(evalsite(data, "report", "latest", "--format", "json").stdout)

    french = "openai/gpt-4.1-nano@french"
    changes = paired_changes(report_a, report_b)
    passed = changes["passed"][french]["overall"]
    assert (passed["lost"], passed["gained"]) == (0, 0), passed
    assert changes["score"][french]["overall"]["delta"] == 0
    lines = [g for g in report_b["gates"] if g["subject"] == french and "scorecard" in g["message"]]
    assert lines and all(g["status"] == "passed" and g["figure"] == 0 for g in lines), lines
    assert "scorecard score" not in next(
        (line for line in second.stdout.splitlines() if "gate failed" in line and french in line),
        "",
    ), second.stdout


def _media_suite(tmp_path):
    shutil.copytree(MULTIMODAL / "fixtures", tmp_path / "fixtures")
    (tmp_path / "suite.yaml").write_text(
        "suite: media\nversion: 1\n"
        "models: [google/gemini-2.5-flash, google/gemini-2.5-flash@receipt]\n"
        "judge: {model: google/gemini-2.5-flash}\n"
        "variants:\n"
        "  receipt: {prompt: [{role: user, content: [{text: 'Read the receipt.'}, {file: slip}]}]}\n"
        "  words: {prompt: 'Say what the invoice says.'}\n"
        "tasks:\n"
        "  - id: read\n"
        "    prompt: [{role: user, content: [{text: 'Read the invoice.'}, {image: scan}]}]\n"
        "    grade: {rubric: Reads every total.}\n"
        "    cases:\n"
        "      - id: one\n"
        "        files: {scan: fixtures/invoice-0042.png, slip: fixtures/receipt-1187.pdf}\n"
    )
    return load_suite(tmp_path / "suite.yaml")


def _parts(request) -> list[tuple[str, str]]:
    return [
        (part["type"], part.get("name", ""))
        for message in request.messages
        if isinstance(message["content"], list)
        for part in message["content"]
        if part["type"] != "text"
    ]


def test_a_grade_and_a_pair_carry_the_files_each_contestant_was_sent(tmp_path):
    suite = _media_suite(tmp_path)

    def grade(contestant: str):
        answer = SimpleNamespace(
            task_id="read", case_id="one", repeat=0, text="42.00", run_id=None,
            contestant=contestant,
        )  # fmt: skip
        return judging.grade_request(suite, answer, "google/gemini-2.5-flash")

    assert _parts(grade("google/gemini-2.5-flash")) == [("image", "scan")]
    assert _parts(grade("google/gemini-2.5-flash@receipt")) == [("file", "slip")]
    words = grade("google/gemini-2.5-flash@words")
    assert _parts(words) == [] and "Say what the invoice says." in words.messages[-1]["content"]

    requests = pair_requests(
        suite, "google/gemini-2.5-flash", ("read", "one", 0), *SIDES,
        contestants=("google/gemini-2.5-flash", "google/gemini-2.5-flash@receipt"),
    )  # fmt: skip
    for _, request in requests:  # both sides' files, each once, whichever order
        assert _parts(request) == [("image", "scan"), ("file", "slip")]
