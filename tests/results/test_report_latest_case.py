"""The README's commands in order (issue 28): `report latest --case …` right after a
`--tag` partial run that left the case out shows the case from the latest run that
answered it, saying so, instead of refusing."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalsite.core.exitcodes import ExitCode
from runs.models import PriceTable, Run
from tests.helpers.factories import run_command

pytestmark = pytest.mark.django_db(transaction=True)  # `run` answers on a thread

SUITE = """\
suite: tagged
version: 1
models: [fake/small, fake/large]
tasks:
  - id: reply
    prompt: "Answer {{q}}"
    cases:
      - {id: refund, vars: {q: refund}, tags: [billing]}
      - {id: lockout, vars: {q: lockout}, tags: [access]}
"""


def test_report_latest_case_after_a_partial_run_shows_the_latest_run_with_the_case(
    tmp_path: Path,
) -> None:
    PriceTable.objects.ensure_default()
    (tmp_path / "tagged.yaml").write_text(SUITE)
    suite = str(tmp_path / "tagged.yaml")
    assert run_command("run", suite, "--fake")[0] == ExitCode.OK
    assert run_command("run", suite, "--fake", "--tag", "billing")[0] == ExitCode.OK
    whole, partial = Run.objects.order_by("created_at")
    code, out, err = run_command("report", "latest", "--case", "reply/lockout")
    assert code == ExitCode.OK, err
    assert out.splitlines()[0] == f"case reply/lockout of run {whole.id}"
    assert f"the latest run, {partial.id}, has no case 'reply/lockout'" in err
    code, out, _ = run_command("report", "latest", "--case", "refund")
    assert out.splitlines()[0] == f"case reply/refund of run {partial.id}"
    code, _, err = run_command("report", partial.id, "--case", "reply/lockout")
    assert code == ExitCode.INPUT_ERROR  # a run named by id is that run
    assert f"run {partial.id} has no case 'reply/lockout'" in err
    code, _, err = run_command("report", "latest", "--case", "reply/nowhere")
    assert code == ExitCode.INPUT_ERROR
    assert "has no case 'reply/nowhere'" in err
