"""Cancel run asks first: the button on the run page asks (a page without htmx, the
progress fragment with htmx, which stops polling while it asks), and only the question's own
button cancels."""

from __future__ import annotations

from django.test import TestCase
from django.urls import reverse

from runs.models import Run
from tests.helpers.factories import make_run, make_user

HTMX = {"HTTP_HX_REQUEST": "true"}


class CancelAsksFirstTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.owner = make_user()

    def setUp(self):
        self.client.force_login(self.owner)
        self.running = make_run(status=Run.Status.RUNNING, created_by=self.owner)
        self.url = reverse("run_cancel", args=[self.running.id])

    def _cancel_requested(self) -> bool:
        return Run.objects.get(pk=self.running.pk).cancel_requested

    def test_the_run_pages_button_asks_rather_than_cancels(self):
        page = self.client.get(reverse("run_detail", args=[self.running.id])).content.decode()
        form = page[page.index(f'action="{self.url}"') :]
        form = form[: form.index("</form>")]
        assert 'name="ask" value="1"' in form and "Cancel run…" in form

    def test_asking_shows_the_question_page_and_cancels_nothing(self):
        response = self.client.post(self.url, {"ask": "1"})
        html = response.content.decode()
        assert response.status_code == 200 and "<html" in html
        assert "Cancel this run?" in html and "Yes, cancel the run" in html
        assert "No, keep it running" in html
        assert not self._cancel_requested()

    def test_asking_over_htmx_swaps_in_the_question_without_polling(self):
        html = self.client.post(self.url, {"ask": "1"}, **HTMX).content.decode()
        assert "<html" not in html and "Cancel this run?" in html
        assert 'hx-trigger="every 1s"' not in html
        assert not self._cancel_requested()

    def test_the_questions_button_cancels(self):
        response = self.client.post(self.url)
        assert response.status_code == 302 and self._cancel_requested()

    def test_another_member_is_refused_at_the_question_too(self):
        self.client.force_login(make_user())
        assert self.client.post(self.url, {"ask": "1"}).status_code == 403
