"""The other doors of issue 25: files a member hands the judge lab or `--baseline`, the
admin's prices, run labels and MCP's cap. Each hostile input is one clear line naming what is
wrong and where (exit 2 on the command line, a message on the page), never a traceback, a
500 or a value stored past its bound."""

from __future__ import annotations

import json
import tempfile
import threading
from decimal import Decimal
from pathlib import Path

import anyio
import pytest
from django.contrib.auth.backends import ModelBackend
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from evalsite.core.exitcodes import ExitCode
from evalsite.core.json_text import JsonTextError, load_json
from evalsite.core.money import MoneyError, parse_cap
from evalsite.login import ThrottledBackend, seconds_locked
from lab.models import PairSet
from runs.models import Price, PriceTable, Run
from runs.models.run import label_problem
from tests.helpers.factories import (
    make_price_table,
    make_run,
    make_suite_version,
    make_user,
    run_command,
    small_suite_text,
)
from tests.web.test_admin import changelist_post

PAIR = {
    "id": "p1", "question": "Q", "answer_a": "A", "answer_b": "B", "model_a": "m1",
    "model_b": "m2", "votes": [{"labeller": "ada", "prefer": "a"}],
}  # fmt: skip
DEEP = "[" * 100_000 + "]" * 100_000  # past Python's recursion limit
NESTING = "not valid JSON: nesting is deeper than 64 levels"


# --- JSON from outside ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (DEEP, NESTING),
        ("[" * 65 + "]" * 65, NESTING),
        ('{"a": ' * 70 + "1" + "}" * 70, NESTING),
        ("9" * 5000, "not valid JSON: integer of 5,000 digits is too long (at most 4,300)"),
        ("-" + "9" * 5000, "not valid JSON: integer of 5,000 digits is too long (at most 4,300)"),
        ("[NaN]", "not valid JSON: NaN is not a JSON number"),
        ('{"a": }', "not valid JSON: Expecting value at column 7"),
    ],
)
def test_json_from_outside_is_one_message_never_the_readers_exception(text, message):
    with pytest.raises(JsonTextError) as refused:
        load_json(text)
    assert str(refused.value).startswith(message)


def test_json_within_the_bounds_reads_as_python_reads_it():
    assert load_json("[" * 64 + "]" * 64) is not None
    assert load_json('{"n": ' + "9" * 4300 + "}")["n"] == int("9" * 4300)


# --- the judge lab's JSONL (item 12) -----------------------------------------------------------


def _deep_pairs() -> str:
    return json.dumps(PAIR) + "\n" + json.dumps(PAIR | {"id": "p2"})[:-1] + f', "x": {DEEP}}}\n'


@pytest.mark.django_db
def test_pairs_import_of_a_deeply_nested_line_is_one_line_exit_2(tmp_path):
    (tmp_path / "deep.jsonl").write_text(_deep_pairs())
    code, out, err = run_command("pairs", "import", str(tmp_path / "deep.jsonl"))
    assert (code, out) == (ExitCode.INPUT_ERROR, "")
    assert err == f"error: {tmp_path / 'deep.jsonl'}:2: {NESTING}\n"
    assert not PairSet.objects.exists()


@pytest.mark.django_db
def test_a_deeply_nested_upload_to_the_judge_lab_is_a_message_not_a_500():
    PriceTable.objects.ensure_default()
    client = Client()
    client.force_login(make_user())
    upload = SimpleUploadedFile("deep.jsonl", _deep_pairs().encode())
    response = client.post("/lab/", {"file": upload, "name": ""})
    page = response.content.decode()
    assert response.status_code == 400 and "1 problem; nothing was imported" in page
    assert f'line 2</span>\n    \n    <span class="message">{NESTING}</span>' in page
    assert not PairSet.objects.exists()


# --- --baseline files (item 13) ---------------------------------------------------------------


def _baseline_json(cases) -> str:
    return json.dumps({"format": "evalpin-results", "version": 1, "cases": cases})


BAD_BASELINES = {
    "a 5,000-digit count in a results file": (
        "evalpin-results 1\ngreet 1 " + "9" * 5000 + "\n",
        "base.txt:2: PASSED and TOTAL are at most 1,000,000",
    ),
    "a count of 5,000 zeros and a one in a results file": (
        "evalpin-results 1\ngreet 1 " + "0" * 5000 + "1\nbye 1 " + "0" * 5000 + "\n",
        "base.txt:3: TOTAL must be at least 1",
    ),
    "a 5,000-digit count in the imported JSON": (
        '{"format": "evalpin-results", "version": 1, "cases": [{"case": "greet", '
        '"passed": 1, "total": ' + "9" * 5000 + "}]}",
        "base.txt: not valid JSON: integer of 5,000 digits is too long (at most 4,300); quote it "
        "to keep it as text",
    ),
    "deep nesting in the imported JSON": (
        '{"format": "evalpin-results", "cases": ' + DEEP + "}",
        f"base.txt: {NESTING}",
    ),
    "a JSON object that is not a baseline": (
        '{"format": "report"}',
        "base.txt: not the baseline JSON `evalsite import` writes (format: evalpin-results) "
        "nor an evalpin results file",
    ),
    "a negative count": (
        _baseline_json([{"case": "greet", "passed": -1, "total": 2}]),
        "base.txt: cases[0].passed: must be a whole number from 0 to 1,000,000, not -1",
    ),
    "a count that is text": (
        _baseline_json([{"case": "greet", "passed": "1", "total": 2}]),
        'base.txt: cases[0].passed: must be a whole number from 0 to 1,000,000, not "1"',
    ),
    "a count that is a fraction": (
        _baseline_json([{"case": "greet", "passed": 1, "total": 2.5}]),
        "base.txt: cases[0].total: must be a whole number from 1 to 1,000,000, not 2.5",
    ),
    "a count that is a boolean": (
        _baseline_json([{"case": "greet", "passed": True, "total": 2}]),
        "base.txt: cases[0].passed: must be a whole number from 0 to 1,000,000, not true",
    ),
    "more passed than attempts": (
        _baseline_json([{"case": "greet", "passed": 3, "total": 2}]),
        "base.txt: cases[0]: passed (3) cannot exceed total (2)",
    ),
    "a case twice": (
        _baseline_json([{"case": "greet", "passed": 1, "total": 2}] * 2),
        "base.txt: cases[1].case: 'greet' is listed twice",
    ),
    "a case that is not text": (
        _baseline_json([{"case": ["greet"], "passed": 1, "total": 2}]),
        "base.txt: cases[0].case: must be a case id (lowercase letters, digits and '-'), not "
        '["greet"]',
    ),
    "cases that are not a list": (
        '{"format": "evalpin-results", "version": 1, "cases": {"greet": 1}}',
        "base.txt: cases: must be a list of {case, passed, total}",
    ),
}


@pytest.mark.django_db
@pytest.mark.parametrize("case", list(BAD_BASELINES))
def test_a_bad_baseline_file_is_one_line_exit_2(case, tmp_path, monkeypatch):
    text, message = BAD_BASELINES[case]
    monkeypatch.chdir(tmp_path)
    Path("base.txt").write_text(text)
    code, out, err = run_command("compare", "base.txt", "latest")
    assert (code, out) == (ExitCode.INPUT_ERROR, "")
    assert err == f"error: {message}\n"


@pytest.mark.django_db
def test_a_results_file_with_a_bom_and_crlf_is_read_as_evalpin_reads_it(tmp_path):
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    first.write_bytes(b"\xef\xbb\xbfevalpin-results 1\r\ngreet 1 2\r\nbye 1 1\r\n")
    second.write_bytes(b"evalpin-results 1\r\ngreet 2 2\r\n")
    code, out, err = run_command("compare", str(first), str(second))
    assert (code, err) == (ExitCode.OK, "")
    assert out.splitlines()[1:3] == ["greet  1/2  2/2  better", "bye    1/1  -    gone"]


# --- the login throttle (item 14) -------------------------------------------------------------


def test_thirty_concurrent_wrong_passwords_check_only_five_before_the_lock(monkeypatch):
    """The count and the check are one step: every thread reaches the backend before any
    password check returns (they all wait at the check until each thread has either
    reached it or been refused), so a check-then-count backend lets all 30 through."""
    cache.clear()
    arrived = threading.Condition()
    checked, refused, release = [], [], threading.Event()

    def slow_check(self, request, username=None, password=None, **kwargs):
        with arrived:
            checked.append(password)
            arrived.notify_all()
        release.wait()
        return None  # the wrong password

    def attempt(number: int) -> None:
        try:
            ThrottledBackend().authenticate(None, username="Ann", password=f"guess-{number}")
        except PermissionDenied:
            with arrived:
                refused.append(number)
                arrived.notify_all()

    monkeypatch.setattr(ModelBackend, "authenticate", slow_check)
    threads = [threading.Thread(target=attempt, args=(n,)) for n in range(30)]
    for thread in threads:
        thread.start()
    with arrived:
        arrived.wait_for(lambda: len(checked) + len(refused) == 30)
    release.set()
    for thread in threads:
        thread.join()
    assert (len(checked), len(refused)) == (5, 25)
    assert seconds_locked("ann") > 0
    cache.clear()


# --- price rates at every door (item 15) ------------------------------------------------------

OVER = "999999.999999"  # fits the column (12 digits, 6 places); over the $100,000 bound
RATE_MESSAGE = "the rate $999999.999999 per million tokens is over $100000"


def _staff_client() -> Client:
    client = Client()
    client.force_login(make_user(is_staff=True, is_superuser=True))
    return client


def _price_fields(price, **changes) -> dict[str, str]:
    fields = {"table": str(price.table_id), "model": price.model,
              "input_per_mtok": str(price.input_per_mtok),
              "output_per_mtok": str(price.output_per_mtok), "cached_input_per_mtok": "",
              "source_url": "", "read_on": ""}  # fmt: skip
    return fields | changes


@pytest.mark.django_db
@pytest.mark.parametrize("field", ["input_per_mtok", "output_per_mtok", "cached_input_per_mtok"])
def test_the_admin_price_form_refuses_a_rate_over_the_bound(field):
    price = make_price_table().prices.get(model="fake/small")
    url = reverse("admin:runs_price_change", args=[price.pk])
    response = _staff_client().post(url, _price_fields(price, **{field: OVER}))
    assert response.status_code == 200 and RATE_MESSAGE in response.content.decode()
    price.refresh_from_db()
    assert price.input_per_mtok == Decimal("0.10") and price.cached_input_per_mtok is None
    added = _staff_client().post(
        reverse("admin:runs_price_add"), _price_fields(price, model="fake/new", **{field: OVER})
    )
    assert added.status_code == 200 and not Price.objects.filter(model="fake/new").exists()


@pytest.mark.django_db
def test_the_price_changelist_refuses_a_rate_over_the_bound_and_too_many_places():
    table = make_price_table()
    prices = list(Price.objects.filter(table=table).order_by("model"))
    url = reverse("admin:runs_price_changelist") + f"?table__id__exact={table.pk}"
    for rate, message in [
        (OVER, RATE_MESSAGE),
        ("-1", "the rate must be 0 or more USD per million tokens"),
    ]:
        response = _staff_client().post(url, changelist_post(prices, **{"fake/small": rate}))
        assert response.status_code == 200 and message in response.content.decode()
    assert Price.objects.get(table=table, model="fake/small").input_per_mtok == Decimal("0.10")


@pytest.mark.django_db
def test_the_price_table_inline_refuses_a_rate_over_the_bound():
    table = make_price_table()
    prices = list(table.prices.order_by("model"))
    data = {"name": table.name, "pinned": table.pinned.isoformat(), "currency": "USD",
            "notes": "", "source": "", "prices-TOTAL_FORMS": str(len(prices)),
            "prices-INITIAL_FORMS": str(len(prices)), "prices-MIN_NUM_FORMS": "0",
            "prices-MAX_NUM_FORMS": "1000"}  # fmt: skip
    for i, price in enumerate(prices):
        rate = OVER if price.model == "fake/small" else str(price.input_per_mtok)
        fields = _price_fields(price, input_per_mtok=rate, id=str(price.pk), table=str(table.pk))
        data |= {f"prices-{i}-{key}": value for key, value in fields.items()}
    response = _staff_client().post(reverse("admin:runs_pricetable_change", args=[table.pk]), data)
    assert response.status_code == 200 and RATE_MESSAGE in response.content.decode()
    assert table.prices.get(model="fake/small").input_per_mtok == Decimal("0.10")


# --- run labels never hide a run id (item 16) -------------------------------------------------

ID_LIKE = ["20261203T141439Z_adfb", "20261203T141439Z", "20261203T14", "2026", "20261203T"]


@pytest.mark.parametrize("label", [*ID_LIKE, "latest", "baseline", "x" * 65])
def test_a_label_that_would_hide_a_run_or_not_fit_is_refused_saying_why(label):
    assert label_problem(label) is not None


@pytest.mark.parametrize("label", ["", "nightly", "v1.2", "2nd-try", "2026-q1", "T20261203"])
def test_ordinary_labels_are_allowed(label):
    assert label_problem(label) is None


@pytest.mark.django_db
def test_an_id_prefix_names_the_run_it_prefixes_even_when_an_older_label_spells_it():
    target = make_run(id="20261203T141439Z_adfb1234_0badf00d_1a2b")
    make_run(id="20261204T000000Z_aaaaaaaa_bbbbbbbb_cccc", label="20261203T141439Z_adfb")
    assert Run.objects.resolve("20261203T141439Z_adfb") == target
    named = make_run(id="20261205T000000Z_aaaaaaaa_bbbbbbbb_cccc", label="20261130T99")
    assert Run.objects.resolve("20261130T99") == named  # no run has that prefix: the label


@pytest.mark.django_db
def test_run_label_refuses_a_label_that_looks_like_a_run_id_before_planning(tmp_path):
    (tmp_path / "suite.yaml").write_text(small_suite_text())
    suite = str(tmp_path / "suite.yaml")
    code, out, err = run_command("run", suite, "--fake", "--label", "20261203T141439Z_adfb")
    assert (code, out) == (ExitCode.INPUT_ERROR, "")
    assert err.endswith(f"error: --label: {label_problem('20261203T141439Z_adfb')}\n")
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_the_new_run_form_refuses_a_label_that_looks_like_a_run_id(monkeypatch):
    monkeypatch.setattr("runs.engine.tasks.async_task", lambda *args, **kw: None)
    make_price_table(active=True)
    version = make_suite_version()
    client = Client()
    client.force_login(make_user())
    url = reverse("run_new", args=[version.suite.name, version.sha256])
    form = {"pick_0": "on", "order_0": "1", "pick_1": "on", "order_1": "2", "fake": "on"}
    response = client.post(url, form | {"label": "20261203T141439Z_adfb"})
    assert response.status_code == 400
    assert "looks like a run id" in response.content.decode()
    assert not Run.objects.exists()
    assert client.post(url, form | {"label": "nightly"}).status_code == 302


# --- MCP's max_cost is a number, never a boolean (info item) ----------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("given", "message"),
    [
        (True, "max_cost must be a number of USD"),
        (False, "max_cost must be a number of USD"),
        ([1], "max_cost must be a number of USD"),
        ({"usd": 1}, "max_cost must be a number of USD"),
        ("true", "max_cost 'true' is not a number of USD"),
    ],
)
def test_mcp_refuses_a_max_cost_that_is_not_a_number(given, message, tmp_path, settings):
    """A JSON `true` reached the cap as $1 (the tool's argument model turned it into 1.0
    before the cap rule, which refuses booleans, could see it)."""
    from evalsite.mcp.server import build_server  # the MCP SDK: imported when a test needs it

    (tmp_path / "suite.yaml").write_text(small_suite_text())
    settings.EVALSITE_MCP_SUITE_ROOT = str(tmp_path)
    arguments = {"suite_path": "suite.yaml", "fake": True, "max_cost": given}
    result = anyio.run(build_server().call_tool, "run_suite", arguments)
    assert result.is_error and result.structured_content == {
        "refused": True, "reason": "invalid_argument",
        "message": message, "spent_usd": 0,
    }  # fmt: skip
    assert not Run.objects.exists()


@pytest.mark.parametrize("given", [True, False, [1], {"usd": 1}, None])
def test_the_cap_rule_every_door_reads_refuses_what_is_not_a_number(given):
    with pytest.raises(MoneyError, match="^the cap must be a number of USD$"):
        parse_cap(given)
    assert parse_cap("1.5") == parse_cap(1.5) == Decimal("1.5")


@pytest.mark.django_db
def test_the_judge_labs_cap_is_read_by_the_rule_and_words_of_max_cost(tmp_path):
    PriceTable.objects.ensure_default()
    (tmp_path / "p.jsonl").write_text(json.dumps(PAIR))
    assert run_command("pairs", "import", str(tmp_path / "p.jsonl"))[0] == ExitCode.OK
    client = Client()
    client.force_login(make_user())
    url = reverse("lab_detail", args=["p"])
    for given, message in [
        ("0.0000001", "the cap has more than 6 decimal places: 0.0000001"),
        ("100001", "the cap $100001 is over the largest cap, $100000"),
        ("-1", "the cap must be a positive number of USD"),
    ]:
        page = client.post(url, {"model": "fake/large", "fake": "on", "max_cost": given})
        assert page.status_code == 400 and message in page.content.decode()
    assert not Run.objects.exists()


# --- what a member's error shows of the server (info item) ------------------------------------


@pytest.mark.django_db
def test_an_uploaded_sources_preview_names_the_upload_never_the_servers_temporary_folder():
    client = Client()
    client.force_login(make_user())
    config = b"prompts: [hi]\nproviders: [fake:small]\ntests: [{}, file://tests.txt]\n"
    upload = SimpleUploadedFile("promptfooconfig.yaml", config)
    response = client.post(reverse("suite_new"), {"file": upload, "intent": "check"})
    page = response.content.decode()
    text = response.context["form"].initial["yaml_text"]
    assert "evalsite-upload-" not in page + text and tempfile.gettempdir() not in page + text
    assert "promptfooconfig.yaml:3: tests file://tests.txt" in page
    assert text.startswith("# Imported by `evalsite import promptfoo` from promptfooconfig.yaml.")
    assert "\nsuite: promptfooconfig\n" in text  # not the temporary folder's random name


@pytest.mark.django_db
def test_a_replies_upload_that_cannot_serve_the_run_names_the_upload_not_the_data_dir(settings):
    make_price_table(active=True)
    version = make_suite_version()
    client = Client()
    client.force_login(make_user())
    url = reverse("run_new", args=[version.suite.name, version.sha256])
    replies = SimpleUploadedFile("mine.replies.yaml", b"scripted/good:\n  greet/one: [hi]\n")
    response = client.post(url, {"others": "scripted/good", "replies": replies})
    page = response.content.decode()
    assert response.status_code == 400 and str(settings.DATA_DIR) not in page
    assert "mine.replies.yaml has no reply for scripted/good on:" in page
