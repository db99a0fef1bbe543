"""An endpoint's key comes only from an EVALSITE_ENDPOINT_<NAME>_KEY variable and goes only to
a model server: the admin refuses anything else on the field, and so does a run, however the
row was written."""

from __future__ import annotations

import contextlib

import pytest
from django.core.exceptions import ValidationError
from django.test import TestCase
from django.urls import reverse

from evalsite.core.providers import (
    EndpointConfig,
    ErrorKind,
    ProviderError,
    build_provider,
    required_key,
)
from evalsite.core.providers.endpoints import base_url_problem, key_variable_problem
from runs.models import Endpoint, Run
from runs.planning.planner import PlanError
from tests.helpers.engine import MockLLM, execute, make_endpoint, make_mock_prices, plan_run
from tests.helpers.factories import make_user

GOOD_VAR = "EVALSITE_ENDPOINT_VLLM_KEY"
CANARY = "canary-" + "provider-" + "value-5150"


@pytest.mark.parametrize(
    "name", ["", GOOD_VAR, "EVALSITE_ENDPOINT_LOCAL_VLLM_2_KEY", "EVALSITE_ENDPOINT_X_KEY"]
)
def test_a_blank_or_prefixed_key_variable_is_accepted(name):
    assert key_variable_problem(name) is None


@pytest.mark.parametrize(
    "name",
    [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "EVALSITE_SECRET_KEY",
        "DATABASE_URL",
        "EVALSITE_ENDPOINT__KEY",
        "EVALSITE_ENDPOINT_VLLM_KEY_2",
        "evalsite_endpoint_vllm_key",
        "MY_EVALSITE_ENDPOINT_VLLM_KEY",
    ],
)
def test_any_other_key_variable_is_refused_naming_the_rule(name):
    problem = key_variable_problem(name)
    assert problem and name in problem and "EVALSITE_ENDPOINT_<NAME>_KEY" in problem


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/v1",  # vLLM on this machine
        "http://localhost:11434/v1",  # Ollama
        "http://[::1]:8000/v1",
        "http://10.1.2.3/v1",
        "http://192.168.0.20:8000/v1",
        "http://ollama:11434/v1",
        "https://gateway.example.internal/v1",
    ],
)
def test_loopback_private_and_public_servers_are_allowed(url):
    assert base_url_problem(url) is None


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://169.254.170.2/v2/credentials",
        "http://[fe80::1]/v1",
        "http://[fe80::1%25eth0]:8000/v1",
        "http://[::ffff:169.254.169.254]/",
        "http://2852039166/",  # 169.254.169.254 as one number
        "http://0xa9fea9fe/",
        "http://169.254.43518/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://METADATA.google.internal./computeMetadata/v1/",
        "http://metadata/computeMetadata/v1/",
        "http://100.100.100.200/latest/meta-data/",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "ftp://models.example/v1",
        "file:///etc/passwd",
        "localhost:8000/v1",
        "http:///v1",
        "http://[/v1",
    ],
)
def test_link_local_metadata_and_non_http_urls_are_refused(url):
    assert base_url_problem(url)


def test_an_endpoint_naming_another_variable_is_refused_when_its_provider_is_built():
    # What a row written around the admin gives: the run refuses, the key is never read.
    endpoints = {"gw": _config("http://127.0.0.1:9/v1", "ANTHROPIC_API_KEY")}
    env = {"ANTHROPIC_API_KEY": CANARY}
    for attempt in (
        lambda: required_key("gw/m", endpoints=endpoints),
        lambda: build_provider("gw/m", env=env, endpoints=endpoints),
    ):
        with pytest.raises(ProviderError) as info:
            attempt()
        assert info.value.kind is ErrorKind.CONFIG
        assert "ANTHROPIC_API_KEY" in info.value.message and "gw/m" in info.value.message
        assert CANARY not in info.value.message


def test_an_endpoint_on_the_metadata_service_is_refused_when_its_provider_is_built():
    endpoints = {"gw": _config("http://169.254.169.254/v1", GOOD_VAR)}
    with pytest.raises(ProviderError) as info:
        build_provider("gw/m", env={GOOD_VAR: CANARY}, endpoints=endpoints)
    assert info.value.kind is ErrorKind.CONFIG and "169.254.169.254" in info.value.message


def _config(base_url: str, key_env: str) -> EndpointConfig:
    return EndpointConfig("gw", base_url, key_env)


class EndpointRulesTests(TestCase):
    def test_clean_puts_each_problem_on_its_field(self):
        endpoint = Endpoint(
            name="gw", base_url="http://169.254.169.254/v1", key_env_var="ANTHROPIC_API_KEY"
        )
        with pytest.raises(ValidationError) as info:
            endpoint.full_clean()
        assert set(info.value.message_dict) == {"base_url", "key_env_var"}

    def test_a_local_server_with_a_prefixed_variable_is_clean(self):
        Endpoint(
            name="vllm", base_url="http://127.0.0.1:8000/v1", key_env_var=GOOD_VAR
        ).full_clean()
        Endpoint(name="ollama", base_url="http://localhost:11434/v1").full_clean()


class EndpointAdminTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.staff = make_user(is_staff=True, is_superuser=True)

    def setUp(self):
        self.client.force_login(self.staff)

    def add(self, **fields):
        data = {"name": "gw", "base_url": "http://127.0.0.1:8000/v1", "key_env_var": GOOD_VAR}
        return self.client.post(reverse("admin:runs_endpoint_add"), data | fields)

    def test_the_admin_shows_a_forbidden_variable_on_its_field_and_saves_nothing(self):
        response = self.add(key_env_var="ANTHROPIC_API_KEY")
        assert response.status_code == 200
        errors = response.context["adminform"].form.errors
        assert "EVALSITE_ENDPOINT_<NAME>_KEY" in errors["key_env_var"][0]
        assert not Endpoint.objects.exists()

    def test_the_admin_refuses_the_metadata_service_as_a_base_url(self):
        for url in ("http://169.254.169.254/latest/", "http://metadata.google.internal/v1"):
            response = self.add(base_url=url)
            assert response.status_code == 200
            assert list(response.context["adminform"].form.errors) == ["base_url"]
        assert not Endpoint.objects.exists()

    def test_the_admin_saves_a_local_server_with_a_prefixed_variable(self):
        assert self.add().status_code == 302
        assert Endpoint.objects.get().key_env_var == GOOD_VAR


@pytest.mark.django_db(transaction=True)
def test_a_row_written_around_the_admin_is_refused_at_planning(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    make_endpoint(key_env="OPENAI_API_KEY")  # objects.create: no clean()
    make_mock_prices()
    with pytest.raises(PlanError) as info:
        plan_run()
    assert "EVALSITE_ENDPOINT_<NAME>_KEY" in str(info.value) and CANARY not in str(info.value)
    assert not Run.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "change",
    [{"key_env_var": "OPENAI_API_KEY"}, {"base_url": "http://169.254.169.254/latest/"}],
    ids=["key-variable", "base-url"],
)
def test_a_row_changed_around_the_admin_after_planning_sends_nothing(monkeypatch, change):
    monkeypatch.setenv(GOOD_VAR, "test-" + "value-2718")
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    make_endpoint(key_env=GOOD_VAR)
    make_mock_prices()
    run = plan_run()
    Endpoint.objects.update(**change)
    mock = MockLLM()

    with contextlib.suppress(Exception):  # raising is fine; a call or a stuck run is not
        execute(run.id, mock.transport)

    run.refresh_from_db()
    assert mock.count() == 0
    assert run.status == Run.Status.FAILED and "refused" in run.detail
    assert CANARY not in run.detail
