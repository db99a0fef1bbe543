"""HTTP failures as error kinds, with the provider's own message and a retry delay.

Mapping (every HTTP adapter): 401/402/403 auth; 404 unknown_model; 400/409/413/422 and
other 4xx bad_request; 408 timeout; 429 rate_limited; 5xx (529 included) server; a redirect
or other unexpected status malformed. Two documented bodies refine it: an
``insufficient_quota`` 429 (OpenAI: the account is out of credit) and Gemini's 400 with
reason ``API_KEY_INVALID`` are auth, so they stop the model instead of being retried.

A bad_request is the suite's configuration as the provider refused it (an unsupported
parameter or value, an invalid request): its message quotes the provider's and names the
parameter when the provider does (OpenAI's ``param``, Gemini's ``fieldViolations``).

``retry_after`` comes from ``retry-after-ms``, ``Retry-After`` (seconds or an HTTP-date) or
a ``google.rpc.RetryInfo`` ``retryDelay`` in the body. Messages never include the URL or a
header: they are built from the status and the provider's error ``type``/``status`` and
``message`` (Anthropic, OpenAI, Gemini and OpenRouter error shapes), and scrubbed of the
adapter's key and of anything key-shaped.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import math
from collections.abc import Iterable, Mapping
from typing import Any

from evalsite.core.providers.base import ErrorKind, ProviderError, scrub

__all__ = ["error_from_body", "kind_for_status", "parse_retry_after"]

SNIPPET_CHARS = 300


def kind_for_status(status: int) -> ErrorKind:
    """The error kind of a non-2xx HTTP status (the module table)."""
    if status in (401, 402, 403):
        return ErrorKind.AUTH
    if status == 408:
        return ErrorKind.TIMEOUT
    if status == 429:
        return ErrorKind.RATE_LIMITED
    if status == 404:
        return ErrorKind.UNKNOWN_MODEL
    if status >= 500:
        return ErrorKind.SERVER
    if status >= 400:
        return ErrorKind.BAD_REQUEST
    return ErrorKind.MALFORMED


def error_from_body(
    status: int,
    data: Mapping[str, Any] | None,
    text: str,
    headers: Mapping[str, str],
    provider: str,
    secrets: Iterable[str] = (),
) -> ProviderError:
    """The ProviderError for an error reply: kind, scrubbed message, status and retry_after."""
    error = data.get("error") if data else None
    kind = _refined_kind(status, error)
    label, detail = _describe(error, text)
    if kind is ErrorKind.BAD_REQUEST and (param := _param(error)):
        label += f", parameter {param}"
    if status < 400:
        detail = f"unexpected HTTP status (check the base URL) {detail}".strip()
    message = scrub(f"{provider} HTTP {status}{label}" + (f": {detail}" if detail else ""), secrets)
    retry_after = parse_retry_after(headers)
    if retry_after is None:
        retry_after = _retry_delay(error)
    return ProviderError(kind, message, status=status, retry_after=retry_after)


def _refined_kind(status: int, error: Any) -> ErrorKind:
    kind = kind_for_status(status)
    if not isinstance(error, Mapping):
        return kind
    if status == 429 and "insufficient_quota" in (error.get("code"), error.get("type")):
        return ErrorKind.AUTH
    reasons = {detail.get("reason") for detail in _details(error)}
    if status == 400 and "API_KEY_INVALID" in reasons:
        return ErrorKind.AUTH
    return kind


def _describe(error: Any, text: str) -> tuple[str, str]:
    """(" type", message) from the documented error shapes, else a snippet of the body."""
    if isinstance(error, str):
        return "", error
    if isinstance(error, Mapping):
        label = next(
            (
                str(error[key])
                for key in ("type", "status", "code")
                if isinstance(error.get(key), str)
            ),
            "",
        )
        message = error.get("message")
        if isinstance(message, str):
            return (f" {label}" if label else ""), message
    return "", text[:SNIPPET_CHARS].strip()


def _param(error: Any) -> str | None:
    """The request field a 4xx names: OpenAI's ``param``, or the first ``field`` of a
    google.rpc.BadRequest's ``fieldViolations``."""
    if not isinstance(error, Mapping):
        return None
    param = error.get("param")
    if isinstance(param, str) and param:
        return param[:100]
    for detail in _details(error):
        violations = detail.get("fieldViolations")
        first = violations[0] if isinstance(violations, list) and violations else None
        field = first.get("field") if isinstance(first, Mapping) else None
        if isinstance(field, str):
            return field[:100]
    return None


def _details(error: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    details = error.get("details")
    if not isinstance(details, list):
        return []
    return [detail for detail in details if isinstance(detail, Mapping)]


def _retry_delay(error: Any) -> float | None:
    """``retryDelay`` ("37s", "1.5s") of a google.rpc.RetryInfo detail, in seconds."""
    if not isinstance(error, Mapping):
        return None
    for detail in _details(error):
        delay = detail.get("retryDelay")
        if isinstance(delay, str) and delay.endswith("s"):
            return _seconds(delay[:-1])
    return None


def parse_retry_after(headers: Mapping[str, str], now: dt.datetime | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP-date)."""
    millis = headers.get("retry-after-ms")
    if millis is not None and (value := _seconds(millis)) is not None:
        return value / 1000
    raw = headers.get("retry-after")
    if raw is None:
        return None
    seconds = _seconds(raw)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(raw.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    now = now or dt.datetime.now(dt.UTC)
    return max(0.0, (when - now).total_seconds())


def _seconds(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return max(0.0, value) if math.isfinite(value) else None
