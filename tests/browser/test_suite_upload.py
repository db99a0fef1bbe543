"""The suite form validates as you type (htmx) and registers without a page error."""

from __future__ import annotations

from playwright.sync_api import expect

from runs.models import PriceTable, SuiteVersion
from tests.helpers.factories import small_suite_text


def test_problems_appear_by_line_as_you_type_and_the_fixed_suite_registers(
    logged_in, live_server, transactional_db
):
    PriceTable.objects.ensure_default()
    page = logged_in
    page.goto(f"{live_server.url}/suites/new/")
    problems = page.locator("#suite-problems")
    expect(problems).to_contain_text("Waiting for a suite")

    broken = small_suite_text("typed").replace(
        "    kind: rewrite", "    kind: rewrite\n    rubrik: x"
    )
    page.fill("#id_yaml_text", broken)
    expect(problems).to_contain_text("tasks[0].rubrik", timeout=10_000)
    expect(problems).to_contain_text("line 8")
    expect(problems).to_contain_text("did you mean 'rubric'")

    page.fill("#id_yaml_text", small_suite_text("typed"))
    expect(problems).to_contain_text("ok: typed - 1 tasks, 2 cases", timeout=10_000)
    assert not SuiteVersion.objects.exists()  # checking stores nothing

    page.click("button[value=register]")
    page.wait_for_url(f"{live_server.url}/suites/typed/")
    expect(page.locator("h1")).to_have_text("typed")
    assert SuiteVersion.objects.filter(suite__name="typed").count() == 1
    assert page.watch.problems == []
