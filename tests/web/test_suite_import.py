"""The add-suite page imports another tool's file in one click, named after the uploaded
file (or the Name typed), and shows no path on the server."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from runs.models import Suite
from tests.helpers.factories import make_user
from tests.importers.test_import_command import _price_openrouter_models

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
PROMPTFOO = (
    "prompts: ['Capital of {{country}}?']\n"
    "providers: [openrouter:openai/gpt-4o-mini]\n"
    "tests:\n"
    "  - vars: {country: France}\n"
    "    assert:\n"
    "      - {type: icontains, value: paris}\n"
    "      - {type: javascript, value: output.split(' ').length < 9}\n"
)


@pytest.fixture
def member(client: Client) -> Client:
    _price_openrouter_models()
    client.force_login(make_user(username="member"))
    return client


def _post(member: Client, filename: str, **data):
    upload = SimpleUploadedFile(filename, PROMPTFOO.encode())
    return member.post("/suites/new/", {"file": upload, "intent": "register", **data})


def test_one_click_on_register_registers_an_upload_named_after_its_file(member):
    response = _post(member, "My Evals.yaml")
    assert response.status_code == 302 and response["Location"] == "/suites/my-evals/"
    assert list(Suite.objects.values_list("name", flat=True)) == ["my-evals"]
    page = member.get(response["Location"]).content.decode()
    assert "1 part of the file did not translate" in page


def test_the_name_typed_names_the_suite_made_an_identifier(member):
    response = _post(member, "promptfooconfig.yaml", name="World Capitals!")
    assert response["Location"] == "/suites/world-capitals/"


def test_the_check_names_the_upload_and_the_suite_it_registers_never_a_server_path(member):
    upload = SimpleUploadedFile("promptfooconfig.yaml", PROMPTFOO.encode())
    page = member.post("/suites/new/", {"file": upload, "intent": "check"}, **HTMX)
    text = page.content.decode()
    assert "registers it as <code>promptfooconfig</code>" in text
    assert "promptfooconfig.yaml" in text  # the untranslated list names the upload
    assert not re.search(r"/tmp/|evalsite-upload|/var/|/private/", text)
    assert not Suite.objects.exists()


def test_a_pasted_file_keeps_its_tools_name_unless_one_is_typed(member):
    pasted = {"yaml_text": PROMPTFOO, "intent": "register"}
    assert member.post("/suites/new/", pasted)["Location"] == "/suites/pasted-suite/"
    renamed = member.post("/suites/new/", pasted | {"name": "capitals"})
    assert renamed["Location"] == "/suites/capitals/"
