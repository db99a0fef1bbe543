"""A missing key is found before the first call, by the planner and by a worker alike."""

from __future__ import annotations

import contextlib

import pytest

from evalsite.core.exitcodes import ExitCode
from runs.models import Answer, Run
from runs.planning.planner import PlanError
from tests.helpers.engine import MockLLM, execute, make_endpoint, make_mock_prices, plan_run

pytestmark = pytest.mark.django_db(transaction=True)

KEY_VAR = "EVALSITE_ENDPOINT_TEST_MOCK_KEY"


def test_a_missing_endpoint_key_refuses_the_plan_naming_the_variable(monkeypatch):
    monkeypatch.delenv(KEY_VAR, raising=False)
    make_endpoint(key_env=KEY_VAR)
    make_mock_prices()

    with pytest.raises(PlanError) as info:
        plan_run()

    assert info.value.code == ExitCode.INPUT_ERROR == 2
    assert KEY_VAR in str(info.value)
    assert "mock/a" in str(info.value)
    assert not Run.objects.exists() and not Answer.objects.exists()


def test_a_blank_endpoint_key_counts_as_missing(monkeypatch):
    monkeypatch.setenv(KEY_VAR, "")
    make_endpoint(key_env=KEY_VAR)
    make_mock_prices()

    with pytest.raises(PlanError, match=KEY_VAR):
        plan_run()
    assert not Run.objects.exists()


def test_the_key_goes_in_a_header_and_never_into_the_answer_or_run(monkeypatch):
    secret = "test-" + "endpoint-" + "value-8d1c"
    monkeypatch.setenv(KEY_VAR, secret)
    make_endpoint(key_env=KEY_VAR)
    make_mock_prices()
    run = plan_run()
    seen: list[str] = []
    mock = MockLLM()
    handler = mock.handler

    async def spy(request):
        seen.append(request.headers.get("authorization", ""))
        return await handler(request)

    mock.handler = spy

    execute(run.id, mock.transport)

    assert seen and set(seen) == {f"Bearer {secret}"}
    run.refresh_from_db()
    assert secret not in str(run.options) and secret not in str(run.estimate)
    assert not Answer.objects.filter(request__icontains=secret).exists()


def test_a_worker_without_the_key_ends_the_run_instead_of_leaving_it_running(monkeypatch):
    # Planned where the key was set; executed by a worker whose environment lacks it.
    monkeypatch.setenv(KEY_VAR, "test-" + "value-1234")
    make_endpoint(key_env=KEY_VAR)
    make_mock_prices()
    run = plan_run()
    monkeypatch.delenv(KEY_VAR)
    mock = MockLLM()

    with contextlib.suppress(Exception):  # raising is fine; a run stuck "running" is not
        execute(run.id, mock.transport)

    run.refresh_from_db()
    assert mock.count() == 0
    assert run.status == Run.Status.FAILED, run.status
    assert KEY_VAR in run.detail
