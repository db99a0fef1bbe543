"""examples/multimodal/: a suite with an image, a PDF and an audio part runs with --fake
and on its scripted replies; each file is kept once in the store however many runs send it;
the judge is sent the media its model takes; a text-only contestant is refused before
anything is spent (issue 17)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from evalsite.core.exitcodes import ExitCode
from runs.models import Answer, Judgement, Run

pytestmark = pytest.mark.django_db(transaction=True)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "multimodal"
SUITE = EXAMPLE / "multimodal.yaml"
SCRIPTED = ("--models", "scripted/careful,scripted/hasty", "--judge", "scripted/judge")


def run(*options: str, suite: Path = SUITE) -> int:
    with pytest.raises(SystemExit) as exited:
        call_command("run", str(suite), *options, "--json")
    return exited.value.code


def blobs() -> list[Path]:
    root = Path(settings.DATA_DIR) / "blobs"
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))


@pytest.fixture(autouse=True)
def empty_store():
    shutil.rmtree(Path(settings.DATA_DIR) / "blobs", ignore_errors=True)


def test_the_example_runs_offline_on_its_scripted_replies() -> None:
    assert run(*SCRIPTED) == ExitCode.OK
    report = Run.objects.get().report
    checks = {c: figures["checks"]["rate"] for c, figures in report["per_contestant"].items()}
    assert checks == {"scripted/careful": 1.0, "scripted/hasty": pytest.approx(2 / 3)}
    # each answer's request sent its case's file by hash
    sent = {
        a.task_id: [p["media_type"] for m in a.request["messages"]
                    if isinstance(m["content"], list) for p in m["content"] if p["type"] != "text"]
        for a in Answer.objects.filter(contestant="scripted/careful")
    }  # fmt: skip
    assert sent == {
        "invoice-image": ["image/png"],
        "receipt-pdf": ["application/pdf"],
        "voicemail-audio": ["audio/wav"],
    }


def test_the_example_runs_with_fake_and_keeps_each_file_once() -> None:
    assert run("--fake") == ExitCode.OK
    assert run("--fake", "--no-cache") == ExitCode.OK
    fixtures = sorted(hashlib.sha256(p.read_bytes()).hexdigest()
                      for p in (EXAMPLE / "fixtures").iterdir())  # fmt: skip
    assert [p.name for p in blobs()] == fixtures
    assert Run.objects.filter(status=Run.Status.DONE).count() == 2


def test_the_judge_sees_the_media_its_model_accepts() -> None:
    assert run("--fake") == ExitCode.OK
    judged = Judgement.objects.filter(task_id="invoice-image").first()
    user = judged.request["messages"][-1]
    kinds = [part["type"] for part in user["content"]]
    assert kinds == ["image", "text"]  # openai/gpt-4.1 reads images
    assert "<task>" in user["content"][-1]["text"]


def test_a_text_only_contestant_is_refused_before_anything_is_spent() -> None:
    code = run("--models", "openai/gpt-3.5-turbo,google/gemini-2.5-flash", "--dry-run")
    assert code == ExitCode.INPUT_ERROR
    assert not Run.objects.exists()


def test_an_edited_fixture_is_a_new_version_sent_by_its_new_hash(tmp_path: Path) -> None:
    folder = Path(shutil.copytree(EXAMPLE, tmp_path / "mm"))
    assert run(*SCRIPTED, suite=folder / "multimodal.yaml") == ExitCode.OK
    changed = b"\x89PNG\r\n\x1a\n" + b"changed" * 10
    (folder / "fixtures" / "invoice-0042.png").write_bytes(changed)
    assert run(*SCRIPTED, suite=folder / "multimodal.yaml") == ExitCode.OK
    first, second = Run.objects.order_by("created_at")
    assert first.suite_version_id != second.suite_version_id
    sent = Answer.objects.get(run=second, task_id="invoice-image", contestant="scripted/careful")
    image = sent.request["messages"][0]["content"][1]
    assert image["sha256"] == hashlib.sha256(changed).hexdigest()
    assert len(blobs()) == 4  # the three files, and the edited image beside its first bytes


def test_report_html_from_the_command_embeds_the_image_as_a_data_url() -> None:
    import base64
    import io

    assert run(*SCRIPTED) == ExitCode.OK
    out = io.StringIO()
    call_command("report", "latest", "--format", "html", stdout=out)
    png = (EXAMPLE / "fixtures" / "invoice-0042.png").read_bytes()
    assert f"data:image/png;base64,{base64.b64encode(png).decode()}" in out.getvalue()


def test_a_no_look_run_archives_no_file_and_stores_no_file_name() -> None:
    assert run(*SCRIPTED, "--no-look") == ExitCode.OK
    assert blobs() == []
    version = Run.objects.get().suite_version
    assert version.stripped and "_media" not in version.parsed
    assert "fixtures/" not in version.yaml_text  # case ids are kept, file names are not
    answer = Answer.objects.filter(task_id="invoice-image").first()
    assert answer.request["messages"] == [] and answer.text == ""


def test_a_rerun_is_served_from_the_cache_and_an_edited_file_is_not(tmp_path: Path) -> None:
    folder = Path(shutil.copytree(EXAMPLE, tmp_path / "mm"))
    suite = folder / "multimodal.yaml"
    assert run("--fake", suite=suite) == ExitCode.OK
    assert run("--fake", suite=suite) == ExitCode.OK
    second = Run.objects.order_by("-created_at").first()
    assert Answer.objects.filter(run=second, cached=True).count() == 6
    (folder / "fixtures" / "invoice-0042.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"edited" * 9)
    assert run("--fake", suite=suite) == ExitCode.OK
    third = Run.objects.order_by("-created_at").first()
    fresh = Answer.objects.filter(run=third, cached=False).values_list("task_id", flat=True)
    assert sorted(fresh) == ["invoice-image", "invoice-image"]  # only the edited file's cells
