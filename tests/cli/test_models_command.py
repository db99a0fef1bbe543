"""`evalsite models`: the price table's models with their keys' state, and OpenRouter's catalog,
read from a recorded reply (tests/fixtures/openrouter-catalog.json) through httpx.MockTransport
or a server on 127.0.0.1, never the network."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
from contextlib import contextmanager
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO
from pathlib import Path
from unittest import mock

import httpx
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import TestCase

from evalsite.core.catalog import (
    CatalogError,
    fetch_catalog,
    parse_catalog,
    parse_context,
    printable,
    select,
)
from evalsite.core.providers import make_client
from evalsite.management.verbs import GROUPS
from runs.management.commands import models as command
from runs.models import PriceTable
from tests.helpers.factories import make_price_table

RECORDED = (Path(__file__).parents[1] / "fixtures" / "openrouter-catalog.json").read_bytes()
CLEAN_ENV = {
    name: value
    for name, value in os.environ.items()
    if name not in {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GOOGLE_API_KEY", "OPENROUTER_API_KEY"}
}
SECRET = "sk-or-v1-0123456789abcdef0123456789abcdef"


# -- the catalog, read ---------------------------------------------------------------------


def test_the_recorded_catalog_reads_every_wellformed_entry_and_counts_the_malformed_one():
    catalog = parse_catalog(RECORDED)

    assert len(catalog.models) == 7
    assert catalog.skipped == ("data[7]: no id",)
    assert [m.id for m in catalog.models] == sorted(m.id for m in catalog.models)


def test_per_token_prices_become_exact_decimals_per_million_tokens():
    mini = {m.id: m for m in parse_catalog(RECORDED).models}["openai/gpt-4o-mini"]

    assert mini.input_per_mtok == Decimal("0.15")
    assert mini.output_per_mtok == Decimal("0.6")
    assert mini.cached_input_per_mtok == Decimal("0.075")
    assert mini.context_length == 128000
    assert mini.model == "openrouter/openai/gpt-4o-mini"


def test_free_is_the_free_suffix_or_zero_prices_and_a_router_minus_one_is_unknown_not_free():
    models = {m.id: m for m in parse_catalog(RECORDED).models}

    assert models["meta-llama/llama-3.3-70b-instruct:free"].free
    assert models["openrouter/sonoma-sky-alpha"].free  # zero prices, no suffix
    assert not models["openai/gpt-4o-mini"].free
    router = models["openrouter/auto"]
    assert router.input_per_mtok is None and router.output_per_mtok is None
    assert not router.free


def test_a_free_suffix_is_free_whatever_the_prices_say():
    data = b'{"data": [{"id": "x/y:free", "pricing": {}}, {"id": "x/z", "pricing": {}}]}'

    assert [m.free for m in parse_catalog(data).models] == [True, False]


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("a string", "not an object"),
        ({"name": "x", "pricing": {}}, "no id"),
        ({"id": "  ", "pricing": {}}, "no id"),
        ({"id": "a/" + "b" * 300, "pricing": {}}, "an id longer than 200 characters"),
        ({"id": "a/b", "name": 7, "pricing": {}}, "a/b: name is not text"),
        ({"id": "a/b", "context_length": True, "pricing": {}}, "context_length"),
        ({"id": "a/b", "context_length": -5, "pricing": {}}, "context_length"),
        ({"id": "a/b", "context_length": 1.5, "pricing": {}}, "context_length"),
        ({"id": "a/b", "pricing": "0"}, "a/b: no pricing object"),
        ({"id": "a/\x1b[2Jb"}, "a/\\u001b[2Jb: no pricing object"),
    ],
)
def test_a_malformed_entry_is_skipped_with_its_index_and_reason(entry, reason):
    good = {"id": "good/one", "pricing": {"prompt": "0", "completion": "0"}}
    data = json.dumps({"data": [good, entry]}).encode()

    catalog = parse_catalog(data)

    assert [m.id for m in catalog.models] == ["good/one"]
    assert len(catalog.skipped) == 1
    assert catalog.skipped[0].startswith("data[1]: ") and reason in catalog.skipped[0]


def test_a_second_entry_for_the_same_id_is_skipped():
    entry = {"id": "a/b", "pricing": {"prompt": "0.000001", "completion": "0"}}
    catalog = parse_catalog(json.dumps({"data": [entry, {**entry, "name": "again"}]}).encode())

    assert len(catalog.models) == 1 and catalog.models[0].name == ""
    assert catalog.skipped == ("data[1]: a second entry for a/b",)


@pytest.mark.parametrize(
    "price", ["-1", "abc", "NaN", "Infinity", "1e999999999", True, None, [], "1" * 41]
)
def test_a_price_that_is_not_a_finite_non_negative_number_is_unknown(price):
    entry = {"id": "a/b", "pricing": {"prompt": price, "completion": "0.000002"}}

    (model,) = parse_catalog(json.dumps({"data": [entry]}).encode()).models

    assert model.input_per_mtok is None
    assert model.output_per_mtok == Decimal("2")
    assert not model.free


def test_a_json_number_price_is_read_as_a_decimal_never_a_float():
    data = b'{"data": [{"id": "a/b", "pricing": {"prompt": 0.0000001, "completion": 3e-7}}]}'

    (model,) = parse_catalog(data).models

    assert model.input_per_mtok == Decimal("0.1") and model.output_per_mtok == Decimal("0.3")
    assert isinstance(model.input_per_mtok, Decimal)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"<html>busy</html>", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
        (b'{"models": []}', "no data list"),
        (b'{"data": {"id": "a/b"}}', "no data list"),
        (b"[]", "no data list"),
    ],
)
def test_a_reply_of_the_wrong_shape_as_a_whole_is_a_catalog_error(data, problem):
    with pytest.raises(CatalogError, match=problem):
        parse_catalog(data)


def test_printable_neutralises_escapes_bidi_overrides_and_lone_surrogates():
    assert printable("Mistral: \x1b[31mSmall\x1b[0m\u202e") == (
        "Mistral: \\u001b[31mSmall\\u001b[0m\\u202e"
    )
    assert printable("a\ud800b\nc") == "a\\ud800b\\u000ac"
    assert printable("Llama 3.3 (free) — 70B") == "Llama 3.3 (free) — 70B"


def test_select_filters_by_free_context_and_vendor():
    models = parse_catalog(RECORDED).models

    assert [m.id for m in select(models, free=True)] == [
        "meta-llama/llama-3.3-70b-instruct:free",
        "openrouter/sonoma-sky-alpha",
    ]
    assert {m.id for m in select(models, min_context=1_000_000)} == {
        "google/gemini-2.5-flash",
        "openrouter/auto",
        "openrouter/sonoma-sky-alpha",
    }
    assert [m.id for m in select(models, vendor="anthropic")] == ["anthropic/claude-haiku-4.5"]
    assert len(select(models, vendor="openrouter")) == len(models)
    assert [m.id for m in select(models, free=True, min_context=100_000)] == [
        "openrouter/sonoma-sky-alpha"
    ]


def test_select_leaves_out_a_model_of_unknown_context_when_a_minimum_is_asked():
    data = b'{"data": [{"id": "a/b", "pricing": {}}]}'
    models = parse_catalog(data).models

    assert select(models, min_context=1) == []
    assert len(select(models)) == 1


@pytest.mark.parametrize(
    ("text", "tokens"), [("131072", 131072), ("100k", 100_000), ("8K", 8000), ("1m", 1_000_000)]
)
def test_a_context_length_is_a_number_with_an_optional_k_or_m(text, tokens):
    assert parse_context(text) == tokens


@pytest.mark.parametrize("text", ["", "lots", "100kb", "-5", "1.5k", "1e6"])
def test_anything_else_is_not_a_context_length(text):
    with pytest.raises(ValueError, match="not a context length"):
        parse_context(text)


# -- the catalog, fetched -------------------------------------------------------------------


def _fetch(handler, **options) -> bytes:
    async def go() -> bytes:
        async with make_client(transport=httpx.MockTransport(handler)) as client:
            return await fetch_catalog(client, "https://openrouter.test/api/v1/models", **options)

    return asyncio.run(go())


def test_the_fetch_is_a_get_of_the_models_url_without_a_key():
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=RECORDED)

    assert _fetch(handler) == RECORDED
    (request,) = seen
    assert request.method == "GET" and str(request.url).endswith("/api/v1/models")
    assert "authorization" not in request.headers


def test_a_non_200_reply_is_a_catalog_error_naming_the_status():
    with pytest.raises(CatalogError, match="HTTP 503 from https://openrouter.test"):
        _fetch(lambda request: httpx.Response(503, json={"error": "busy"}))


def test_a_redirect_is_not_followed():
    moved = httpx.Response(301, headers={"location": "http://169.254.169.254/"})
    with pytest.raises(CatalogError, match="HTTP 301"):
        _fetch(lambda request: moved)


def test_a_reply_larger_than_the_cap_is_refused():
    with pytest.raises(CatalogError, match="larger than 1,000 bytes"):
        _fetch(lambda request: httpx.Response(200, content=b" " * 1001), max_bytes=1000)
    assert _fetch(lambda request: httpx.Response(200, content=b" " * 1000), max_bytes=1000)


def test_a_transport_failure_is_a_catalog_error():
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("name or service not known")

    with pytest.raises(CatalogError, match="ConnectError: name or service not known"):
        _fetch(handler)


def test_no_reply_in_time_is_a_catalog_error():
    async def handler(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(5)
        return httpx.Response(200, content=RECORDED)

    with pytest.raises(CatalogError, match="no reply from .* within 0.2s"):
        _fetch(handler, timeout_s=0.2)


# -- the command ----------------------------------------------------------------------------


class Served:
    """The recorded catalog (or another reply) through httpx.MockTransport; counts calls."""

    def __init__(self, response: httpx.Response | None = None) -> None:
        self.response = response or httpx.Response(200, content=RECORDED)
        self.requests: list[httpx.Request] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.response

    def client(self, **options) -> httpx.AsyncClient:
        return make_client(transport=httpx.MockTransport(self.handler), **options)


def models(*args: str, env: dict[str, str] | None = None, served: Served | None = None):
    """(exit code, stdout, stderr) of `evalsite models ARGS` in `env` (no keys by default)."""
    served = served or Served()
    out, err = StringIO(), StringIO()
    code = 0
    with (
        mock.patch.dict(os.environ, {**CLEAN_ENV, **(env or {})}, clear=True),
        mock.patch.object(command, "make_client", served.client),
    ):
        try:
            call_command("models", *args, stdout=out, stderr=err)
        except SystemExit as exit_:
            code = exit_.code
    return code, out.getvalue(), err.getvalue()


def line_of(out: str, model: str) -> str:
    (line,) = [line for line in out.splitlines() if line.split()[:1] == [model]]
    return line


class PriceTableModelsTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.table = make_price_table(
            {
                "anthropic/claude-haiku-4-5": ("1.00", "5.00"),
                "openai/gpt-4o-mini": ("0.15", "0.60"),
                "openrouter/openai/gpt-4o-mini": ("0.15", "0.60"),
                "fake/small": ("0.10", "0.40"),
                "mystery/model": ("1", "1"),
            },
            active=True,
        )
        cls.table.prices.filter(model="openai/gpt-4o-mini").update(
            cached_input_per_mtok=Decimal("0.075")
        )

    def test_each_model_shows_its_provider_prices_and_whether_its_key_is_set(self):
        code, out, _ = models(env={"OPENAI_API_KEY": SECRET})

        assert code == 0
        assert f"price table {self.table.name}" in out and "UNVERIFIED" in out
        assert line_of(out, "openai/gpt-4o-mini").split() == [
            "openai/gpt-4o-mini", "openai", "0.15", "0.6", "0.075", "set"
        ]  # fmt: skip
        assert line_of(out, "anthropic/claude-haiku-4-5").split() == [
            "anthropic/claude-haiku-4-5", "anthropic", "1", "5", "-", "not", "set:",
            "ANTHROPIC_API_KEY",
        ]  # fmt: skip
        assert line_of(out, "fake/small").endswith("no key needed")
        assert line_of(out, "mystery/model").endswith("unknown provider")
        assert SECRET not in out

    def test_a_blank_key_is_not_set(self):
        _, out, _ = models("--no-catalog", env={"ANTHROPIC_API_KEY": "   "})

        assert line_of(out, "anthropic/claude-haiku-4-5").endswith("not set: ANTHROPIC_API_KEY")

    def test_provider_keeps_only_that_providers_models(self):
        _, out, _ = models("--provider", "openai")

        assert "openai/gpt-4o-mini" in out
        assert "anthropic/claude-haiku-4-5" not in out and "fake/small" not in out

    def test_a_provider_with_no_models_says_so_and_names_the_tables_providers(self):
        code, out, _ = models("--provider", "anthropc")

        assert code == 0
        assert "no models of provider 'anthropc' in this table" in out
        assert "anthropic, fake, mystery, openai, openrouter" in out

    def test_json_gives_every_row_with_its_key_state_and_no_key_value(self):
        code, out, _ = models("--json", env={"ANTHROPIC_API_KEY": SECRET})

        document = json.loads(out)
        assert code == 0
        assert document["table"] == self.table.name and document["verified"] is False
        rows = {row["model"]: row for row in document["models"]}
        assert rows["anthropic/claude-haiku-4-5"] == {
            "model": "anthropic/claude-haiku-4-5",
            "provider": "anthropic",
            "input_per_mtok": "1",
            "output_per_mtok": "5",
            "cached_input_per_mtok": None,
            "key": "set",
        }
        assert rows["openai/gpt-4o-mini"]["key"] == "not set: OPENAI_API_KEY"
        assert document["catalog"] is None and document["catalog_error"] is None
        assert SECRET not in out

    def test_without_an_openrouter_key_the_catalog_is_not_fetched(self):
        served = Served()
        code, out, _ = models(served=served)

        assert code == 0 and served.requests == []
        assert "OpenRouter catalog" not in out

    def test_no_active_table_is_one_error_line(self):
        PriceTable.objects.filter(pk=self.table.pk).update(active=False)
        make_price_table(name="spare")  # a table exists, so none is loaded as the default

        code, out, err = models()

        assert code == 2
        assert err.startswith("error: no active price table")


class CatalogCommandTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        make_price_table(
            {"openrouter/openai/gpt-4o-mini": ("0.15", "0.60"), "fake/small": ("0.1", "0.4")},
            active=True,
        )

    def test_with_an_openrouter_key_the_catalog_is_listed_after_the_table(self):
        served = Served()
        code, out, err = models(env={"OPENROUTER_API_KEY": SECRET}, served=served)

        assert code == 0
        (request,) = served.requests
        assert str(request.url) == "https://openrouter.ai/api/v1/models"
        assert "authorization" not in request.headers  # the catalog is public
        assert out.index("price table") < out.index("OpenRouter catalog: 7 models")
        table, catalog = out.split("OpenRouter catalog")
        assert line_of(table, "openrouter/openai/gpt-4o-mini").endswith("set")
        assert line_of(catalog, "openrouter/openai/gpt-4o-mini").split()[:7] == [
            "openrouter/openai/gpt-4o-mini", "128000", "0.15", "0.6", "0.075", "-", "yes"
        ]  # fmt: skip
        free = line_of(catalog, "openrouter/meta-llama/llama-3.3-70b-instruct:free").split()
        assert free[1:7] == ["65536", "0", "0", "-", "free", "-"]
        assert line_of(catalog, "openrouter/openrouter/auto").split()[1:6] == [
            "2000000", "?", "?", "-", "-"
        ]  # fmt: skip
        assert SECRET not in out + err

    def test_the_malformed_entry_is_skipped_and_counted_on_stderr(self):
        code, out, err = models("--catalog")

        assert code == 0
        assert "warning: skipped 1 malformed catalog entry: data[7]: no id" in err
        assert "4096" not in out

    def test_control_characters_in_names_never_reach_the_terminal(self):
        _, out, _ = models("--catalog")

        assert "\x1b" not in out and "\u202e" not in out
        assert "Mistral: \\u001b[31mMistral Small" in out

    def test_control_characters_in_ids_never_reach_the_terminal(self):
        entry = {"id": "evil/\x1b]0;pwned\x07model", "pricing": {"prompt": "0"}}
        served = Served(httpx.Response(200, json={"data": [entry]}))

        code, out, _ = models("--catalog", served=served)

        assert code == 0
        assert "\x1b" not in out and "\x07" not in out
        assert "openrouter/evil/\\u001b]0;pwned\\u0007model" in out

    def test_free_and_min_context_without_the_key_or_catalog_reach_no_network(self):
        """Issue 28: the catalog is fetched with the key or --catalog, never for a filter."""
        for args in (["--free"], ["--min-context", "100k"], ["--json", "--free"]):
            served = Served()
            code, out, err = models(*args, served=served)

            assert code == 0 and served.requests == [], args
            assert "OpenRouter catalog:" not in out, args
            assert err.strip() == (
                f"note: {args[-2] if args[-1] == '100k' else args[-1]} filters OpenRouter's "
                "catalog, which is fetched only when OPENROUTER_API_KEY is set or with "
                "--catalog: add --catalog to fetch it (it is public: no key is sent)"
            ), args

    def test_free_with_the_key_filters_the_catalog(self):
        served = Served()
        code, out, _ = models("--free", env={"OPENROUTER_API_KEY": SECRET}, served=served)

        assert code == 0 and len(served.requests) == 1
        assert "7 models, 2 shown (--free)" in out

    def test_free_and_min_context_filter_the_catalog(self):
        code, out, _ = models("--catalog", "--free", "--min-context", "100k")

        assert code == 0
        assert "7 models, 1 shown (--free --min-context 100000)" in out
        assert "openrouter/openrouter/sonoma-sky-alpha" in out
        assert "llama-3.3-70b-instruct:free" not in out  # 65,536 tokens of context
        assert "gpt-4o-mini" not in out.split("OpenRouter catalog")[1]

    def test_provider_filters_the_catalog_by_vendor(self):
        _, out, _ = models("--catalog", "--provider", "anthropic")

        catalog = out.split("OpenRouter catalog")[1]
        assert "openrouter/anthropic/claude-haiku-4.5" in catalog
        assert "gemini" not in catalog and "gpt-4o-mini" not in catalog

    def test_no_catalog_wins_over_the_key(self):
        served = Served()
        code, out, _ = models("--no-catalog", env={"OPENROUTER_API_KEY": SECRET}, served=served)

        assert code == 0 and served.requests == [] and "OpenRouter catalog" not in out

    def test_catalog_and_no_catalog_together_are_refused(self):
        with pytest.raises(CommandError, match="not allowed with"):
            models("--catalog", "--no-catalog")

    def test_json_carries_the_catalog_with_prices_as_decimal_strings(self):
        code, out, _ = models("--json", "--catalog", "--free")

        catalog = json.loads(out)["catalog"]
        assert code == 0
        assert catalog["total"] == 7 and catalog["skipped"] == ["data[7]: no id"]
        assert [m["model"] for m in catalog["models"]] == [
            "openrouter/meta-llama/llama-3.3-70b-instruct:free",
            "openrouter/openrouter/sonoma-sky-alpha",
        ]
        assert catalog["models"][0] == {
            "model": "openrouter/meta-llama/llama-3.3-70b-instruct:free",
            "id": "meta-llama/llama-3.3-70b-instruct:free",
            "name": "Meta: Llama 3.3 70B Instruct (free)",
            "context_length": 65536,
            "input_per_mtok": "0",
            "output_per_mtok": "0",
            "cached_input_per_mtok": None,
            "free": True,
            "in_price_table": False,
        }

    def test_a_non_200_is_one_line_and_exit_3_with_the_table_still_printed(self):
        served = Served(httpx.Response(502, text="bad gateway"))
        code, out, err = models(env={"OPENROUTER_API_KEY": SECRET}, served=served)

        assert code == 3
        assert "fake/small" in out and "OpenRouter catalog" not in out
        assert err.strip().splitlines() == [
            "error: could not fetch the OpenRouter catalog: "
            "HTTP 502 from https://openrouter.ai/api/v1/models"
        ]

    def test_a_reply_that_is_not_a_catalog_is_exit_3(self):
        code, out, err = models("--catalog", served=Served(httpx.Response(200, text="[1, 2]")))

        assert code == 3 and "fake/small" in out
        assert (
            err.strip()
            == "error: could not fetch the OpenRouter catalog: the reply has no data list"
        )

    def test_in_json_a_failed_fetch_keeps_the_table_and_names_the_error(self):
        code, out, err = models("--json", "--catalog", served=Served(httpx.Response(500)))

        document = json.loads(out)
        assert code == 3
        assert [row["model"] for row in document["models"]] == [
            "fake/small", "openrouter/openai/gpt-4o-mini"
        ]  # fmt: skip
        assert document["catalog"] is None
        assert document["catalog_error"].startswith("HTTP 500 from")
        assert "could not fetch the OpenRouter catalog: HTTP 500" in err

    def test_an_oversized_reply_is_refused(self):
        with mock.patch("evalsite.core.catalog.MAX_CATALOG_BYTES", 1000):
            big = Served(httpx.Response(200, content=RECORDED))
            code, _, err = models("--catalog", served=big)

        assert code == 3
        assert "could not fetch the OpenRouter catalog: the reply is larger than" in err


# -- the real client, against 127.0.0.1 -----------------------------------------------------


@contextmanager
def catalog_server(body: bytes):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the http.server API)
            self.send_response(200 if self.path == "/api/v1/models" else 404)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/api/v1/models"
    finally:
        server.shutdown()
        server.server_close()


def call_real(*args: str) -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    try:
        with mock.patch.dict(os.environ, CLEAN_ENV, clear=True):
            call_command("models", *args, stdout=out, stderr=err)
    except SystemExit as exit_:
        return exit_.code, out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


class RealClientTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        make_price_table(active=True)

    def test_the_projects_client_reads_the_catalog_from_a_local_server(self):
        with catalog_server(RECORDED) as url, mock.patch.object(command, "CATALOG_URL", url):
            code, out, _ = call_real("--catalog", "--free")

        assert code == 0
        assert "OpenRouter catalog: 7 models, 2 shown (--free)" in out

    def test_a_refused_connection_is_one_line_and_exit_3(self):
        with socket.socket() as probe:  # a port nothing listens on
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        url = f"http://127.0.0.1:{port}/api/v1/models"
        with mock.patch.object(command, "CATALOG_URL", url):
            code, out, err = call_real("--catalog")

        assert code == 3 and "fake/small" in out
        (line,) = err.strip().splitlines()
        assert line.startswith(
            f"error: could not fetch the OpenRouter catalog: cannot connect to {url}"
        )


def test_models_is_a_verb_of_the_prices_and_data_group():
    assert "models" in GROUPS["Prices & data"]


def test_a_bad_min_context_is_a_usage_error_naming_the_value():
    with pytest.raises(CommandError, match="'lots' is not a context length"):
        call_command("models", "--min-context", "lots")
