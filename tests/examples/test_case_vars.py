"""examples/case-vars.yaml, the example of docs/checks.md's "Case vars in checks and
rubrics" (the docs show the file as it is): it validates with no warning, and `run --fake`
runs it to the end, its checks and the judge's rubric rendered for each case."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command

from runs.models import Answer, Judgement, PriceTable, Run
from tests.helpers.factories import run_command

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "examples" / "case-vars.yaml"


def test_the_docs_show_the_example_as_it_is():
    docs = (ROOT / "docs" / "checks.md").read_text()
    block = docs.split("```yaml\n# case-vars:")[1].split("```")[0]
    assert "# case-vars:" + block == SUITE.read_text()


def test_the_example_validates_with_no_warning():
    PriceTable.objects.ensure_default()
    code, out, err = run_command("validate", str(SUITE))
    assert code == 0 and "ok: " in out and "3 tasks, 5 cases" in out
    assert "warning" not in (out + err).lower()


def test_the_fake_runs_the_example_with_every_check_and_rubric_rendered():
    PriceTable.objects.ensure_default()
    with pytest.raises(SystemExit) as exited:
        call_command("run", str(SUITE), "--fake", "--json")
    assert exited.value.code == 0
    assert Run.objects.get().status == "done"
    notes = [a.checks["note"] or "" for a in Answer.objects.filter(task_id="quiz")]
    assert notes and all("{{" not in note for note in notes)
    rubrics = {
        call.case_id: call.request["messages"][1]["content"].split("<rubric>\n")[1].split("\n")[0]
        for call in Judgement.objects.filter(kind=Judgement.Kind.PAIR)
    }
    assert rubrics == {
        "france": "The better answer gives France's capital and nothing else.",
        "japan": "The better answer gives Japan's capital and nothing else.",
    }
