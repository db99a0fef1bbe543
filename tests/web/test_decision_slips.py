"""The decision form: no verdict is chosen for the member (a choice is required), and the
same decision sent again after a reload (a fresh form, the same words) is stored once."""

from __future__ import annotations

import re

from django.test import TestCase
from django.urls import reverse

from runs.forms import DecisionForm
from runs.models import Decision
from tests.helpers.factories import make_run, make_user


def _token(page: str) -> str:
    match = re.search(r'name="form_token" value="([^"]+)"', page)
    assert match, "the page carries no decision form"
    return match.group(1)


class DecisionFormTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.member = make_user()
        cls.finished = make_run(status="done")

    def setUp(self):
        self.client.force_login(self.member)
        self.url = reverse("decision_new", args=[self.finished.id])

    def _page(self) -> str:
        return self.client.get(reverse("run_detail", args=[self.finished.id])).content.decode()

    def test_no_verdict_radio_is_chosen_and_there_is_no_blank_option(self):
        form = self._page()
        form = form[form.index(f'action="{self.url}"') :]
        radios = re.findall(r'<input type="radio"[^>]*>', form[: form.index("</form>")])
        assert len(radios) == len(Decision.Verdict.choices)
        assert not [r for r in radios if "checked" in r or 'value=""' in r]
        assert all("required" in r for r in radios)

    def test_a_decision_without_a_verdict_is_refused_beside_the_choice(self):
        response = self.client.post(self.url, {"reasoning": "looks good"})
        assert response.status_code == 400
        assert "Verdict: This field is required." in response.content.decode()
        assert not Decision.objects.exists()

    def test_the_same_decision_sent_again_from_a_reloaded_page_is_stored_once(self):
        words = {"verdict": "adopt", "reasoning": "wins on every task"}
        first = self.client.post(self.url, words | {"form_token": _token(self._page())})
        again = self.client.post(self.url, words | {"form_token": _token(self._page())})
        bare = self.client.post(self.url, words)  # a resent POST with no token at all
        assert first.status_code == again.status_code == bare.status_code == 302
        assert again["Location"] == f"/runs/{self.finished.id}/#decisions"
        assert Decision.objects.count() == 1

    def test_other_words_or_another_member_are_a_new_decision(self):
        words = {"verdict": "adopt", "reasoning": "wins on every task"}
        self.client.post(self.url, words)
        self.client.post(self.url, words | {"verdict": "keep"})
        self.client.force_login(make_user())
        self.client.post(self.url, words)
        assert Decision.objects.count() == 3

    def test_the_model_records_a_decision_once_within_the_window(self):
        first, stored = Decision.objects.record(self.finished, self.member, "keep", "n is small")
        again, stored_again = Decision.objects.record(
            self.finished, self.member, "keep", "n is small"
        )
        assert stored and not stored_again and again.pk == first.pk

    def test_the_form_offers_the_three_verdicts_only(self):
        choices = [value for value, _ in DecisionForm().fields["verdict"].choices]
        assert choices == [value for value, _ in Decision.Verdict.choices]
