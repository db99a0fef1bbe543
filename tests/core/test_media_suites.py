"""Typed content parts and the files cases attach: parsing, validation, hashing, rendering,
token bounds and the content-addressed store (no database)."""

from __future__ import annotations

import hashlib
import json
import pathlib
import shutil
from typing import Any

import pytest

from evalsite.core import media
from evalsite.core.plan import call_hash, input_tokens, plan_cells, request_hash
from evalsite.core.providers import build_provider
from evalsite.core.providers.base import Request, message_text, request_media
from evalsite.core.providers.capabilities import accepts
from evalsite.core.suites import Problem, SuiteError, load_suite, render_messages

EXAMPLE = pathlib.Path(__file__).parents[2] / "examples" / "multimodal"
PNG = (EXAMPLE / "fixtures" / "invoice-0042.png").read_bytes()
PDF = (EXAMPLE / "fixtures" / "receipt-1187.pdf").read_bytes()
WAV = (EXAMPLE / "fixtures" / "voicemail-17.wav").read_bytes()


@pytest.fixture
def folder(tmp_path: pathlib.Path) -> pathlib.Path:
    shutil.copytree(EXAMPLE / "fixtures", tmp_path / "fixtures")
    return tmp_path


def suite_text(content: str, files: str = "{scan: fixtures/invoice-0042.png}", **extra: str) -> str:
    models = extra.get("models", "[google/gemini-2.5-flash, anthropic/claude-haiku-4-5]")
    return (
        f"suite: media\nversion: 1\nmodels: {models}\n"
        "tasks:\n"
        "  - id: read\n"
        "    prompt:\n"
        "      - role: user\n"
        f"        content: {content}\n"
        "    cases:\n"
        "      - id: one\n"
        "        vars: {q: What does it say?}\n"
        f"        files: {files}\n"
    )


def load(folder: pathlib.Path, text: str, name: str = "suite.yaml"):
    (folder / name).write_text(text)
    return load_suite(folder / name)


def problems(folder: pathlib.Path, text: str) -> list[Problem]:
    with pytest.raises(SuiteError) as caught:
        load(folder, text)
    return list(caught.value.problems)


def test_the_example_suite_validates_with_an_image_a_pdf_and_an_audio_part() -> None:
    suite = load_suite(EXAMPLE / "multimodal.yaml")
    kinds = {
        part["type"]: part["media_type"]
        for task in suite.tasks
        for case in task.cases
        for message in render_messages(suite, task.id, case.id)
        for part in request_media(Request("fake/x", tuple(message for message in [message])))
    }
    assert kinds == {"image": "image/png", "file": "application/pdf", "audio": "audio/wav"}
    assert not suite.warnings


def test_a_part_renders_its_text_and_references_its_file_by_hash(folder) -> None:
    suite = load(folder, suite_text("[{text: 'Read it. {{q}}'}, {image: scan}]"))
    [message] = render_messages(suite, "read", "one")
    text, image = message["content"]
    assert text == {"type": "text", "text": "Read it. What does it say?"}
    assert image["type"] == "image" and image["name"] == "scan"
    assert image["media_type"] == "image/png" and image["size"] == len(PNG)
    assert image["sha256"] == hashlib.sha256(PNG).hexdigest()
    assert pathlib.Path(image["source"]).read_bytes() == PNG


def test_evalings_template_spelling_names_the_same_file(folder) -> None:
    suite = load(folder, suite_text("[{text: hi}, {image: '{{ files.scan }}'}]"))
    [message] = render_messages(suite, "read", "one")
    assert message["content"][1]["name"] == "scan"


def test_a_part_naming_a_file_the_case_does_not_attach_names_the_case_and_the_part(folder):
    found = problems(folder, suite_text("[{text: hi}, {image: photo}]"))
    assert [(p.path, p.message) for p in found] == [
        (
            "tasks[0].cases[0].files",
            "case 'one' of task 'read' attaches no file 'photo' for the image part at "
            "tasks[0].prompt[0].content[1].image (its files: scan)",
        )
    ]


def test_a_pdf_sent_as_an_image_is_an_error_at_its_file(folder) -> None:
    text = suite_text("[{image: scan}]", files="{scan: fixtures/receipt-1187.pdf}")
    [problem] = problems(folder, text)
    assert problem.path == "tasks[0].cases[0].files.scan"
    assert "is application/pdf, not an image" in problem.message
    assert "tasks[0].prompt[0].content[0].image" in problem.message


def test_an_image_part_sent_to_a_text_only_model_fails_validation_naming_case_and_part(folder):
    text = suite_text(
        "[{text: hi}, {image: scan}]", models="[openai/gpt-3.5-turbo, google/gemini-2.5-flash]"
    )
    [problem] = problems(folder, text)
    assert problem.path == "tasks[0].cases[0].files.scan"
    assert problem.message.startswith(
        "case 'one' of task 'read': openai/gpt-3.5-turbo does not accept an image (image/png), "
        "which the image part at tasks[0].prompt[0].content[1].image sends (it takes text only"
    )


def test_audio_sent_to_a_model_without_audio_is_refused_and_gemini_takes_it(folder) -> None:
    text = suite_text(
        "[{audio: call}]",
        files="{call: fixtures/voicemail-17.wav}",
        models="[google/gemini-2.5-flash, anthropic/claude-haiku-4-5]",
    )
    [problem] = problems(folder, text)
    assert "anthropic/claude-haiku-4-5 does not accept audio (audio/wav)" in problem.message
    assert "(it takes text and image, file;" in problem.message
    assert accepts("google/gemini-2.5-flash", "audio", "audio/wav") is True


def test_the_capability_table_knows_families_and_says_when_it_does_not() -> None:
    assert accepts("openai/gpt-4.1-mini", "image", "image/png") is True
    assert accepts("openai/gpt-4.1-mini", "audio", "audio/wav") is False
    assert accepts("openai/gpt-4o-audio-preview", "audio", "audio/mpeg") is True
    assert accepts("anthropic/claude-haiku-4-5", "file", "application/pdf") is True
    assert accepts("openrouter/anthropic/claude-sonnet-4-5", "image", "image/webp") is True
    assert accepts("openrouter/google/gemini-2.5-flash", "video", "video/mp4") is False
    assert accepts("fake/small", "video", "video/webm") is True
    assert accepts("scripted/good", "audio", "audio/ogg") is True
    assert accepts("openai/some-future-model", "image", "image/png") is None


def test_files_outside_the_suite_folder_and_unknown_types_are_refused(folder) -> None:
    (folder / "fixtures" / "notes.bin").write_bytes(b"\x00\x01\x02binary")
    outside = problems(folder, suite_text("[{image: scan}]", files="{scan: ../x.png}"))
    assert outside[0].message.endswith("must stay inside the suite's folder (no '..' or links "
                                       "leaving it)")  # fmt: skip
    unknown = problems(folder, suite_text("[{file: scan}]", files="{scan: fixtures/notes.bin}"))
    assert "not a file type evalsite can send" in unknown[0].message


def test_a_media_part_in_a_system_message_is_refused(folder) -> None:
    text = suite_text("hi").replace(
        "      - role: user\n        content: hi\n",
        "      - role: system\n        content: [{image: scan}]\n"
        "      - role: user\n        content: hi\n",
    )
    found = problems(folder, text)
    assert ("tasks[0].prompt[0].content[0]", "a system message takes text parts only") in [
        (p.path, p.message) for p in found
    ]


def test_a_part_with_two_kinds_is_a_schema_error(folder) -> None:
    found = problems(folder, suite_text("[{text: hi, image: scan}]"))
    assert found[0].message.startswith("a content part needs exactly one of: text, image")


def test_an_uploaded_suite_may_not_attach_files(folder) -> None:
    from evalsite.core.suites import parse_suite

    with pytest.raises(SuiteError) as caught:
        parse_suite(suite_text("[{image: scan}]").encode(), filename="s.yaml", origin="upload")
    assert "files: is allowed only for suites loaded from a file" in str(caught.value)


def test_file_columns_in_a_csv_cases_file_become_attached_files(folder) -> None:
    (folder / "cases.csv").write_text(
        "id,q,scan\none,What is it?,file://fixtures/invoice-0042.png\n"
    )
    text = suite_text("[{text: '{{q}}'}, {image: scan}]").split("    cases:")[0]
    suite = load(folder, text + "    cases_path: cases.csv\n")
    case = suite.task("read").case("one")
    assert case.vars == {"q": "What is it?"}
    assert case.files == {"scan": "fixtures/invoice-0042.png"}


def test_the_suite_hash_covers_each_files_bytes(folder) -> None:
    text = suite_text("[{image: scan}]")
    before = load(folder, text).sha256
    (folder / "fixtures" / "invoice-0042.png").write_bytes(PNG + b"\x00")
    assert load(folder, text).sha256 != before


def test_the_cache_key_covers_the_files_hash_not_where_it_is_read_from(folder) -> None:
    suite = load(folder, suite_text("[{text: hi}, {image: scan}]"))
    [cell] = plan_cells(suite, ["google/gemini-2.5-flash"], repeats=1)
    fake = build_provider("fake/x", env={})
    key = call_hash(cell.request, fake)
    moved = _with_part(cell.request, source="/elsewhere/copy.png")
    assert call_hash(moved, fake) == key
    edited = _with_part(cell.request, sha256="0" * 64)
    assert call_hash(edited, fake) != key


def test_a_text_only_requests_cache_key_is_what_it_was() -> None:
    """Parts changed nothing for text: the key is the hash of the same canonical payload, so
    every cached answer from before still serves."""
    request = Request("openai/gpt-4.1", ({"role": "user", "content": "hello"},), max_tokens=5)
    fields = {k: v for k, v in request.to_json().items() if k != "timeout_s"}
    payload = {"provider": "openai", "adapter": "openai-1", "schema_mode": None, "request": fields}
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    expected = hashlib.sha256(canonical.encode()).hexdigest()
    assert fields["messages"] == [{"role": "user", "content": "hello"}]
    assert request_hash(request, provider="openai", adapter_version="openai-1", mode=None) == (
        expected
    )


def test_media_parts_are_counted_in_the_estimate_and_bounded_in_the_worst_case(folder) -> None:
    text = suite_text(
        "[{text: hi}, {image: scan}, {file: receipt}, {audio: call}]",
        files="{scan: fixtures/invoice-0042.png, receipt: fixtures/receipt-1187.pdf, "
        "call: fixtures/voicemail-17.wav}",
        models="[google/gemini-2.5-flash]",
    )
    suite = load(folder, text)
    [cell] = plan_cells(suite, ["google/gemini-2.5-flash"], repeats=1)
    plain = input_tokens(Request("x/y", ({"role": "user", "content": "hi"},)))
    assert input_tokens(cell.request) == plain + 1_600 + 1_600 + (len(WAV) // 16 + 1_000) // 4
    worst_plain = input_tokens(Request("x/y", ({"role": "user", "content": "hi"},)), worst=True)
    assert input_tokens(cell.request, worst=True) == (
        worst_plain + 6_000 + max(6_000, len(PDF)) + len(WAV) // 16 + 1_000
    )


def test_sniffing_reads_the_bytes_not_the_name() -> None:
    assert media.sniff(PNG) == "image/png"
    assert media.sniff(PDF) == "application/pdf"
    assert media.sniff(WAV) == "audio/wav"
    assert media.sniff(b"\xff\xd8\xff\xe0rest") == "image/jpeg"
    assert media.sniff(b"\x00\x00\x00\x18ftypmp42") == "video/mp4"
    assert media.sniff(b"plain words\n") == "text/plain"
    assert media.sniff(b"\x00\x01binary") is None
    assert media.describe(PDF, "r.pdf").pages == 1


def test_the_store_keeps_each_file_once_by_content(tmp_path: pathlib.Path) -> None:
    store = media.BlobStore(tmp_path / "blobs")
    first = store.put(PNG)
    assert store.put(PNG) == first == hashlib.sha256(PNG).hexdigest()
    assert [p.name for p in (tmp_path / "blobs").rglob("*") if p.is_file()] == [first]
    assert store.path(first).read_bytes() == PNG
    with pytest.raises(media.MediaError):
        store.path("../../etc/passwd")


def test_a_file_changed_after_planning_is_refused_not_sent(folder) -> None:
    suite = load(folder, suite_text("[{image: scan}]"))
    [message] = render_messages(suite, "read", "one")
    part = message["content"][0]
    assert media.read_part(part) == PNG
    (folder / "fixtures" / "invoice-0042.png").write_bytes(PNG[:-1])
    with pytest.raises(media.MediaError, match="no longer the file the run was planned with"):
        media.read_part(part)
    store = media.BlobStore(folder / "blobs")
    store.put(PNG)
    assert media.read_part(part, store) == PNG  # the store's copy is the planned one


def test_message_text_joins_text_parts_only() -> None:
    message = {
        "role": "user",
        "content": [
            {"type": "text", "text": "a"},
            {"type": "image", "sha256": "0" * 64, "media_type": "image/png", "name": "x"},
            {"type": "text", "text": "b"},
        ],
    }
    assert message_text(message) == "a\n\nb"


def _with_part(request: Request, **changes: Any) -> Request:
    messages = []
    for message in request.messages:
        content = message["content"]
        if not isinstance(content, str):
            content = [part | changes if part["type"] != "text" else part for part in content]
        messages.append({"role": message["role"], "content": content})
    return Request(**(request.to_json() | {"messages": messages, "stop": request.stop}))


def test_a_model_the_table_does_not_know_is_warned_about_not_refused(folder) -> None:
    text = suite_text("[{text: '{{q}}'}, {image: scan}]", models="[openai/gpt-9-preview]")
    suite = load(folder, text)
    [warning] = suite.warnings
    assert warning.path == "tasks[0].cases[0].files.scan"
    assert warning.message == (
        "evalsite does not know which media openai/gpt-9-preview takes; it is sent the image "
        "fixtures/invoice-0042.png as written, and its provider decides at the first call"
    )


def test_file_values_in_a_jsonl_cases_file_become_attached_files(folder) -> None:
    (folder / "cases.jsonl").write_text(
        '{"id": "one", "vars": {"q": "What is it?", "scan": "file://fixtures/invoice-0042.png"}}\n'
    )
    text = suite_text("[{text: '{{q}}'}, {image: scan}]").split("    cases:")[0]
    suite = load(folder, text + "    cases_path: cases.jsonl\n")
    case = suite.task("read").case("one")
    assert (case.vars, case.files) == ({"q": "What is it?"}, {"scan": "fixtures/invoice-0042.png"})


def test_a_missing_file_in_a_cases_file_names_that_file_and_row(folder) -> None:
    (folder / "cases.csv").write_text("id,q,scan\none,hi,file://fixtures/nope.png\n")
    text = suite_text("[{text: '{{q}}'}, {image: scan}]").split("    cases:")[0]
    [problem] = problems(folder, text + "    cases_path: cases.csv\n")
    assert (problem.file, problem.line, problem.path) == (
        str(folder / "cases.csv"),
        2,
        "tasks[0].cases[0].files.scan",
    )
    assert problem.message == "fixtures/nope.png: file not found"


def test_gemini_takes_the_audio_types_its_guide_lists_and_not_m4a() -> None:
    for media_type in ("audio/wav", "audio/mpeg", "audio/ogg", "audio/flac"):
        assert accepts("google/gemini-2.5-flash", "audio", media_type) is True
    assert accepts("google/gemini-2.5-flash", "audio", "audio/mp4") is False


def test_a_file_over_the_size_limit_is_refused_before_it_is_read_whole(folder) -> None:
    big = folder / "fixtures" / "huge.png"
    with big.open("wb") as out:
        out.write(PNG[:16])
        out.truncate(media.MAX_MEDIA_BYTES + 1)  # sparse: 20 MiB and a byte, nothing written
    [problem] = problems(folder, suite_text("[{image: scan}]", files="{scan: fixtures/huge.png}"))
    assert problem.path == "tasks[0].cases[0].files.scan"
    assert "is over the limit of 20,971,520 for this file" in problem.message
