"""The labelling page puts the choice first: a label says what was stored, undo what was
undone; the suite's guidelines (else the judge's rubric) are beside the pair; the floor
sentence waits for min_labels; and an empty queue says why."""

from __future__ import annotations

import re

import pytest
from django.template.loader import render_to_string
from django.test import override_settings

from labels import queue
from runs.models import Pair, Run, Suite
from tests.helpers.factories import make_user
from tests.helpers.labelling import blind_run, member_client, page_token

pytestmark = pytest.mark.django_db(transaction=True)
HTMX = {"HTTP_HX_REQUEST": "true"}
GUIDELINES = "Prefer the answer a support agent could send as it is."
RUBRIC = "Correctness first, then tone."


def judged_run(guidelines: str = GUIDELINES, rubric: str = RUBRIC) -> Run:
    """The labelling tests' judged run of 24 pairs (tests/helpers/labelling.py), its judge
    with a rubric, and the suite's labelling guidelines (none: the suite is `rubric-only`)."""

    def edit(text: str) -> str:
        text = text.replace("judge: {", f"judge: {{rubric: '{rubric}', ")
        if not guidelines:
            return text.replace("suite: blind", "suite: rubric-only")
        return text.replace(
            "version: 1\n", f"version: 1\nlabelling: {{guidelines: '{guidelines}'}}\n"
        )

    return blind_run(edit=edit)


@pytest.fixture
def guided_run() -> Run:
    return judged_run()


def test_a_label_says_what_was_stored_and_undo_what_was_undone(guided_run):
    client = member_client(make_user())
    page = client.get("/label/blind/").content.decode()
    stored = client.post("/label/blind/", {"token": page_token(page), "choice": "3"}, **HTMX)
    assert "stored: right better · u to undo" in stored.content.decode()
    undone = client.post("/label/blind/", {"action": "undo"}, **HTMX).content.decode()
    assert "undone: right better" in undone
    tie = client.post("/label/blind/", {"token": page_token(undone), "choice": "tie"}, **HTMX)
    assert "stored: tie · u to undo" in tie.content.decode()
    # without JavaScript the same words come after the redirect
    page = client.get("/label/blind/").content.decode()
    followed = client.post(
        "/label/blind/", {"token": page_token(page), "choice": "left"}, follow=True
    )
    assert followed.content.decode().count("stored: left better · u to undo") == 1


def test_the_guidelines_are_beside_the_pair_else_the_judges_rubric(guided_run):
    html = member_client(make_user()).get("/label/blind/").content.decode()
    guide = html.split('id="label-guide"')[1].split("</details>")[0]
    assert "Labelling guidelines" in guide and GUIDELINES in guide
    assert RUBRIC not in html

    judged_run(guidelines="")
    html = member_client(make_user()).get("/label/rubric-only/").content.decode()
    guide = html.split('id="label-guide"')[1].split("</details>")[0]
    assert "The judge&#x27;s rubric" in guide and RUBRIC in guide


def test_the_judges_rubric_beside_the_pair_is_rendered_with_its_cases_vars():
    judged_run(guidelines="", rubric="Judge question {{q}} on its facts.")
    html = member_client(make_user()).get("/label/rubric-only/").content.decode()
    guide = html.split('id="label-guide"')[1].split("</details>")[0]
    assert re.search(r"Judge question c\d\d on its facts\.", guide)
    assert "{{" not in guide


def test_the_run_picker_is_folded_away_above_the_pair(guided_run):
    html = member_client(make_user()).get("/label/blind/").content.decode()
    picker = html.split('<details id="label-run"')[1].split("</details>")[0]
    assert guided_run.id in picker
    assert html.index('id="label-run"') < html.index('id="label-pair"')


@pytest.mark.parametrize(
    ("status", "n", "said"),
    [("insufficient_labels", 2, False), ("below_floor", 4, True), ("below_floor", 9, True)],
)
def test_the_floor_sentence_waits_until_n_reaches_min_labels(status, n, said):
    calibration = {
        "status": status, "reason": "…", "kappa": 0.1, "agreement": 0.5, "n": n,
        "min_labels": 4, "labels_needed": None, "labels_used": {"total": n},
    }  # fmt: skip
    html = render_to_string("components.html#calibration-panel", {"calibration": calibration})
    assert ("more labels alone will not lift it above the floor" in html) is said
    assert ("at least 4 labelled pairs are needed" in html) is not said


def _offer_all(suite: Suite, user, keep_open: int = 0, skip: int = 0) -> None:
    """`user` labels every waiting pair but the last `keep_open` (left open on their screen)
    and `skip` (skipped)."""
    ids = queue.waiting(suite, user)
    for number, pk in enumerate(ids):
        offer = queue.offer(suite, user, Pair.objects.get(pk=pk))
        left = len(ids) - number
        if left <= keep_open:
            continue
        if left <= keep_open + skip:
            queue.skip(offer.assignment)
        else:
            queue.record(user, offer.assignment, "left", "", queue.SAMPLE)


def _empty_reason(user) -> str:
    html = member_client(user).get("/label/blind/").content.decode()
    found = re.search(r"Nothing waiting for you in this suite: ([^<]+)\.</p>", html)
    assert found, html
    return found.group(1)


@override_settings(EVALSITE_LABEL_OVERLAP=0.0)
def test_an_empty_queue_says_that_the_last_pairs_are_reserved_for_another_member(guided_run):
    ann, bob = make_user(), make_user()
    _offer_all(guided_run.suite, ann, keep_open=2)
    reason = _empty_reason(bob)
    assert reason == "the last 2 pairs are reserved for another member for 10 more minutes"


@override_settings(EVALSITE_LABEL_OVERLAP=0.0)
def test_an_empty_queue_says_when_every_pair_is_labelled_or_what_was_skipped(guided_run):
    ann, bob = make_user(), make_user()
    _offer_all(guided_run.suite, ann, skip=1)
    assert _empty_reason(ann) == "you skipped the 1 pair left"
    _offer_all(guided_run.suite, bob)
    assert _empty_reason(bob) == "every pair has the labels it needs"
