"""report.html's Files appendix: each case's attached files listed by name, type, size and
hash; small images embedded as data: URLs built from their bytes; nothing fetched."""

from __future__ import annotations

import base64
import re

from evalsite.core.report.html import CSP, EMBED_MAX_BYTES, Attachment, render_html
from tests.helpers.report import XSS_CORPUS, make_report

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 40


def _attachment(**overrides) -> Attachment:
    fields = {
        "task": "invoice-image",
        "case": "invoice-0042",
        "name": "scan",
        "path": "fixtures/invoice-0042.png",
        "media_type": "image/png",
        "size": len(PNG),
        "sha256": "ab" * 32,
        "data": PNG,
    }
    return Attachment(**(fields | overrides))


def test_a_small_image_is_embedded_as_a_data_url_the_meta_csp_allows():
    html = render_html(make_report(), [_attachment()])

    assert f'src="data:image/png;base64,{base64.b64encode(PNG).decode()}"' in html
    assert "img-src data:" in CSP and '<a href="#files">Files</a>' in html


def test_an_image_over_the_limit_and_a_pdf_are_listed_by_name_type_size_and_hash_only():
    big = _attachment(size=EMBED_MAX_BYTES + 1, data=None, sha256="cd" * 32)
    pdf = _attachment(
        name="receipt", path="r.pdf", media_type="application/pdf", data=b"%PDF-", sha256="ef" * 32
    )

    html = render_html(make_report(), [big, pdf])

    assert "data:" not in html.split('id="files"', 1)[1]
    assert "cd" * 32 in html and "ef" * 32 in html and "application/pdf" in html
    assert "over 2 MiB: not embedded" in html


def test_no_attachment_no_files_section():
    assert 'id="files"' not in render_html(make_report())


def test_hostile_names_stay_text_and_a_non_image_type_is_never_a_data_url():
    payload = "\n".join(XSS_CORPUS)
    html = render_html(
        make_report(),
        [
            _attachment(task=payload, case=payload, name=payload, path=payload),
            _attachment(media_type="text/html", data=b"<script>alert(1)</script>"),
        ],
    )
    files = html.split('id="files"', 1)[1]

    assert not re.search(r"<(script|svg|iframe)\b|<div hx-", files)
    assert "data:text/html" not in files and files.count("<img ") == 1
