"""A run's media reach the API as the file the run was planned with: the runner gives the
adapters the run's blob store, so an attachment edited after planning is still sent as it
was (the store keeps it by hash); one the store does not hold fails that call alone."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import httpx
import pytest
from django.test import override_settings

from evalsite.core.suites import load_suite
from runs.models import Answer, Endpoint, SuiteVersion
from runs.planning.planner import RunOptions, make_plan, store_plan
from tests.helpers.engine import execute, make_endpoint, make_mock_prices, reply

pytestmark = pytest.mark.django_db(transaction=True)
PNG = Path(__file__).resolve().parents[2] / "examples" / "multimodal" / "fixtures"
SUITE = """\
suite: scans
version: 1
models: [mock/a]
defaults: {max_tokens: 20, timeout_s: 5}
tasks:
  - id: read
    prompt:
      - role: user
        content:
          - text: "Read the invoice."
          - image: scan
    cases:
      - {id: c1, files: {scan: scan.png}}
"""


def planned_run(folder: Path):
    """A run of SUITE planned as `evalsite run` plans it: the version, its files kept in
    the store, the requests pointing at the files beside the suite."""
    (folder / "scans.yaml").write_text(SUITE)
    (folder / "scan.png").write_bytes((PNG / "invoice-0042.png").read_bytes())
    loaded = load_suite(folder / "scans.yaml")
    version, _ = SuiteVersion.objects.register_file(folder / "scans.yaml", loaded)
    if not Endpoint.objects.filter(name="mock").exists():
        make_endpoint()
        make_mock_prices(("mock/a",), ("1", "1"))  # an image's worst case stays in the cap
    return store_plan(make_plan(version, loaded, RunOptions()))


def recording(bodies: list[dict]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return reply("INV-0042")

    return httpx.MockTransport(handler)


def test_an_attachment_edited_after_planning_is_sent_as_planned_from_the_store(tmp_path):
    with override_settings(DATA_DIR=tmp_path / "data"):
        run = planned_run(tmp_path)
        (tmp_path / "scan.png").write_bytes(b"an edited file")
        bodies: list[dict] = []
        execute(run.id, recording(bodies))
    planned = base64.b64encode((PNG / "invoice-0042.png").read_bytes()).decode("ascii")
    assert bodies[0]["messages"][0]["content"] == [
        {"type": "text", "text": "Read the invoice."},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{planned}"}},
    ]
    assert Answer.objects.get(run=run).status == Answer.Status.DONE


def test_an_attachment_the_store_lacks_and_edited_after_planning_fails_its_call(tmp_path):
    with override_settings(DATA_DIR=tmp_path / "data"):
        run = planned_run(tmp_path)
        shutil.rmtree(tmp_path / "data" / "blobs")
        (tmp_path / "scan.png").write_bytes(b"an edited file")
        bodies: list[dict] = []
        execute(run.id, recording(bodies))
    answer = Answer.objects.get(run=run)
    assert bodies == []
    assert answer.status == Answer.Status.ERROR
    assert "the image 'scan' is no longer the file the run was planned with" in (
        answer.error_message
    )
