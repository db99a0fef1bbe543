"""The pair page shows what each side was sent (the case's inputs and the rendered messages,
a long one folded) and a word diff of the two answers, escaped; a no-look run shows neither."""

from __future__ import annotations

import pytest
from django.test import Client

from runs.models import Answer
from tests.helpers.factories import make_pair, make_run, make_suite_version, make_user

pytestmark = pytest.mark.django_db
LONG = "line of the ticket\\n" * 20
SUITE = f"""\
suite: sent
version: 1
models: [fake/small, fake/large]
variants:
  terse: {{system: "Answer in one word."}}
tasks:
  - id: triage
    system: "You triage support tickets."
    prompt: "Ticket: {{{{ticket}}}}"
    cases:
      - {{id: short, vars: {{ticket: "charged twice"}}}}
      - {{id: long, vars: {{ticket: "{LONG}"}}}}
"""


def _page(run, pair) -> str:
    client = Client()
    client.force_login(make_user())
    response = client.get(f"/runs/{run.id}/pairs/{pair.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def _run(**fields):
    return make_run(suite_version=make_suite_version(SUITE), **fields)


def test_the_pair_page_shows_the_case_inputs_and_the_messages_sent_once_when_the_same():
    run = _run()
    html = _page(run, make_pair(run, "triage", "short"))
    assert 'id="pair-sent"' in html
    assert "<code>ticket</code>" in html and "charged twice" in html
    assert "You triage support tickets." in html and "Ticket: charged twice" in html
    assert html.count("Ticket: charged twice") == 1  # both sides were sent it: shown once


def test_a_long_message_and_a_long_input_start_folded():
    run = _run()
    html = _page(run, make_pair(run, "triage", "long"))
    folded = html.split('id="pair-sent"')[1].split("</section>")[0]
    assert "<details><summary><strong>user</strong>" in folded
    assert '<dd><details><summary class="muted">' in folded  # the long input too


def test_sides_sent_different_prompts_show_each_above_its_answer():
    run = _run(contestants=["fake/small", "fake/large@terse"])
    html = _page(run, make_pair(run, "triage", "short"))
    assert "were sent different prompts" in html
    assert "Answer in one word." in html and "You triage support tickets." in html


def test_the_word_diff_marks_the_changed_words_and_escapes_the_answers():
    run = _run()
    pair = make_pair(run, "triage", "short", texts=("refund <b>now</b>", "refund <b>later</b>"))
    html = _page(run, pair)
    diff = html.split('id="pair-diff"')[1].split("</details>")[0]
    assert "<del>&lt;b&gt;now&lt;/b&gt;</del>" in diff
    assert "<ins>&lt;b&gt;later&lt;/b&gt;</ins>" in diff
    assert "<b>" not in diff


def test_no_diff_when_a_side_failed():
    run = _run()
    pair = make_pair(run, "triage", "short")
    Answer.objects.filter(pk=pair.candidate_id).update(status=Answer.Status.ERROR, text="")
    assert 'id="pair-diff"' not in _page(run, pair)


def test_a_no_look_run_shows_neither_what_was_sent_nor_a_diff():
    run = _run(no_look=True)
    html = _page(run, make_pair(run, "triage", "short"))
    assert 'id="pair-sent"' not in html and 'id="pair-diff"' not in html
    assert "charged twice" not in html
    assert "What was sent is hidden: no-look run." in html
