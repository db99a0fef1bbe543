"""A datasource (``cases_from:``) is read only for suites loaded from a file (issue 25 item 19).

An uploaded suite with ``cases_from: {python: …}`` or ``{command: …}`` was accepted from the
browser, and a web run of it ended "done" with 0 answers: nothing reads a datasource there.
The upload now refuses it at its line, and no run of a suite whose cases were never read is
started, whichever way its version was registered.
"""

from __future__ import annotations

import pytest
from django.test import TestCase
from django.urls import reverse

from evalsite.core.problems import SuiteError
from evalsite.core.suites import parse_suite
from runs.models import PriceTable, Run, SuiteVersion
from runs.planning.planner import PlanError, RunOptions, make_plan
from tests.helpers.factories import make_user

SOURCED = """\
suite: sourced
version: 1
models: [fake/small, fake/large]
tasks:
  - id: triage
    prompt: "Classify {{{{body}}}}"
    cases_from: {source}
"""
PYTHON = SOURCED.format(source='{python: "sources.tickets:recent"}')
COMMAND = SOURCED.format(source='{command: ["./export-cases", "--since", "24h"]}')


def _problems(text: str, origin: str) -> list[str]:
    with pytest.raises(SuiteError) as caught:
        parse_suite(text.encode(), filename="s.yaml", origin=origin)
    return [f"{p.line} {p.path}: {p.message}" for p in caught.value.problems]


@pytest.mark.parametrize("text", [PYTHON, COMMAND], ids=["python", "command"])
def test_an_uploaded_suite_with_a_datasource_is_refused_at_its_line(text):
    [problem] = _problems(text, "upload")
    assert problem.startswith("7 tasks[0].cases_from: cases_from is allowed only in suites")
    assert "not in uploaded ones" in problem


def test_a_suite_from_a_file_may_have_a_datasource():
    suite = parse_suite(PYTHON.encode(), filename="s.yaml", origin="file")
    assert suite.tasks[0].cases_from == {"python": "sources.tickets:recent"}


def _stored(text: str, origin: str) -> SuiteVersion:
    """A version as it is stored (an upload registered before the refusal, or a file)."""
    loaded = parse_suite(text.encode(), filename="s.yaml", origin="file")
    version, _ = SuiteVersion.objects.register(loaded, text, origin=origin)
    return version


class UploadTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        PriceTable.objects.ensure_default()
        cls.user = make_user()

    def setUp(self):
        self.client.force_login(self.user)

    def test_the_upload_page_refuses_it_and_registers_nothing(self):
        response = self.client.post(reverse("suite_new"), {"yaml_text": COMMAND})
        page = response.content.decode()
        assert response.status_code == 200
        assert "cases_from is allowed only in suites loaded from a file" in page
        assert not SuiteVersion.objects.exists()

    def test_a_web_run_of_a_file_suite_with_a_datasource_is_refused_with_the_reason(self):
        """A suite registered from the suites directory keeps its cases_from: the web reads
        no datasource, so its run is refused, never started to end done with no answers."""
        version = _stored(PYTHON, SuiteVersion.Origin.PATH)
        page = self.client.get(reverse("suite_detail", args=["sourced"]))
        assert page.status_code == 200
        url = reverse("run_new", args=["sourced", version.sha256])
        response = self.client.post(url, {"others": "fake/small, fake/large", "fake": "on"})
        assert response.status_code == 400
        assert "datasource" in response.content.decode()
        assert not Run.objects.exists()

    def test_an_upload_stored_before_the_refusal_still_shows_and_is_refused_a_run(self):
        version = _stored(COMMAND, SuiteVersion.Origin.UPLOAD)
        assert version.core_suite().tasks[0].cases_from
        page = self.client.get(reverse("suite_detail", args=["sourced"]))
        assert page.status_code == 200
        with pytest.raises(PlanError, match="cases_from"):
            make_plan(version, version.core_suite(), RunOptions(fake=True))
