"""Media parts on the wire: each HTTP adapter sends a request's text, image, document, audio
and video parts as its API documents them (the recorded bodies in tests/fixtures/requests/),
reads the bytes when it builds the body, and never sends a file that is not the one the run
was planned with. A command model gets the parts as references it can read and check."""

from __future__ import annotations

import asyncio
import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from evalsite.core.media import BlobStore, describe
from evalsite.core.plan import call_hash
from evalsite.core.providers import ErrorKind, ProviderError, Request, build_provider
from evalsite.core.providers.command import command_variable
from tests.helpers.providers import ENV, call, sent_json

ROOT = Path(__file__).resolve().parents[3]
RECORDED = ROOT / "tests" / "fixtures" / "requests"
EXAMPLE = ROOT / "examples" / "multimodal" / "fixtures"
FILES = {
    "scan": EXAMPLE / "invoice-0042.png",
    "receipt": EXAMPLE / "receipt-1187.pdf",
    "call": EXAMPLE / "voicemail-17.wav",
    "notes": RECORDED / "media" / "notes.txt",
    "clip": RECORDED / "media" / "clip.mp4",
}
SYSTEM = "You read what customers send. Answer in one line."
ASK = "What is the total due, in euros?"
ANTHROPIC, OPENAI, GOOGLE = (
    "anthropic/claude-sonnet-4-5",
    "openai/gpt-4o",
    "google/gemini-2.5-flash",
)
REPLIES = {
    "anthropic": {
        "content": [{"type": "text", "text": "84.20"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3100, "output_tokens": 4},
    },
    "openai": {
        "choices": [
            {"message": {"role": "assistant", "content": "84.20"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 3100, "completion_tokens": 4},
    },
    "google": {
        "candidates": [{"content": {"parts": [{"text": "84.20"}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 3100, "candidatesTokenCount": 4},
    },
}


def part(name: str, path: Path | None = None) -> dict[str, Any]:
    """The request part for one file, as a run plans it (hash, type, and where to read it)."""
    path = path or FILES[name]
    media = describe(path.read_bytes(), path.name, source=str(path))
    return media.part(media.kind, name)


def text(words: str) -> dict[str, str]:
    return {"type": "text", "text": words}


def multimodal(model: str, opening: str, *parts: dict[str, Any], **fields: Any) -> Request:
    content = [text(opening), *parts, text(ASK)]
    messages = ({"role": "system", "content": SYSTEM}, {"role": "user", "content": content})
    return Request(model=model, messages=messages, max_tokens=300, **fields)


def recorded(name: str) -> dict[str, Any]:
    return json.loads((RECORDED / f"{name}.json").read_text())


def reply(model: str) -> httpx.Response:
    return httpx.Response(200, json=REPLIES[model.partition("/")[0]])


def refused(provider: Any, request: Request) -> tuple[ProviderError, list[httpx.Request]]:
    """The error ``complete`` raises, and what reached the server before it (nothing)."""
    posted: list[httpx.Request] = []

    def respond(http_request: httpx.Request) -> httpx.Response:
        posted.append(http_request)
        return httpx.Response(500)

    with pytest.raises(ProviderError) as info:
        call(provider, request, respond)
    return info.value, posted


# --- the recorded bodies -------------------------------------------------------------------


def test_anthropic_sends_images_pdfs_and_plain_text_as_the_messages_api_documents():
    opening = "Read the scanned invoice, the receipt and the notes."
    request = multimodal(ANTHROPIC, opening, part("scan"), part("receipt"), part("notes"))
    completion, sent = call(build_provider(ANTHROPIC, env=ENV), request, reply(ANTHROPIC))
    assert sent_json(sent) == recorded("anthropic-messages")
    assert completion.text == "84.20"


def test_openai_sends_images_pdfs_and_audio_as_chat_completions_documents():
    opening = "Read the scanned invoice and the receipt, and hear the voicemail."
    request = multimodal(OPENAI, opening, part("scan"), part("receipt"), part("call"))
    completion, sent = call(build_provider(OPENAI, env=ENV), request, reply(OPENAI))
    assert sent_json(sent) == recorded("openai-chat-completions")
    assert completion.text == "84.20"


def test_openrouter_sends_the_parts_openai_does():
    model = "openrouter/openai/gpt-4o"
    opening = "Read the scanned invoice and the receipt, and hear the voicemail."
    request = multimodal(model, opening, part("scan"), part("receipt"), part("call"))
    _, sent = call(build_provider(model, env=ENV), request, reply(OPENAI))
    assert sent_json(sent)["messages"] == recorded("openai-chat-completions")["messages"]


def test_gemini_sends_every_file_inline_as_generate_content_documents():
    opening = "Read the scanned invoice and the receipt, hear the voicemail, watch the clip."
    parts = (part("scan"), part("receipt"), part("call"), part("clip"))
    request = multimodal(GOOGLE, opening, *parts)
    completion, sent = call(build_provider(GOOGLE, env=ENV), request, reply(GOOGLE))
    assert sent_json(sent) == recorded("google-generate-content")
    assert completion.text == "84.20"


def test_mp3_goes_as_format_mp3_to_openai_and_as_audio_mp3_to_gemini(tmp_path: Path):
    mp3 = tmp_path / "call.mp3"
    mp3.write_bytes(b"ID3\x04\x00\x00\x00\x00\x00\x00" + bytes(32))
    request = multimodal(OPENAI, "Hear this.", part("call", mp3))
    _, sent = call(build_provider(OPENAI, env=ENV), request, reply(OPENAI))
    assert sent_json(sent)["messages"][1]["content"][1]["input_audio"]["format"] == "mp3"
    request = multimodal(GOOGLE, "Hear this.", part("call", mp3))
    _, sent = call(build_provider(GOOGLE, env=ENV), request, reply(GOOGLE))
    assert sent_json(sent)["contents"][0]["parts"][1]["inlineData"]["mimeType"] == "audio/mp3"


def test_a_judge_request_sends_its_media_as_an_answer_request_does():
    answer = multimodal(ANTHROPIC, "Read this.", part("scan"))
    judge = multimodal(ANTHROPIC, "Read this.", part("scan"), purpose="judge", order=1)
    provider = build_provider(ANTHROPIC, env=ENV)
    _, sent_answer = call(provider, answer, reply(ANTHROPIC))
    _, sent_judge = call(provider, judge, reply(ANTHROPIC))
    assert sent_json(sent_judge)["messages"] == sent_json(sent_answer)["messages"]


# --- text stays as it was ------------------------------------------------------------------

# call_hash of TEXT_ONLY before adapters took parts (commit 2cb2240): a text request's body
# and cache key have not changed, so no adapter version was bumped.
TEXT_ONLY_KEYS = {
    ANTHROPIC: "47c7bef284a78f10672207eae6091c7208207172d4fdc6c917fe7883255b8b2e",
    OPENAI: "7e652223ac495d50a7fcfdc2554ec95ba352cd9b24e01b3f5ff29aacf06f2b1f",
    GOOGLE: "629699e37216458a321187d2b5384556c6dfb8ba5394d8b1a915c50007eec628",
    "openrouter/openai/gpt-4o": "9d5695949c5260aa662923b7705b65754777e940af6604d2e5e6799038ea098d",
}
TEXT_ONLY = (
    {"role": "system", "content": "You triage support tickets."},
    {"role": "user", "content": "I was charged twice."},
    {"role": "assistant", "content": "Which order?"},
    {"role": "user", "content": "1187"},
)
KEYS = {key: "k" * 20 for key in ENV}


@pytest.mark.parametrize("model", TEXT_ONLY_KEYS)
def test_a_text_only_request_keeps_its_cache_key_and_sends_text(model: str):
    request = Request(model=model, messages=TEXT_ONLY)
    provider = build_provider(model, env=KEYS)
    assert call_hash(request, provider) == TEXT_ONLY_KEYS[model]
    body = provider.body(request)
    if model == GOOGLE:
        turns = [[{"text": m["content"]}] for m in TEXT_ONLY[1:]]
        assert [content["parts"] for content in body["contents"]] == turns
    else:
        assert all(isinstance(message["content"], str) for message in body["messages"])


@pytest.mark.parametrize("model", [ANTHROPIC, OPENAI, GOOGLE])
def test_the_system_message_stays_text_beside_a_message_with_media(model: str):
    messages = (
        {"role": "system", "content": [text("You read receipts."), text("One line.")]},
        {"role": "user", "content": [part("receipt"), text(ASK)]},
    )
    request = Request(model=model, messages=messages)
    _, sent = call(build_provider(model, env=ENV), request, reply(model))
    body = sent_json(sent)
    system = {
        ANTHROPIC: lambda: body["system"],
        OPENAI: lambda: body["messages"][0]["content"],
        GOOGLE: lambda: body["systemInstruction"]["parts"][0]["text"],
    }[model]()
    assert system == "You read receipts.\n\nOne line."


# --- refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize("model", [ANTHROPIC, OPENAI, GOOGLE])
def test_a_file_changed_after_planning_is_a_config_error_and_nothing_is_sent(
    model: str, tmp_path: Path
):
    scan = tmp_path / "scan.png"
    shutil.copy(FILES["scan"], scan)
    request = multimodal(model, "Read this.", part("scan", scan))
    scan.write_bytes(scan.read_bytes() + b"edited")
    error, posted = refused(build_provider(model, env=ENV), request)
    assert error.kind == ErrorKind.CONFIG and not error.retryable and not error.stops_model
    assert "the image 'scan' is no longer the file the run was planned with" in error.message
    assert posted == []


def test_a_file_changed_after_planning_is_sent_from_the_runs_store(tmp_path: Path):
    scan = tmp_path / "scan.png"
    shutil.copy(FILES["scan"], scan)
    request = multimodal(GOOGLE, "Read this.", part("scan", scan))
    store = BlobStore(tmp_path / "blobs")
    store.put(scan.read_bytes())
    scan.write_bytes(b"edited")
    provider = build_provider(GOOGLE, env=ENV, blobs=store)
    _, sent = call(provider, request, reply(GOOGLE))
    inline = sent_json(sent)["contents"][0]["parts"][1]["inlineData"]
    google_parts = recorded("google-generate-content")["contents"][0]["parts"]
    assert inline == google_parts[1]["inlineData"]


@pytest.mark.parametrize(
    ("model", "name", "named"),
    [
        (ANTHROPIC, "call", "the audio 'call' (audio/wav)"),
        (ANTHROPIC, "clip", "the video 'clip' (video/mp4)"),
        (OPENAI, "clip", "the video 'clip' (video/mp4)"),
        (OPENAI, "notes", "the file 'notes' (text/plain)"),
    ],
)
def test_a_part_the_api_cannot_take_is_a_config_error_naming_it(model, name, named):
    error, posted = refused(build_provider(model, env=ENV), multimodal(model, "See", part(name)))
    assert error.kind == ErrorKind.CONFIG
    assert f"cannot send {named}" in error.message
    assert posted == []


@pytest.mark.parametrize("model", [ANTHROPIC, OPENAI, GOOGLE])
def test_media_in_a_system_message_is_a_config_error(model: str):
    messages = (
        {"role": "system", "content": [text("Compare with:"), part("scan")]},
        {"role": "user", "content": ASK},
    )
    error, posted = refused(build_provider(model, env=ENV), Request(model=model, messages=messages))
    assert error.kind == ErrorKind.CONFIG
    assert "the image 'scan' (image/png): a system message carries text only" in error.message
    assert posted == []


# --- command models ------------------------------------------------------------------------

CHECKER = """\
import hashlib, json, pathlib, sys
request = json.loads(sys.stdin.read())
parts = [p for p in request["messages"][-1]["content"] if p["type"] != "text"]
print(json.dumps([
    [p["type"], p["name"], p["media_type"],
     hashlib.sha256(pathlib.Path(p["source"]).read_bytes()).hexdigest() == p["sha256"]]
    for p in parts
]))
"""


def test_a_command_gets_each_part_with_its_source_to_read_and_its_hash_to_check(tmp_path):
    script = tmp_path / "checker.py"
    script.write_text(CHECKER)
    env = {command_variable("reader"): f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"}
    provider = build_provider("command/reader", env=env)
    request = multimodal("command/reader", "Read.", part("scan"), part("call"), part("clip"))
    completion = asyncio.run(provider.complete(request, None))
    assert json.loads(completion.text) == [
        ["image", "scan", "image/png", True],
        ["audio", "call", "audio/wav", True],
        ["video", "clip", "video/mp4", True],
    ]
