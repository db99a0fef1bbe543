"""An answer that echoes a key this process holds is stored without it (issue 13 item 20)."""

from __future__ import annotations

import json

import pytest

from runs.models import Answer, CachedResponse
from runs.results.reporting import write_report
from tests.helpers.engine import MockLLM, execute, make_endpoint, make_mock_prices, plan_run, reply

pytestmark = pytest.mark.django_db(transaction=True)

KEY_VAR = "EVALSITE_ENDPOINT_MOCK_KEY"


def test_an_answer_echoing_its_bearer_key_is_stored_redacted_everywhere(monkeypatch):
    secret = "held-" + "bearer-" + "value-31337"
    monkeypatch.setenv(KEY_VAR, secret)
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "another-" + "held-value-42")
    make_endpoint(key_env=KEY_VAR)
    make_mock_prices()
    run = plan_run()
    mock = MockLLM(respond=lambda call: reply(
        f"my key is {secret}; also another-held-value-42; sk-not-a-held-key-just-an-example"
    ))  # fmt: skip

    run = execute(run.id, mock.transport)

    texts = list(Answer.objects.filter(run=run).values_list("text", flat=True))
    assert texts and all(secret not in text for text in texts)
    assert all("my key is [REDACTED]; also [REDACTED]" in text for text in texts)
    assert all("sk-not-a-held-key-just-an-example" in text for text in texts)  # not ours
    assert not any(secret in hit for hit in CachedResponse.objects.values_list("text", flat=True))
    report = write_report(run)
    files = (run.report_dir / name for name in ("answers.jsonl", "report.json", "report.md"))
    assert not any(secret in path.read_text() for path in files)
    assert secret not in json.dumps(report)
