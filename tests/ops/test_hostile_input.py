"""Hostile input that used to give a traceback, a 500 or a bare error page: integers too long
for Python to read, output paths that cannot be written, a reader that leaves the pipe, and
a paste over Django's request limit. Each gets one clear message and the usual exit code."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from evalsite.core.input_limits import MAX_INT_DIGITS
from evalsite.core.yamlsafe import load_yaml
from runs.models import PriceTable, Suite
from tests.helpers import launcher
from tests.helpers.cli import cli_env
from tests.helpers.factories import (
    make_price_table,
    make_suite_version,
    make_user,
    small_suite_text,
)
from tests.helpers.yaml_loaders import yaml_problems

ROOT = Path(__file__).resolve().parents[2]
EVALSITE = Path(sys.executable).parent / "evalsite"
HTMX = {"HTTP_HX_REQUEST": "true"}
BIG = "9" * 5000
TOO_LONG = "integer of 5,000 digits is too long (at most 4,300)"


# --- 11. integers over Python's 4,300-digit limit ---------------------------------------


def test_an_over_long_integer_names_its_file_line_and_key(loader):
    data = f"suite: x\ntasks:\n  - id: a\n    vars: {{n: {BIG}}}\n".encode()
    assert yaml_problems(data) == [
        f"s.yaml:4: tasks[0].vars.n: {TOO_LONG}; quote it to keep it as text"
    ]


def test_an_integer_of_exactly_the_limit_still_loads(loader):
    value = int("7" * MAX_INT_DIGITS)
    assert load_yaml(f"n: {'7' * MAX_INT_DIGITS}\n".encode(), filename="s.yaml").data == {
        "n": value
    }


@pytest.mark.parametrize(
    "text",
    [
        "-" + BIG,
        "9_" * 4400,  # underscores are dropped before the digits are counted
        "!!int " + BIG,
        "0x" + "f" * 4000,  # reads fine, but has about 4,817 decimal digits: str() fails
        "0b" + "1" * 15000,
        "1" + ":59" * 3000,  # base 60: would also cost quadratic time to build
    ],
    ids=["negative", "underscores", "tagged", "hex", "binary", "sexagesimal"],
)
def test_every_spelling_of_an_over_long_integer_is_refused_before_it_is_built(loader, text):
    [problem] = yaml_problems(f"n: {text}\n".encode())
    assert re.fullmatch(
        r"s\.yaml:1: n: integer of [\d,]+ digits is too long \(at most 4,300\).*", problem
    )


@pytest.mark.parametrize(
    ("text", "kind"),
    [("!!int abc", "int"), ("!!int ''", "int"), ("!!float x", "float"), ("!!bool maybe", "bool")],
)
def test_a_tagged_scalar_yaml_cannot_build_is_a_problem_not_a_crash(loader, text, kind):
    [problem] = yaml_problems(f"a:\n  b: {text}\n".encode())
    assert problem.startswith("s.yaml:2: a.b: ") and f"is not a valid !!{kind}" in problem


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """A data dir where suite `tiny` is registered (by a dry run), for `labels`."""
    data = tmp_path_factory.mktemp("hostile-data")
    suite = data / "tiny.yaml"
    suite.write_text(small_suite_text("tiny"))
    result = evalsite(data, "run", str(suite), "--fake", "--dry-run")
    assert result.returncode == 0, result.stderr
    return data


def evalsite(data_dir, *args, stdout=subprocess.PIPE):
    if stdout == subprocess.PIPE:
        return launcher.run(list(args), env=cli_env(data_dir))
    return subprocess.run(
        [str(EVALSITE), *args],
        cwd=ROOT,
        env=cli_env(data_dir),
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
    )


def _refused(result, *expected: str) -> str:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    for text in expected:
        assert text in result.stderr, result.stderr
    return result.stderr


def test_validate_and_run_refuse_a_suite_with_an_over_long_integer(data_dir, tmp_path):
    suite = tmp_path / "big.yaml"
    suite.write_text(
        "suite: big\nversion: 1\nmodels: [fake/small, fake/large]\ntasks:\n"
        f"  - id: one\n    prompt: hi\n    cases: [{{id: a, vars: {{n: {BIG}}}}}]\n"
    )
    expected = f"{suite}:7: tasks[0].cases[0].vars.n: {TOO_LONG}"
    _refused(evalsite(data_dir, "validate", str(suite)), expected)
    _refused(evalsite(data_dir, "run", str(suite), "--fake"), expected)


def test_run_refuses_a_replies_file_with_an_over_long_integer(data_dir, tmp_path):
    replies = tmp_path / "replies.yaml"
    replies.write_text(f"good:\n  n: {BIG}\n")
    suite = str(data_dir / "tiny.yaml")
    result = evalsite(
        data_dir, "run", suite, "--models", "scripted/a,scripted/b", "--replies", str(replies)
    )
    _refused(result, f"{replies}:2: good.n: {TOO_LONG}")


def test_prices_import_refuses_an_over_long_integer(data_dir, tmp_path):
    prices = tmp_path / "prices.yaml"
    prices.write_text(
        "pinned: 2026-01-01\nmodels:\n"
        f"  - model: openai/x\n    input_per_mtok: {BIG}\n    output_per_mtok: 1\n"
    )
    _refused(
        evalsite(data_dir, "prices", "import", str(prices)),
        f"{prices}:4: models[0].input_per_mtok: {TOO_LONG}",
    )


def test_labels_import_refuses_an_over_long_integer(data_dir, tmp_path):
    labels = tmp_path / "labels.yaml"
    labels.write_text(f"- task: a\n  case: b\n  note: {BIG}\n")
    _refused(
        evalsite(data_dir, "labels", "import", "tiny", str(labels)),
        f"{labels}:3: [0].note: {TOO_LONG}",
    )


@pytest.fixture
def member(db):
    client = Client()
    client.force_login(make_user())
    return client


def test_the_add_suite_page_lists_an_over_long_integer_as_a_problem(member):
    text = small_suite_text("big").replace("who: Ada", f"who: {BIG}")
    for headers in ({}, HTMX):
        response = member.post(reverse("suite_new"), {"yaml_text": text}, **headers)
        assert response.status_code == 200
        assert TOO_LONG in response.content.decode()
    assert not Suite.objects.filter(name="big").exists()


def test_an_uploaded_replies_file_with_an_over_long_integer_is_refused_on_the_page(member):
    make_price_table(active=True)
    version = make_suite_version()
    upload = SimpleUploadedFile("replies.yaml", f"good:\n  n: {BIG}\n".encode())
    form = {"pick_0": "on", "order_0": "1", "pick_1": "on", "order_1": "2", "replies": upload}
    response = member.post(reverse("run_new", args=[version.suite.name, version.sha256]), form)
    assert response.status_code == 400
    assert f"replies.yaml:2: good.n: {TOO_LONG}" in response.content.decode()


def test_the_labels_import_form_lists_an_over_long_integer_as_a_problem(member):
    version = make_suite_version()
    url = reverse("labels_import", args=[version.suite.name])
    response = member.post(url, {"yaml": f"- note: {BIG}\n"}, follow=True)
    assert response.status_code == 200
    assert f"uploaded labels:1: [0].note: {TOO_LONG}" in response.content.decode()


# --- 13. output paths that cannot be written, and a reader that leaves ------------------


def _unwritable(tmp_path: Path, target: str) -> Path:
    (tmp_path / "out").mkdir()
    return tmp_path / target


@pytest.mark.parametrize("target", ["missing-dir/x.yaml", "out"], ids=["missing-dir", "a-dir"])
def test_prices_export_to_a_path_it_cannot_write_is_one_error_line(data_dir, tmp_path, target):
    path = _unwritable(tmp_path, target)
    stderr = _refused(evalsite(data_dir, "prices", "export", str(path)), f"error: {path}: ")
    assert len(stderr.strip().splitlines()) == 1
    # no temporary file left behind, and the directory is untouched
    assert [p.name for p in tmp_path.iterdir()] == ["out"] and not any((tmp_path / "out").iterdir())


@pytest.mark.parametrize("target", ["missing-dir/x.yaml", "out"], ids=["missing-dir", "a-dir"])
def test_labels_export_to_a_path_it_cannot_write_is_one_error_line(data_dir, tmp_path, target):
    path = _unwritable(tmp_path, target)
    result = evalsite(data_dir, "labels", "export", "tiny", "--out", str(path))
    stderr = _refused(result, f"error: {path}: ")
    assert len(stderr.strip().splitlines()) == 1


def test_a_reader_that_leaves_the_pipe_ends_the_command_quietly(data_dir):
    read_end, write_end = os.pipe()
    os.close(read_end)  # `evalsite prices | head -0`: nobody reads what is written
    try:
        result = evalsite(data_dir, "prices", stdout=write_end)
    finally:
        os.close(write_end)
    assert result.stderr == ""
    assert result.returncode == 141  # 128 + SIGPIPE, as a shell reports `git log | head`


# --- 14. a paste over Django's request limit --------------------------------------------


@pytest.fixture
def browser(db):
    """A client that checks CSRF as the real middleware does (the test client skips it)."""
    PriceTable.objects.ensure_default()
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user())
    client.get(reverse("suite_new"))
    return client


def _paste_over_the_request_limit() -> str:
    return "a: " + "x" * (7 * 1024 * 1024)


def test_a_paste_over_the_request_limit_shows_the_form_with_the_size_message(browser):
    token = browser.cookies["csrftoken"].value
    data = {"yaml_text": _paste_over_the_request_limit(), "csrfmiddlewaretoken": token}
    response = browser.post(reverse("suite_new"), data)
    page = response.content.decode()
    assert response.status_code == 413
    assert "file is larger than 5,242,880 bytes" in page and "the limit is 5,242,880" in page
    assert 'class="suite-form"' in page and 'name="yaml_text"' in page


def test_a_paste_over_the_request_limit_checked_live_gets_the_message_fragment(browser):
    token = browser.cookies["csrftoken"].value
    data = {"yaml_text": _paste_over_the_request_limit(), "intent": "check"}
    response = browser.post(reverse("suite_new"), data, HTTP_X_CSRFTOKEN=token, **HTMX)
    text = response.content.decode()
    assert response.status_code == 200  # htmx swaps only 2xx responses by default
    assert text.strip().startswith('<div id="suite-problems"') and "<html" not in text
    assert "file is larger than 5,242,880 bytes" in text


def test_the_add_suite_page_still_needs_the_csrf_token(browser):
    data = {"yaml_text": small_suite_text("csrf"), "intent": "register"}
    assert browser.post(reverse("suite_new"), data).status_code == 403
    token = browser.cookies["csrftoken"].value
    response = browser.post(reverse("suite_new"), data | {"csrfmiddlewaretoken": token})
    assert response.status_code == 302 and Suite.objects.filter(name="csrf").exists()
