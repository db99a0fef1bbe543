"""The new-run form takes the labels the command line takes ("demo first run"), says why it
cannot estimate, and shows each launch error beside its input with the first one focused
(or the launch button, beside the estimate, when the planner refused)."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from runs.models import Run
from runs.models.run import label_problem
from tests.helpers.factories import make_user
from tests.web.test_run_form import HTMX, _urls, _version

pytestmark = pytest.mark.django_db(transaction=True)
PICKED = {"pick_0": "on", "pick_1": "on", "fake": "on"}
RUN_ID_LIKE = "20261203T141439Z_adfb"


@pytest.fixture
def member(client: Client) -> Client:
    client.force_login(make_user(username="member"))
    return client


@pytest.fixture(autouse=True)
def _no_queue(monkeypatch):
    monkeypatch.setattr("runs.engine.tasks.async_task", lambda *args, **kw: None)


def _input(page: str, name: str) -> str:
    return re.search(rf'<input[^>]*name="{name}"[^>]*>', page).group(0)


def test_a_label_of_words_launches_as_on_the_command_line(member):
    run_new, _ = _urls(_version())
    response = member.post(run_new, PICKED | {"label": "demo first run"})
    assert response.status_code == 302
    assert Run.objects.get().label == "demo first run"


def test_a_label_that_hides_a_run_id_is_refused_beside_the_label_and_focused(member):
    run_new, _ = _urls(_version())
    page = member.post(run_new, PICKED | {"label": RUN_ID_LIKE}).content.decode()
    label = _input(page, "label")
    assert "autofocus" in label and 'aria-invalid="true"' in label
    assert 'aria-describedby="id_label_error"' in label
    error = re.search(r'<span class="error field-error" id="id_label_error">([^<]*)</span>', page)
    assert error and "looks like a run id" in error.group(1)
    assert page.index("id_label_error") - page.index('name="label"') < 400  # beside it
    assert not Run.objects.exists()


def test_only_the_first_invalid_input_is_focused(member):
    run_new, _ = _urls(_version())
    data = PICKED | {"label": RUN_ID_LIKE, "max_cost": "-1"}
    page = member.post(run_new, data).content.decode()
    assert "autofocus" in _input(page, "max_cost") and "autofocus" not in _input(page, "label")
    assert page.count("autofocus") == 1


def test_an_invalid_cap_or_label_says_why_there_is_no_estimate(member):
    _, estimate = _urls(_version())
    fragment = member.post(estimate, PICKED | {"max_cost": "-1", "label": RUN_ID_LIKE}, **HTMX)
    text = fragment.content.decode()
    assert "<html" not in text and "Cannot estimate until these are fixed:" in text
    assert '<a href="#id_max_cost">Cap (USD)</a>: the cap must be a positive number' in text
    assert (
        f'<a href="#id_label">Label</a>: {label_problem(RUN_ID_LIKE)}'.replace("'", "&#x27;")
        in text
    )


def test_a_planner_refusal_focuses_the_launch_button_beside_the_estimate(member):
    run_new, _ = _urls(_version())
    page = member.post(run_new, {"others": "fake/small, fake/large@consise", "fake": "on"})
    text = page.content.decode()
    assert page.status_code == 400 and "Cannot estimate: unknown variant" in text
    assert re.search(r'<button type="submit" class="primary" autofocus>Launch run</button>', text)
    assert text.count("autofocus") == 1
