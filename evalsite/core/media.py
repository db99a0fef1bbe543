"""Media a case attaches (images, documents, audio, video): what a file is, its hash, its
share of a call's tokens, and the content-addressed store a run keeps them in.

A file's type is read from its first bytes (never from its name), so a ``.jpg`` that holds a
PDF is a PDF. A message part names a *kind* (``image``, ``file``, ``audio``, ``video``);
the file behind it must be of that kind (:data:`MEDIA_TYPES`).

Requests carry media as references: ``{"type", "name", "media_type", "sha256", "size",
"source"}`` where ``source`` is where this machine can read the bytes (the suite's folder,
or the store). The cache key covers the hash, never the place (:func:`hashed_part`); an
adapter reads the bytes with :func:`read_part` (through ``HttpAdapter.media_bytes``), which
checks them against the hash, so a file edited after the run was planned is refused rather
than sent in its place.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KINDS = ("image", "file", "audio", "video")
MEDIA_KEY = "_media"  # a stored suite version's table of attached files (Suite.stored_dict)
PART_TYPES = ("text", *KINDS)
MAX_MEDIA_BYTES = 20 * 1024 * 1024  # the largest inline upload the providers accept

MEDIA_TYPES: Mapping[str, str] = {
    "image/png": "image",
    "image/jpeg": "image",
    "image/gif": "image",
    "image/webp": "image",
    "application/pdf": "file",
    "text/plain": "file",
    "audio/wav": "audio",
    "audio/mpeg": "audio",
    "audio/ogg": "audio",
    "audio/flac": "audio",
    "audio/mp4": "audio",
    "video/mp4": "video",
    "video/webm": "video",
}
KIND_NAMES = {"image": "an image", "file": "a document", "audio": "audio", "video": "a video"}

# Tokens one part may cost. Images: every provider scales an image down before counting
# (Anthropic at most ~1,600 tokens, OpenAI's tiles and patches under 2,500, Gemini 258 a
# tile), so 6,000 bounds any of them. A PDF page is read as an image and its text. Audio
# and video are counted by duration; 1 token per 16 bytes stays above every documented
# rate (Gemini's 32 tokens/s of audio at 8 kbit/s, 263 tokens/s of video).
IMAGE_TOKENS, IMAGE_TOKENS_CEILING = 1_600, 6_000
PAGE_TOKENS, PAGE_TOKENS_CEILING = 1_600, 6_000
STREAM_BYTES_PER_TOKEN = 16
_PDF_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")


class MediaError(ValueError):
    """A media file that cannot be used: unreadable, too large, of no known type, or not
    the bytes its hash promises."""


@dataclass(frozen=True)
class MediaFile:
    """One file a case attaches: its path relative to the suite's folder (posix), hash,
    type, size, pages (PDFs) and where this process reads it from."""

    path: str
    sha256: str
    media_type: str
    size: int
    pages: int = 0
    source: str = ""

    @property
    def kind(self) -> str:
        return MEDIA_TYPES[self.media_type]

    def as_dict(self) -> dict[str, Any]:
        """What a stored suite version keeps of it (not where it was read from)."""
        return {
            "sha256": self.sha256,
            "media_type": self.media_type,
            "size": self.size,
            "pages": self.pages,
        }

    def part(self, kind: str, name: str) -> dict[str, Any]:
        """The request part that sends this file as ``kind`` under the case's ``name``."""
        return {
            "type": kind,
            "name": name,
            "media_type": self.media_type,
            "sha256": self.sha256,
            "size": self.size,
            "pages": self.pages,
            "source": self.source,
        }


def sniff(data: bytes) -> str | None:
    """The media type of ``data`` from its leading bytes, or None for none evalsite sends."""
    head = data[:16]
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head.startswith(b"RIFF") and head[8:12] in (b"WEBP", b"WAVE"):
        return "image/webp" if head[8:12] == b"WEBP" else "audio/wav"
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    if head.startswith(b"ID3") or (len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0):
        return "audio/mpeg"
    if head.startswith(b"OggS"):
        return "audio/ogg"
    if head.startswith(b"fLaC"):
        return "audio/flac"
    if head[4:8] == b"ftyp":
        return "audio/mp4" if head[8:12] in (b"M4A ", b"M4B ") else "video/mp4"
    if head.startswith(b"\x1a\x45\xdf\xa3"):
        return "video/webm"
    return "text/plain" if _plain_text(data) else None


def _plain_text(data: bytes) -> bool:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return bool(text) and not any(ord(c) < 32 and c not in "\t\n\r\f" for c in text[:4096])


def describe(data: bytes, path: str, source: str = "") -> MediaFile:
    """A MediaFile for ``data`` read from ``path``; MediaError when evalsite cannot send it."""
    if len(data) > MAX_MEDIA_BYTES:
        raise MediaError(
            f"{len(data):,} bytes is over the limit of {MAX_MEDIA_BYTES:,} for an attached file"
        )
    media_type = sniff(data)
    if media_type is None:
        known = "PNG, JPEG, GIF, WebP, PDF, plain text, WAV, MP3, OGG, FLAC, MP4, WebM"
        raise MediaError(f"not a file type evalsite can send ({known})")
    pages = len(_PDF_PAGE.findall(data)) if media_type == "application/pdf" else 0
    return MediaFile(path, hashlib.sha256(data).hexdigest(), media_type, len(data), pages, source)


def from_stored(path: str, stored: Mapping[str, Any], source: str) -> MediaFile:
    """A MediaFile from what :meth:`MediaFile.as_dict` kept, read from ``source``."""
    return MediaFile(
        path,
        str(stored["sha256"]),
        str(stored["media_type"]),
        int(stored["size"]),
        int(stored.get("pages") or 0),
        source,
    )


# --- parts in requests ---------------------------------------------------------------------


def hashed_part(part: Mapping[str, Any]) -> dict[str, Any]:
    """What of a part the cache key covers: everything but where its bytes are read from."""
    return {key: value for key, value in part.items() if key != "source"}


def read_part(part: Mapping[str, Any], store: BlobStore | None = None) -> bytes:
    """The bytes of a media part, from the store when it holds them, else from its source;
    MediaError when neither holds the bytes the hash names."""
    sha = str(part.get("sha256", ""))
    places = [store.path(sha)] if store is not None and store.has(sha) else []
    if part.get("source"):
        places.append(Path(str(part["source"])))
    for place in places:
        try:
            data = place.read_bytes()
        except OSError:
            continue
        if hashlib.sha256(data).hexdigest() == sha:
            return data
    name = part.get("name", "?")
    raise MediaError(
        f"the {part.get('type')} '{name}' is no longer the file the run was planned with "
        "(it was changed or removed since)"
    )


def token_estimate(part: Mapping[str, Any]) -> int:
    """The tokens a media part is expected to cost (the estimate)."""
    kind = part.get("type")
    if kind == "image":
        return IMAGE_TOKENS
    if part.get("media_type") == "application/pdf":
        return PAGE_TOKENS * max(1, int(part.get("pages") or 0))
    return max(1, token_ceiling(part) // 4)


def token_ceiling(part: Mapping[str, Any]) -> int:
    """The most tokens a media part can cost (the spend reservation's worst case)."""
    kind, size = part.get("type"), int(part.get("size") or 0)
    if kind == "image":
        return IMAGE_TOKENS_CEILING
    if part.get("media_type") == "application/pdf":
        return max(PAGE_TOKENS_CEILING * max(1, int(part.get("pages") or 0)), size)
    if part.get("media_type") == "text/plain":
        return size + 8
    return size // STREAM_BYTES_PER_TOKEN + 1_000


# --- the content-addressed store -----------------------------------------------------------


class BlobStore:
    """Files by their sha256 under ``root`` (``ab/abcdef…``), each written once, whole
    (a temporary file in the same folder, then renamed), readable by the owner only."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)

    def path(self, sha256: str) -> Path:
        if not re.fullmatch(r"[0-9a-f]{64}", sha256):
            raise MediaError(f"not a sha256: {sha256[:80]!r}")
        return self.root / sha256[:2] / sha256

    def has(self, sha256: str) -> bool:
        try:
            return self.path(sha256).is_file()
        except MediaError:
            return False

    def put(self, data: bytes) -> str:
        """Store ``data`` (once) and return its sha256."""
        sha = hashlib.sha256(data).hexdigest()
        target = self.path(sha)
        if target.is_file():
            return sha
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        handle, temp = tempfile.mkstemp(dir=target.parent, prefix=".incoming-")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(temp, target)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
        return sha

    def keep(self, media: MediaFile) -> None:
        """Copy one suite file into the store (once), checking it is still what was hashed."""
        if self.has(media.sha256):
            return
        data = read_part(media.part(media.kind, media.path))
        self.put(data)
