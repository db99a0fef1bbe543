"""In Chromium: another tool's file chosen on the add-suite page is shown translated, named
after the file, and one click on Register registers it (the first click used to only fill
the editor)."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from runs.models import Suite
from tests.importers.test_import_command import _price_openrouter_models
from tests.web.test_suite_import import PROMPTFOO


def test_one_click_registers_a_promptfoo_file_named_after_it(
    logged_in, live_server, transactional_db, tmp_path
):
    _price_openrouter_models()
    source = tmp_path / "World Capitals.yaml"
    source.write_text(PROMPTFOO)
    page = logged_in
    page.goto(f"{live_server.url}/suites/new/")

    page.set_input_files("#id_file", str(source))
    problems = page.locator("#suite-problems")
    expect(problems).to_contain_text("registers it as world-capitals", timeout=10_000)
    expect(problems).not_to_contain_text(re.compile(r"/tmp/|evalsite-upload"))
    page.click("button[value=register]")

    page.wait_for_url(f"{live_server.url}/suites/world-capitals/")
    assert list(Suite.objects.values_list("name", flat=True)) == ["world-capitals"]
    assert page.watch.problems == []
