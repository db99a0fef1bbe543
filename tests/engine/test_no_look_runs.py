"""No-look runs inside evalsite (docs/no-look.md): no worker, form or labeller touches one,
`evalsite run --resume` continues one from its unchanged file, and datasources give cases."""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from evalsite.core.no_look import NO_LABELS, NO_WORKER
from evalsite.core.suites import load_suite, parse_suite
from runs import sealed
from runs.engine.resume import DATASOURCE_REASON
from runs.engine.runner import Shard, execute
from runs.engine.tasks import resume_stalled_runs
from runs.models import Answer, Run, SuiteVersion
from runs.planning.planner import RunOptions, make_plan, store_plan
from tests.helpers.factories import (
    make_pair,
    make_price_table,
    make_run,
    make_suite_version,
    make_user,
    write_scripted_suite,
)

pytestmark = pytest.mark.django_db

SUITE = """\
suite: sealed
version: 1
privacy: {no_look: true}
models: [scripted/a, scripted/b]
replies: replies.yaml
tasks:
  - id: greet
    judge: false
    prompt: "Greet {{who}}."
    cases:
      - {id: ada, tags: [vip], vars: {who: Ada}, checks: [{contains: Ada}]}
      - {id: bob, vars: {who: Bob}, checks: [{contains: Bob}]}
"""
UPLOADED = SUITE.replace("replies: replies.yaml\n", "")
REPLIES = """\
a:
  greet/ada: [Hello Ada.]
  greet/bob: [Hello Bob.]
b:
  greet/ada: [Hi.]
  greet/bob: [Hi Bob.]
"""


def _exit_code(*args: str) -> int:
    with pytest.raises(SystemExit) as exited:
        call_command("run", *args)
    return exited.value.code


# --- nobody else runs, launches or labels one -----------------------------------------------


def test_a_no_look_suite_is_stored_with_only_its_case_ids_and_tags():
    version = make_suite_version(UPLOADED)

    assert version.stripped
    cases = version.parsed["tasks"][0]["cases"]
    assert cases == [{"id": "ada", "tags": ["vip"]}, {"id": "bob"}]
    assert "Ada" not in version.yaml_text and "Ada" not in json.dumps(version.parsed)


def test_a_normal_run_of_content_stored_stripped_stores_it_whole():
    plain = UPLOADED.replace("privacy: {no_look: true}\n", "")
    loaded = parse_suite(plain.encode(), filename="sealed.yaml", origin="upload")
    stripped, _ = SuiteVersion.objects.register(loaded, plain, origin="upload", no_look=True)
    assert stripped.stripped and "Ada" not in json.dumps(stripped.parsed)

    whole, created = SuiteVersion.objects.register(loaded, plain, origin="upload")

    assert not created and whole.pk == stripped.pk and not whole.stripped
    assert whole.parsed["tasks"][0]["cases"][0]["vars"] == {"who": "Ada"}
    assert SuiteVersion.objects.get(pk=whole.pk).yaml_text == plain


def test_the_new_run_form_refuses_a_no_look_suite_with_the_reason():
    make_price_table({"fake/small": ("0.10", "0.40"), "fake/large": ("1", "4")}, active=True)
    version = make_suite_version(UPLOADED)
    client = Client()
    client.force_login(make_user())

    response = client.post(
        reverse("run_new", args=[version.suite.name, version.sha256]),
        {"others": "fake/small, fake/large", "fake": "on"},
        follow=True,
    )

    assert NO_WORKER.split(";")[0] in response.content.decode().replace("&#x27;", "'")
    assert not Run.objects.exists()


def test_labelling_a_no_look_run_is_refused_with_the_reason():
    run = make_run(suite_version=make_suite_version(UPLOADED), status=Run.Status.DONE, no_look=True)
    client = Client()
    client.force_login(make_user())

    response = client.get(f"/label/{run.suite.name}/?run={run.id}")

    assert response.status_code == 403
    assert NO_LABELS in response.content.decode()
    assert not Run.objects.calibration_choices().exists()


def test_the_run_pages_say_no_look_and_show_no_text_in_full_and_over_htmx():
    run = make_run(suite_version=make_suite_version(UPLOADED), status=Run.Status.DONE, no_look=True)
    pair = make_pair(run, "greet", "ada")
    client = Client()
    client.force_login(make_user())

    detail = client.get(f"/runs/{run.id}/").content.decode()
    pages = [
        client.get(url, **headers).content.decode()
        for url in (f"/runs/{run.id}/answers/", f"/runs/{run.id}/pairs/{pair.pk}/")
        for headers in ({}, {"HTTP_HX_REQUEST": "true"})
    ]

    assert "no-look run" in detail
    assert all("hidden: no-look run" in page for page in pages)
    assert not any("answers greet/ada" in page for page in pages)  # a row's text, not shown
    assert "<html" not in pages[1]


def test_the_workers_stalled_run_sweep_leaves_a_no_look_run_alone(monkeypatch):
    queued = []
    monkeypatch.setattr("runs.engine.tasks.async_task", lambda *args, **kw: queued.append(args[1]))
    old = timezone.now() - timedelta(hours=1)
    sealed_run = make_run(status=Run.Status.RUNNING, no_look=True)
    normal = make_run(status=Run.Status.RUNNING)
    for run in (sealed_run, normal):
        Answer.objects.create(
            run=run, task_id="t", case_id="c", contestant="fake/small", request={},
            request_hash="h", status="claimed", claimed_at=old,
        )  # fmt: skip

    assert resume_stalled_runs() == [normal.id]
    assert queued == [normal.id]


# --- resume ------------------------------------------------------------------------------------


@pytest.fixture
def interrupted(tmp_path) -> tuple[Path, Run]:
    """A no-look run of a file suite whose process died: planned and stored, one answer
    finished (its text died with the process), its case data gone from memory."""
    path = write_scripted_suite(tmp_path, SUITE, REPLIES)
    loaded = load_suite(path)
    version, _ = SuiteVersion.objects.register_file(path, loaded)
    run = store_plan(make_plan(version, loaded, RunOptions()))
    Answer.objects.filter(pk=run.answers.first().pk).update(status="done", output_tokens=3)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    sealed.release(run.id)
    return path, run


@pytest.mark.django_db(transaction=True)  # a thread or process reads what it wrote
def test_a_no_look_run_whose_process_died_resumes_from_its_unchanged_file(interrupted):
    path, run = interrupted
    assert run.no_look and all(a.request["messages"] == [] for a in run.answers.all())

    assert _exit_code(str(path), "--resume", run.id) == 0

    run.refresh_from_db()
    assert run.status == Run.Status.DONE
    assert list(run.answers.values_list("status", "passed").order_by("case_id", "contestant")) == [
        ("done", True), ("done", False), ("done", True), ("done", True)
    ]  # fmt: skip
    assert not run.answers.exclude(text="").exists()


@pytest.mark.django_db(transaction=True)  # a thread or process reads what it wrote
def test_a_no_look_run_that_died_while_judging_answers_again_when_resumed(interrupted):
    path, run = interrupted
    Answer.objects.filter(run=run).update(status="done", output_tokens=3)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.JUDGING)

    assert _exit_code(str(path), "--resume", run.id) == 0

    run.refresh_from_db()
    assert run.status == Run.Status.DONE
    assert run.answers.filter(status="done", passed__isnull=False).count() == 4


@pytest.mark.django_db(transaction=True)  # a thread or process reads what it wrote
def test_a_no_look_run_that_fails_keeps_and_logs_the_errors_type_and_place_not_its_text(
    interrupted, monkeypatch, caplog
):
    path, run = interrupted
    sealed.seal(run.id, run.suite_version_id, load_suite(path))

    def fail(shard):
        raise ValueError("the case said CANARY-d41d8c")

    monkeypatch.setattr(Shard, "_prepare", fail)
    with caplog.at_level("ERROR"):
        execute(run.id)

    run.refresh_from_db()
    assert run.status == Run.Status.FAILED
    assert "ValueError in test_no_look_runs.py" in run.detail and "(fail)" in run.detail
    assert "CANARY" not in run.detail and "CANARY" not in caplog.text
    assert "ValueError in test_no_look_runs.py" in caplog.text
    sealed.release(run.id)


def test_resuming_from_an_edited_suite_file_is_refused_naming_why(interrupted, capsys):
    path, run = interrupted
    path.write_text(SUITE.replace("Greet {{who}}.", "Greet {{who}} warmly."))

    assert _exit_code(str(path), "--resume", run.id) == 2
    assert "the suite file changed since it started" in capsys.readouterr().err
    assert Run.objects.get(pk=run.pk).status == Run.Status.RUNNING


# --- datasources -------------------------------------------------------------------------------

SOURCED = """\
suite: sourced
version: 1
{privacy}models: [scripted/a, scripted/b]
replies: replies.yaml
tasks:
  - id: greet
    judge: false
    prompt: "Greet {{{{who}}}}."
    cases_from: {source}
"""
PYTHON_SOURCE = """\
def cases():
    yield {"id": "ada", "vars": {"who": "Ada"}, "checks": [{"contains": "Ada"}]}
    yield {"id": "bob", "vars": {"who": "Bob"}, "checks": [{"contains": "Bob"}]}
"""
LINES = [
    {"id": "ada", "vars": {"who": "Ada"}, "checks": [{"contains": "Ada"}]},
    {"id": "bob", "vars": {"who": "Bob"}, "checks": [{"contains": "Bob"}]},
]


def _sourced(folder: Path, source: str, *, privacy: bool = False) -> Path:
    text = SOURCED.format(source=source, privacy="privacy: {no_look: true}\n" if privacy else "")
    return write_scripted_suite(folder, text, REPLIES)


def _command_source(folder: Path, lines: list) -> str:
    (folder / "cases.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    script = "import sys; sys.stdout.write(open('cases.jsonl').read())"
    return json.dumps({"command": [sys.executable, "-c", script]})


@pytest.mark.django_db(transaction=True)  # a thread or process reads what it wrote
def test_cases_from_a_python_callable_run(tmp_path):
    (tmp_path / "tickets_source.py").write_text(PYTHON_SOURCE)
    path = _sourced(tmp_path, '{python: "tickets_source:cases"}')

    assert _exit_code(str(path), "--json") == 0
    answers = Answer.objects.values_list("case_id", "contestant", "passed", "text")
    assert sorted(answers) == [
        ("ada", "scripted/a", True, "Hello Ada."), ("ada", "scripted/b", False, "Hi."),
        ("bob", "scripted/a", True, "Hello Bob."), ("bob", "scripted/b", True, "Hi Bob."),
    ]  # fmt: skip
    run = Run.objects.get()
    assert run.stored_options.datasource and not run.no_look
    assert run.suite_version.parsed["tasks"][0]["cases"][0]["vars"] == {"who": "Ada"}


@pytest.mark.django_db(transaction=True)  # a thread or process reads what it wrote
def test_cases_from_a_command_run_in_a_no_look_run_and_its_resume_is_refused(tmp_path, capsys):
    path = _sourced(tmp_path, _command_source(tmp_path, LINES), privacy=True)

    assert _exit_code(str(path)) == 0
    run = Run.objects.get()
    assert run.no_look and run.answers.filter(status="done").count() == 4
    assert run.suite_version.parsed["tasks"][0]["cases"] == [{"id": "ada"}, {"id": "bob"}]

    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    assert _exit_code(str(path), "--resume", run.id) == 2
    assert DATASOURCE_REASON in capsys.readouterr().err


def test_a_bad_line_from_a_command_names_the_source_and_the_line(tmp_path, capsys):
    lines = [LINES[0], {"id": "bob", "vars": {"who": ["not", "a", "value"]}}, LINES[0]]
    path = _sourced(tmp_path, _command_source(tmp_path, lines))

    assert _exit_code(str(path)) == 2
    err = capsys.readouterr().err
    assert "line 2" in err and "vars" in err
    assert "case id 'ada' repeats line 1" in err
    assert not Run.objects.exists()


def test_a_case_whose_prompt_does_not_render_names_the_source_and_its_line(tmp_path, capsys):
    lines = [LINES[0], {"id": "bob", "vars": {"name": "Bob"}}]
    path = _sourced(tmp_path, _command_source(tmp_path, lines))

    assert _exit_code(str(path)) == 2
    err = capsys.readouterr().err
    assert f"command {sys.executable} -c" in err and "line 2" in err and "who" in err
    assert "suite.yaml" not in err


def test_validate_checks_a_source_can_be_used_and_says_cases_come_at_run_time(tmp_path, capsys):
    (tmp_path / "validated_source.py").write_text(PYTHON_SOURCE)
    good = _sourced(tmp_path, '{python: "validated_source:cases"}')
    with pytest.raises(SystemExit) as exited:
        call_command("validate", str(good))
    assert exited.value.code == 0
    assert "(and the cases of greet, read at run time)" in capsys.readouterr().out

    path = _sourced(tmp_path, '{python: "no_such_module_here:cases"}')

    with pytest.raises(SystemExit) as exited:
        call_command("validate", str(path))

    assert exited.value.code == 2
    assert "cases_from (python no_such_module_here:cases): cannot import it" in (
        capsys.readouterr().err
    )
