"""`evalsite import`: each format's fixture imports, validates and runs offline, and its
checks give the verdicts the source tool gives. evalpin's README example is run as its
README runs it: two runs of one scripted contestant with two attempts each."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import TestCase
from django.urls import reverse

from evalsite.core.suites import load_suite
from runs.engine.runner import execute
from runs.models import Answer, Price, PriceTable, Run, Suite, SuiteVersion
from runs.planning.planner import RunOptions, make_plan, store_plan
from tests.helpers.factories import make_user

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "imports"
HTMX = {"HTTP_HX_REQUEST": "true"}


def _import(*args: str) -> int:
    with pytest.raises(SystemExit) as caught:
        call_command("import", *args)
    return caught.value.code


def _run(path: Path, **options) -> Run:
    PriceTable.objects.ensure_default()
    loaded = load_suite(path)
    version, _ = SuiteVersion.objects.register_file(path, loaded)
    run = execute(store_plan(make_plan(version, loaded, RunOptions(**options))).id)
    assert run.status == Run.Status.DONE, run.detail
    return run


def _passed(run: Run, contestant: str) -> dict[str, list[bool]]:
    """task/case -> each repeat's pass, as the report counts it."""
    out: dict[str, list[bool]] = {}
    answers = Answer.objects.filter(run=run, contestant=contestant).order_by("repeat")
    for answer in answers:
        passed = (
            bool(answer.passed)
            and answer.grade_passed is not False
            and answer.match_passed is not False
        )
        out.setdefault(f"{answer.task_id}/{answer.case_id}", []).append(passed)
    return out


@pytest.mark.django_db(transaction=True)
def test_evalings_mock_models_run_as_scripted_ones_with_the_replies_evaling_would_give(tmp_path):
    """evaling's mock provider (deterministic, offline) is evalsite's scripted one: a mock
    with a fixed response answers it to every case; one without echoes the last user
    message, as evalsite renders it for each variant. The import runs as written."""
    source = tmp_path / "src" / "eval.yaml"
    source.parent.mkdir()
    source.write_text(
        "models:\n"
        "  - {id: mock-echo, provider: mock}\n"
        "  - {id: mock-fixed, provider: mock, params: {response: FIXED ANSWER}}\n"
        "variants:\n"
        "  - {name: plain, prompt: [{role: user, content: '{{ question }}'}]}\n"
        "  - {name: quoted, prompt: [{role: system, content: Be brief.},\n"
        "                            {role: user, content: 'Q: {{ question }}'}]}\n"
        "cases:\n"
        "  - {id: greeting, vars: {question: hello?}, expected: hello?}\n"
        "  - {id: fixed, vars: {question: say it}, expected: FIXED ANSWER}\n"
        "scorecard:\n"
        "  - {criterion: right, scorer: {type: exact}}\n"
    )
    out = tmp_path / "out"
    assert _import("evaling", str(source), "--out", str(out)) == 0
    suite = yaml.safe_load((out / "src.yaml").read_text())
    assert suite["replies"] == "src.replies.yaml"
    assert suite["models"][0] == "scripted/mock-echo@plain"
    run = _run(out / "src.yaml")
    assert _passed(run, "scripted/mock-echo@plain") == {
        "eval/greeting": [True],
        "eval/fixed": [False],
    }
    assert _passed(run, "scripted/mock-echo@quoted") == {
        "eval/greeting": [False],
        "eval/fixed": [False],
    }
    assert _passed(run, "scripted/mock-fixed@plain") == {
        "eval/greeting": [False],
        "eval/fixed": [True],
    }


def _price_openrouter_models() -> None:
    """Rows for the fixture's OpenRouter models, as an admin adds them."""
    PriceTable.objects.ensure_default()
    table = PriceTable.objects.active()
    for model in ("openai/gpt-4o-mini", "anthropic/claude-haiku-4.5", "google/gemini-2.5-flash"):
        Price.objects.get_or_create(
            table=table,
            model=f"openrouter/{model}",
            defaults={"input_per_mtok": Decimal("0.1"), "output_per_mtok": Decimal("0.4")},
        )


def _evalpin_readme(folder: Path, second: str) -> None:
    # The README's printf commands, byte for byte.
    (folder / "suite.txt").write_text("case greet\nprompt: Greet Ana.\nexpect contains: Ana\n")
    (folder / "replies.txt").write_text(f"reply greet\n| Hello Ana!\nreply greet\n| {second}\n")


@pytest.mark.django_db(transaction=True)
def test_evalpin_readme_example_gives_its_pass_k_in_both_runs(tmp_path, capsys):
    _evalpin_readme(tmp_path, "Hi there.")
    out = tmp_path / "out"
    args = ["evalpin", str(tmp_path / "suite.txt"), "--replies", str(tmp_path / "replies.txt")]
    assert _import(*args, "--repeats", "2", "--out", str(out)) == 0
    assert "everything translated" in capsys.readouterr().out

    first = _run(out / "suite.yaml")
    # evalpin prints: greet 1/2 50% no; pass^2 0/1, pass@2 1/1; exit 1
    pass_k = first.report["per_contestant"]["scripted/evalpin"]["pass_k"]
    assert (pass_k["k"], pass_k["pass_all"], pass_k["pass_any"], pass_k["cases"]) == (2, 0, 1, 1)
    assert _passed(first, "scripted/evalpin") == {"evalpin/greet": [True, False]}
    assert not first.report["gates_passed"]  # evalpin's run exits 1

    _evalpin_readme(tmp_path, "Hello again, Ana.")
    assert _import(*args, "--repeats", "2", "--out", str(out)) == 2  # no --force: refused
    assert "pass --force to overwrite" in capsys.readouterr().err
    assert _import(*args, "--repeats", "2", "--out", str(out), "--force") == 0
    second = _run(out / "suite.yaml")
    # evalpin prints: greet 2/2 100% yes; pass^2 1/1, pass@2 1/1; exit 0
    pass_k = second.report["per_contestant"]["scripted/evalpin"]["pass_k"]
    assert (pass_k["pass_all"], pass_k["pass_any"]) == (1, 1)
    assert second.report["gates_passed"]


@pytest.mark.django_db(transaction=True)
def test_an_evalpin_fail_entry_is_a_failed_attempt_that_fails_the_run(tmp_path):
    """evalpin exits 1 when any attempt fails, a `fail` entry included; the imported gate
    (min_pass_all_rate: 1) counts the scripted error as the failed attempt it is."""
    (tmp_path / "suite.txt").write_text("case greet\nprompt: Greet Ana.\nexpect contains: Ana\n")
    (tmp_path / "replies.txt").write_text("reply greet\n| Hello Ana!\nfail greet rate limited\n")
    args = ["evalpin", str(tmp_path / "suite.txt"), "--replies", str(tmp_path / "replies.txt")]
    assert _import(*args, "--repeats", "2", "--out", str(tmp_path / "out")) == 0
    run = _run(tmp_path / "out" / "suite.yaml")
    [gate] = run.report["gates"]
    assert (gate["gate"], gate["status"], gate["figure"]) == ("min_pass_all_rate", "failed", 0.0)
    assert not run.report["gates_passed"]


def test_evalpin_results_import_writes_the_baseline_json(tmp_path, capsys):
    (tmp_path / "first.txt").write_text("evalpin-results 1\ngreet 1 2\n")
    assert _import("auto", str(tmp_path / "first.txt"), "--out", str(tmp_path)) == 0
    document = json.loads((tmp_path / "first.baseline.json").read_text())
    assert document["cases"] == [
        {"task": "evalpin", "case": "greet", "evalpin_id": "greet", "passed": 1, "total": 2}
    ]


def test_a_bad_source_exits_2_with_its_file_and_line(tmp_path, capsys):
    (tmp_path / "suite.txt").write_text("case greet\nprompt: hi\nexpect sometimes: x\n")
    assert _import("evalpin", str(tmp_path / "suite.txt"), "--out", str(tmp_path)) == 2
    assert f"error: {tmp_path / 'suite.txt'}:3: unknown check kind 'sometimes'" in (
        capsys.readouterr().err
    )
    assert not (tmp_path / "suite.yaml").exists()


@pytest.mark.django_db(transaction=True)
def test_evalblink_import_runs_scripted_with_its_exact_match_and_judge_verdicts(tmp_path, capsys):
    PriceTable.objects.ensure_default()
    out = tmp_path / "out"
    assert (
        _import("evalblink", str(FIXTURES / "evalblink" / "benchmark.yaml"), "--out", str(out)) == 0
    )
    printed = capsys.readouterr().out
    assert "benchmark.yaml:9: model" not in printed  # the :free model is translated
    # OpenRouter models need price rows before `evalsite validate` accepts the suite
    assert "note: unknown model 'openrouter/openai/gpt-4o-mini'" in printed
    # the note is the one message every door gives, with the commands that add the row
    assert "`evalsite prices import prices.yaml --activate` (or add the row in the admin)\n" in (
        printed
    )
    _price_openrouter_models()
    with pytest.raises(SystemExit) as validated:
        call_command("validate", str(out / "ticket-routing.yaml"))
    assert validated.value.code == 0
    replies = out / "replies.yaml"
    replies.write_text(
        "m:\n"
        '  cases/t-001: ["  BILLING\\n"]\n'  # evalblink's exact_match: trimmed, any case
        "  cases/t-002: [shipping]\n"
        '  weighted-match/t-003: [\'[{"use_case": "billing", "percent": 0.75, "order": 1},'
        ' {"use_case": "shipping", "percent": 0.25, "order": 2}]\']\n'
        "judge:\n"
        '  grade/cases/t-002: \'{"reasoning": "shipping, one word", "score": 4}\'\n'
    )
    run = _run(
        out / "ticket-routing.yaml",
        models=["scripted/m"],
        judge="scripted/judge",
        replies=str(replies),
    )
    # exact_match passes; a 4 of 5 is 0.75 >= judge_threshold 0.75; percent is within 0.1
    assert _passed(run, "scripted/m") == {
        "cases/t-001": [True],
        "cases/t-002": [True],
        "weighted-match/t-003": [True],
    }


@pytest.mark.django_db(transaction=True)
def test_promptfoo_import_runs_scripted_with_promptfoos_verdicts(tmp_path):
    out = tmp_path / "out"
    source = FIXTURES / "promptfoo" / "promptfooconfig.yaml"
    assert _import("promptfoo", str(source), "--out", str(out)) == 0
    replies = out / "replies.yaml"
    replies.write_text(
        "m:\n"
        "  tests/france: [paris]\n"  # equals Paris fails (case), contains-any passes
        "  tests/japan: [Tokyo]\n"  # icontains tokyo, starts-with Tok
        "  tests/italy: [As an AI, Rome]\n"  # defaultTest's not-icontains 'as an ai' fails
        "  tests/peru: [Lima]\n"  # contains-all Li, ma
        "  tests/egypt: [Cairo]\n"  # a bare __expected is equals
        "judge:\n"
        '  grade/tests/japan: \'{"reasoning": "Tokyo only", "score": 5}\'\n'
    )
    run = _run(
        out / "promptfoo.yaml", models=["scripted/m"], judge="scripted/judge", replies=str(replies)
    )
    assert _passed(run, "scripted/m") == {
        "tests/france": [False],
        "tests/japan": [True],
        "tests/italy": [False],
        "tests/peru": [True],
        "tests/egypt": [True],
    }


@pytest.mark.django_db(transaction=True)
def test_evaling_import_runs_with_fake_and_scripted(tmp_path):
    out = tmp_path / "out"
    assert _import("evaling", str(FIXTURES / "evaling" / "eval.yaml"), "--out", str(out)) == 0
    assert (out / "fixtures" / "dog.png").read_bytes().startswith(b"\x89PNG")
    fake = _run(out / "evaling.yaml", fake=True)
    assert Answer.objects.filter(run=fake).count() == 4 * 2  # 2 models x 2 variants x 2 cases
    replies = out / "replies.yaml"
    replies.write_text(
        "m:\n"
        '  eval/dog: [\'{"answer": "A Dog."}\']\n'  # schema passes; contains dog, any case
        "  eval/cat: ['It is a cat.']\n"  # not JSON: the schema criterion fails
        "judge:\n"
        '  grade/eval/dog: \'{"reasoning": "right", "score": 5}\'\n'
        '  grade/eval/cat: \'{"reasoning": "right", "score": 5}\'\n'
    )
    run = _run(
        out / "evaling.yaml", models=["scripted/m"], judge="scripted/judge", replies=str(replies)
    )
    assert _passed(run, "scripted/m") == {"eval/dog": [True], "eval/cat": [False]}


class AddSuitePageTests(TestCase):
    """The add-suite page takes another tool's file: upload -> preview -> register."""

    @classmethod
    def setUpTestData(cls):
        _price_openrouter_models()
        cls.user = make_user()

    def setUp(self):
        self.client.force_login(self.user)

    def _upload(self, path: Path, intent: str = "register", **headers):
        with path.open("rb") as handle:
            upload = SimpleUploadedFile(path.name, handle.read())
        data = {"file": upload, "intent": intent}
        return self.client.post(reverse("suite_new"), data, **headers)

    def test_an_evalblink_file_is_previewed_not_registered_then_registered_from_the_editor(self):
        # "Check only" (or no JavaScript): the preview; Register on the upload registers at once
        response = self._upload(FIXTURES / "evalblink" / "benchmark.yaml", intent="check")
        page = response.content.decode()
        assert response.status_code == 200 and "<html" in page
        assert "Translated from evalblink" in page
        assert "benchmark.yaml:5: concurrency: a run option in evalsite" in page
        assert "openrouter/openai/gpt-4o-mini@short" in page  # the YAML, in the editor
        assert not Suite.objects.exists()
        text = response.context["form"].initial["yaml_text"]
        registered = self.client.post(
            reverse("suite_new"), {"yaml_text": text, "intent": "register"}
        )
        assert registered.status_code == 302
        assert registered["Location"] == "/suites/benchmark/"  # named after the uploaded file

    def test_the_htmx_check_of_an_upload_shows_the_translation_fragment(self):
        config = (
            "prompts: ['Capital of {{country}}?']\n"
            "providers: [openai:gpt-4o-mini]\n"
            "tests:\n"
            "  - vars: {country: France}\n"
            "    assert:\n"
            "      - {type: icontains, value: paris}\n"
            "      - {type: javascript, value: output.split(' ').length < 9}\n"
        )
        upload = SimpleUploadedFile("promptfooconfig.yaml", config.encode())
        response = self.client.post(
            reverse("suite_new"), {"file": upload, "intent": "check"}, **HTMX
        )
        page = response.content.decode()
        assert "<html" not in page and 'id="suite-problems"' in page
        assert "Translated from promptfoo" in page and "assertion javascript" in page
        assert not Suite.objects.exists()

    def test_a_file_that_needs_other_files_says_the_cli_is_needed(self):
        response = self._upload(FIXTURES / "evaling" / "eval.yaml")
        page = response.content.decode()
        assert "prompts/terse.yaml" in page  # the prompt file it cannot read here
        assert not Suite.objects.exists()

    def test_an_evalpin_suite_with_replies_elsewhere_registers_as_an_upload(self):
        text = "case greet\nprompt: Greet Ana.\nexpect contains: Ana\n"
        upload = SimpleUploadedFile("suite.txt", text.encode())
        response = self.client.post(reverse("suite_new"), {"file": upload, "intent": "check"})
        assert "Translated from evalpin" in response.content.decode()
        assert "read: evalpin" in response.context["form"].initial["yaml_text"]
