"""Imported sources on the command line and the add-suite page read no file outside the
source's folder (issue 25): every kind of reference of tests/core/test_import_paths.py is
refused at its line by `evalsite import` (exit 2, nothing written, never "everything
translated") and on the web, where a source has no folder and refers to no file at all;
`import --out` writes through no symbolic link; a CSV field over the csv module's limit is
a problem at its file and line, never a 500."""

from __future__ import annotations

import csv
from pathlib import Path
from tempfile import TemporaryDirectory

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import TestCase
from django.urls import reverse

from runs.models import Suite
from tests.core.test_import_paths import ESCAPES, KINDS, SECRET, make_reference
from tests.helpers.factories import make_user, run_command

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "imports"
ISSUE_PASTE = """\
description: probe
prompts: ["Hello {{x}}", "file:///etc/passwd", "file://../data/secret_key"]
providers: [openai:gpt-4o-mini]
tests: [{vars: {x: "1"}}]
"""


# --- the command line ------------------------------------------------------------------------


@pytest.mark.parametrize("escape", ESCAPES)
@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_the_cli_refuses_a_reference_leaving_the_folder_and_writes_nothing(tmp_path, kind, escape):
    source = make_reference(tmp_path, kind, escape)
    out = tmp_path / "out"
    code, stdout, stderr = run_command("import", "auto", str(source), "--out", str(out))
    assert code == 2
    assert SECRET not in stdout + stderr
    assert "everything translated" not in stdout
    assert stderr.startswith(f"error: {source}:")
    assert "the source's folder" in stderr
    assert not out.exists()


def test_the_cli_refuses_the_issues_promptfoo_config(tmp_path):
    (tmp_path / "promptfooconfig.yaml").write_text(ISSUE_PASTE)
    code, stdout, stderr = run_command(
        "import", "auto", str(tmp_path / "promptfooconfig.yaml"), "--out", str(tmp_path / "o")
    )
    assert code == 2 and stdout == ""
    assert stderr.splitlines() == [
        f"error: {tmp_path}/promptfooconfig.yaml:2: prompts[1]: file:///etc/passwd: must be a "
        "path relative to the source's folder",
        f"error: {tmp_path}/promptfooconfig.yaml:2: prompts[2]: file://../data/secret_key: must stay "
        "inside the source's folder (no '..' or links leaving it)",
    ]


@pytest.mark.parametrize("force", [False, True])
def test_import_out_writes_through_no_symbolic_link(tmp_path, force):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    out = tmp_path / "out"
    out.mkdir()
    (out / "evalblink-demo.yaml").symlink_to(victim)
    source = tmp_path / "evalblink-demo.yaml"
    source.write_text(
        "name: evalblink-demo\nmodels: [openai/gpt-4o-mini]\n"
        "prompts: [{id: p, template: 'Hi'}]\ntest_cases: [{id: a}]\n"
    )
    args = ["import", "evalblink", str(source), "--out", str(out)] + ["--force"] * force
    code, stdout, stderr = run_command(*args)
    assert code == 2 and stdout == ""
    assert stderr == (
        f"error: {out}/evalblink-demo.yaml: is a symlink, not a regular file: name a new file "
        "or a regular one\n"
    )
    assert victim.read_text() == "keep me"


@pytest.mark.django_db(transaction=True)
def test_import_out_refuses_a_linked_folder_and_a_dangling_link(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "fixtures").symlink_to(elsewhere)  # the evaling fixture copies fixtures/*.png
    source = FIXTURES / "evaling" / "eval.yaml"
    code, _, stderr = run_command("import", "evaling", str(source), "--out", str(out), "--force")
    assert code == 2
    assert stderr == (
        f"error: {out}/fixtures: is a symlink, not a folder: evalsite import writes through no "
        "link inside --out\n"
    )
    assert list(elsewhere.iterdir()) == [] and list(out.iterdir()) == [out / "fixtures"]
    (out / "fixtures").unlink()
    (out / "evaling.yaml").symlink_to(tmp_path / "created-outside.yaml")
    code, _, stderr = run_command("import", "evaling", str(source), "--out", str(out))
    assert code == 2 and stderr.startswith(f"error: {out}/evaling.yaml: is a symlink")
    assert not (tmp_path / "created-outside.yaml").exists()
    (out / "evaling.yaml").unlink()
    code, stdout, _ = run_command("import", "evaling", str(source), "--out", str(out))
    assert code == 0 and (out / "fixtures" / "dog.png").is_file()


@pytest.mark.parametrize(
    ("name", "source"),
    [
        (
            "promptfooconfig.yaml",
            "providers: [openai:gpt-4o-mini]\nprompts: [Hi]\ntests: file://t.csv\n",
        ),
        ("eval.yaml", "models: [{id: m, provider: openai}]\nprompt: Hi\ncases: {file: t.csv}\n"),
    ],
)
def test_the_cli_names_the_line_of_a_csv_field_over_the_limit(tmp_path, name, source):
    limit = csv.field_size_limit()
    (tmp_path / "t.csv").write_text(f"id,x\na,{'y' * (limit + 1)}\n")
    (tmp_path / name).write_text(source)
    code, stdout, stderr = run_command("import", "auto", str(tmp_path / name), "--out", "x")
    assert code == 2 and stdout == ""
    assert stderr == (
        f"error: {tmp_path}/t.csv:2: not valid CSV: a field is longer than {limit:,} characters, "
        "the most a CSV field may hold (write long texts in a YAML or JSONL file)\n"
    )


# --- the add-suite page ----------------------------------------------------------------------


class AddSuiteReferencesTests(TestCase):
    """A source pasted or uploaded in the browser refers to no file: every reference is a
    problem saying it needs the CLI, and no file's content reaches the page."""

    @classmethod
    def setUpTestData(cls):
        cls.user = make_user()

    def setUp(self):
        self.client.force_login(self.user)

    def _post(self, data: dict, **headers) -> str:
        response = self.client.post(reverse("suite_new"), data, **headers)
        assert response.status_code == 200
        return response.content.decode()

    def test_the_issues_paste_shows_no_server_file(self):
        for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
            page = self._post({"yaml_text": ISSUE_PASTE, "intent": "check"}, **headers)
            assert "root:" not in page and settings.SECRET_KEY[:36] not in page
            assert "file:///etc/passwd: needs the CLI" in page
            assert "../data/secret_key: needs the CLI" in page
            assert ("<html" in page) is not bool(headers)
        assert not Suite.objects.exists()

    def test_every_kind_of_reference_is_refused_in_an_upload(self):
        for kind in KINDS:
            for escape in ESCAPES:
                with self.subTest(kind=kind.name, escape=escape), TemporaryDirectory() as tmp:
                    tmp_path = Path(tmp)
                    source = make_reference(tmp_path, kind, escape)
                    upload = SimpleUploadedFile(source.name, source.read_bytes())
                    page = self._post({"file": upload, "intent": "register"})
                    assert SECRET not in page
                    assert "needs the CLI" in page, page
                    assert str(tmp_path) not in page or escape == "absolute"
        assert not Suite.objects.exists()

    def test_evalpin_and_evalblink_uploads_read_no_file_a_text_names(self):
        secret = FIXTURES.parent / "no-such-dir" / "secret.txt"
        pin = f"case a\nprompt: file://{secret}\nexpect contains: x\n"
        page = self._post(
            {"file": SimpleUploadedFile("suite.txt", pin.encode()), "intent": "check"}
        )
        assert "Translated from evalpin" in page and "root:" not in page
        replies = "reply a\n| hi\n"
        page = self._post({"yaml_text": replies, "intent": "check"})
        assert "this is an evalpin replies file" in page
        blink = (
            "name: probe\nmodels: [openai/gpt-4o-mini]\n"
            "prompts: [{id: p, template: 'file:///etc/passwd'}]\ntest_cases: [{id: a}]\n"
        )
        page = self._post({"yaml_text": blink, "intent": "check"})
        assert "Translated from evalblink" in page and "root:" not in page
