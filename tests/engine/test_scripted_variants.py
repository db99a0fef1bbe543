"""A scripted contestant with a prompt variant answers from its own entry in the replies file
(`good@concise`) when the file has one, so a variants × models matrix can be run offline;
without one it answers as its bare model does."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command

from runs.models import Answer
from tests.helpers.factories import write_scripted_suite

pytestmark = pytest.mark.django_db(transaction=True)

SUITE = """\
suite: scripted-variants
version: 1
models: [scripted/good, scripted/good@concise, scripted/sloppy, scripted/sloppy@concise]
replies: replies.yaml
variants:
  concise: {system: "Answer in as few words as will do."}
tasks:
  - id: greet
    judge: false
    prompt: "Greet {{who}}."
    cases:
      - {id: ada, vars: {who: Ada}, checks: [{contains: Ada}]}
      - {id: grace, vars: {who: Grace}, checks: [{contains: Grace}]}
"""
REPLIES = """\
good:
  greet/ada: ["Hello Ada, welcome back."]
  greet/grace: ["Hello Grace, welcome back."]
good@concise:
  greet/ada: [Hi Ada.]
  greet/grace: [Hi.]
sloppy:
  greet/ada: [Hello there.]
  greet/grace: [Hello Grace.]
"""


@pytest.fixture
def suite_path(tmp_path) -> Path:
    return write_scripted_suite(tmp_path, SUITE, REPLIES)


def test_a_variant_with_its_own_entry_answers_from_it_and_one_without_from_its_model(suite_path):
    with pytest.raises(SystemExit) as exited:
        call_command("run", str(suite_path), "--json")

    assert exited.value.code == 0
    answers = {(a.contestant, a.case_id): (a.text, a.passed) for a in Answer.objects.all()}
    assert answers == {
        ("scripted/good", "ada"): ("Hello Ada, welcome back.", True),
        ("scripted/good", "grace"): ("Hello Grace, welcome back.", True),
        ("scripted/good@concise", "ada"): ("Hi Ada.", True),
        ("scripted/good@concise", "grace"): ("Hi.", False),
        ("scripted/sloppy", "ada"): ("Hello there.", False),
        ("scripted/sloppy", "grace"): ("Hello Grace.", True),
        # no sloppy@concise entry: the bare model's replies
        ("scripted/sloppy@concise", "ada"): ("Hello there.", False),
        ("scripted/sloppy@concise", "grace"): ("Hello Grace.", True),
    }


def test_a_variant_entry_missing_a_case_is_refused_before_the_run_naming_it(suite_path, capsys):
    replies = suite_path.parent / "replies.yaml"
    replies.write_text(REPLIES.replace("  greet/grace: [Hi.]\n", ""))

    with pytest.raises(SystemExit) as exited:
        call_command("run", str(suite_path))

    assert exited.value.code == 2
    assert "has no reply for scripted/good@concise on: greet/grace" in capsys.readouterr().err
    assert not Answer.objects.exists()
