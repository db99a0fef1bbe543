"""The files a run's cases attach, on the app's pages (issue 17, "Seeing them"): served by
hash from the run's own suite version only, sandboxed, shown on the answers browser, the
pair page and the blind labelling page, embedded in report.html; nothing of a no-look run."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from runs.models import Pair, PriceTable, Run
from runs.models.suites import blob_store
from runs.results.media import NO_LOOK_MEDIA, report_attachments
from tests.helpers.factories import make_answer, make_pair, make_run, make_user

pytestmark = pytest.mark.django_db(transaction=True)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "multimodal"
SUITE = EXAMPLE / "multimodal.yaml"
CONTESTANTS = ("scripted/careful", "scripted/hasty")


def _sha(name: str) -> str:
    return hashlib.sha256((EXAMPLE / "fixtures" / name).read_bytes()).hexdigest()


PNG, PDF, WAV = _sha("invoice-0042.png"), _sha("receipt-1187.pdf"), _sha("voicemail-17.wav")


@pytest.fixture
def data_dir(settings, tmp_path) -> Path:
    """Blobs and reports in a temporary data dir (the store reads settings.DATA_DIR)."""
    settings.DATA_DIR = tmp_path / "data"
    settings.REPORTS_DIR = settings.DATA_DIR / "reports"
    settings.DATA_DIR.mkdir()
    return settings.DATA_DIR


@pytest.fixture
def run(data_dir) -> Run:
    """The multimodal example run by the engine with scripted contestants and judge."""
    PriceTable.objects.ensure_default()
    models = ",".join(CONTESTANTS)
    with pytest.raises(SystemExit) as exited:
        call_command("run", str(SUITE), "--models", models, "--judge", "scripted/judge")
    assert exited.value.code == 0
    return Run.objects.get()


@pytest.fixture
def member() -> Client:
    client = Client()
    client.force_login(make_user(username="member"))
    return client


def _media_url(run: Run, sha: str) -> str:
    return reverse("run_media", args=[run.id, sha])


# --- the media view ---------------------------------------------------------------------------


def test_an_attached_image_is_served_inline_with_its_type_nosniff_and_a_sandbox(run, member):
    response = member.get(_media_url(run, PNG))

    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Disposition"] == 'inline; filename="invoice-0042.png"'
    policy = response["Content-Security-Policy"]
    assert "sandbox" in policy and "default-src 'none'" in policy and "script" not in policy
    assert (
        b"".join(response.streaming_content) == (EXAMPLE / "fixtures/invoice-0042.png").read_bytes()
    )


def test_a_pdf_and_a_wav_are_served_with_their_stored_types(run, member):
    pdf, wav = member.get(_media_url(run, PDF)), member.get(_media_url(run, WAV))

    assert (pdf.status_code, pdf["Content-Type"]) == (200, "application/pdf")
    assert pdf["Content-Disposition"] == 'inline; filename="receipt-1187.pdf"'
    assert (wav.status_code, wav["Content-Type"]) == (200, "audio/wav")
    assert "sandbox" in pdf["Content-Security-Policy"]


def test_the_media_view_needs_a_login(run):
    response = Client().get(_media_url(run, PNG))

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_a_hash_the_suite_does_not_attach_is_404_without_a_traceback(run, member):
    kept_elsewhere = blob_store().put(b"a file some other suite attached")
    for sha in ("0" * 64, kept_elsewhere, "not-a-hash", "..", PNG.upper()):
        response = member.get(_media_url(run, sha))
        assert response.status_code == 404, sha
        assert b"Traceback" not in response.content
        assert response["Content-Type"].startswith("text/plain")


def test_a_hash_of_another_runs_suite_is_404_even_with_the_blob_in_the_store(run, member):
    other = make_run()  # the small suite: it attaches nothing

    assert member.get(_media_url(run, PNG)).status_code == 200
    assert member.get(_media_url(other, PNG)).status_code == 404


def test_a_no_look_run_serves_no_media_and_says_why(run, member):
    sealed = make_run(suite_version=run.suite_version, no_look=True, contestants=CONTESTANTS)

    response = member.get(_media_url(sealed, PNG))

    assert response.status_code == 404
    assert response.content.decode() == NO_LOOK_MEDIA


# --- the pages ---------------------------------------------------------------------------------


def _img(run: Run, sha: str) -> re.Pattern:
    return re.compile(rf'<img class="media-thumb" src="{re.escape(_media_url(run, sha))}"')


def test_the_answers_browser_shows_the_image_pdf_link_and_audio_full_and_htmx(run, member):
    url = reverse("answer_list", args=[run.id])
    full = member.get(url).content.decode()
    fragment = member.get(url, headers={"HX-Request": "true"}).content.decode()

    assert "<html" in full and "<html" not in fragment
    for page in (full, fragment):
        assert _img(run, PNG).search(page)
        assert 'alt="scan (image/png)"' in page
        assert f'<a href="{_media_url(run, PDF)}">receipt</a>' in page
        assert f'<audio controls preload="metadata" src="{_media_url(run, WAV)}"' in page


def test_the_pair_page_shows_its_cases_files(run, member):
    image = Pair.objects.get(run=run, case_id="invoice-0042")
    receipt = Pair.objects.get(run=run, case_id="receipt-1187-total")

    image_page = member.get(reverse("pair_detail", args=[run.id, image.pk])).content.decode()
    receipt_page = member.get(reverse("pair_detail", args=[run.id, receipt.pk])).content.decode()

    assert "Files sent" in image_page and _img(run, PNG).search(image_page)
    assert _media_url(run, PDF) not in image_page
    assert f'<a href="{_media_url(run, PDF)}">receipt</a>' in receipt_page
    assert _media_url(run, PNG) not in receipt_page


def test_the_labelling_page_shows_the_offered_cases_files_and_no_contestant(run, member):
    url = reverse("label_pair", args=[run.suite.name])
    shown = {}
    for _ in range(2):  # the two judged cases, in the queue's order: label one, then the next
        response = member.get(url)
        offer = response.context["offer"]
        fragment = member.get(url, headers={"HX-Request": "true"}).content.decode()
        shown[offer.pair.case_id] = (response.content.decode(), fragment)
        member.post(url, {"token": offer.token, "mode": "sample", "choice": "tie"})

    full, fragment = shown["invoice-0042"]
    assert "<html" in full and "<html" not in fragment
    assert _img(run, PNG).search(full) and _img(run, PNG).search(fragment)
    full, fragment = shown["receipt-1187-total"]
    assert f'<a href="{_media_url(run, PDF)}">receipt</a>' in full
    assert f'<a href="{_media_url(run, PDF)}">receipt</a>' in fragment
    for full, fragment in shown.values():
        assert not any(name in full + fragment for name in ("careful", "hasty"))


def test_a_no_look_runs_pages_show_nothing_of_its_cases_files(run, member):
    sealed = make_run(suite_version=run.suite_version, no_look=True, contestants=CONTESTANTS)
    pair = make_pair(sealed, "invoice-image", "invoice-0042")
    make_answer(sealed, "voicemail-audio", "voicemail-17", CONTESTANTS[0])

    pages = [
        member.get(reverse("answer_list", args=[sealed.id])).content.decode(),
        member.get(reverse("pair_detail", args=[sealed.id, pair.pk])).content.decode(),
    ]

    for page in pages:
        assert "/media/" not in page and "Files sent" not in page and "<audio" not in page


# --- report.html ---------------------------------------------------------------------------------


def test_report_html_embeds_the_image_as_a_data_url_and_lists_the_others(run):
    html = (run.report_dir / "report.html").read_text()
    png = base64.b64encode((EXAMPLE / "fixtures/invoice-0042.png").read_bytes()).decode()

    assert f'src="data:image/png;base64,{png}"' in html
    assert "img-src data:" in html  # the file's own <meta> CSP lets it show
    assert not re.search(r"(src|href)=\"https?:", html) and "/media/" not in html
    for sha in (PNG, PDF, WAV):
        assert sha in html
    assert "receipt-1187.pdf" in html and "application/pdf" in html and "627 bytes" in html


def test_a_no_look_run_reports_no_attachment(run):
    sealed = make_run(suite_version=run.suite_version, no_look=True, contestants=CONTESTANTS)
    make_answer(sealed, "invoice-image", "invoice-0042", CONTESTANTS[0])

    assert report_attachments(sealed) == []
    assert [a.name for a in report_attachments(run)] == ["scan", "receipt", "call"]
