"""The case data of no-look runs, held in this process's memory only (docs/no-look.md).

A no-look run writes no case data: its rows keep requests without messages and answers
without text. What the run needs of that data lives here, per run id, for as long as the
process that started the run lives: the full suite (the stored version is stripped), each
call's request by its request hash, and each reply's text by its row. Scoring and judging
read them from here; a process that does not hold a run never works on it (the `evalsite
run` process that started it does, or one that resumes it from the suite's file).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from evalsite.core.no_look import sealed_request
from evalsite.core.providers.base import Request
from evalsite.core.suites import Suite

_HELD: dict[str, Sealed] = {}
_LOCK = threading.Lock()


@dataclass
class Sealed:
    """One no-look run's case data: its suite, its requests and its replies."""

    run_id: str
    version_id: int
    suite: Suite
    requests: dict[str, Request] = field(default_factory=dict)
    texts: dict[tuple[str, int], str] = field(default_factory=dict)

    def hold_requests(self, pairs: Iterable[tuple[str, Request]]) -> None:
        """Keep each (request hash, request)."""
        self.requests.update(pairs)

    def request(self, call: Any) -> Request:
        """The request of a call of this run, by its row's request hash."""
        return self.requests[call.request_hash]

    def row_request(self, request: Request, digest: str) -> dict[str, Any]:
        """What a call's row stores of `request` (its messages kept here, by `digest`)."""
        self.requests[digest] = request
        return sealed_request(request.to_json())

    def text(self, call: Any) -> str:
        """The reply text of a finished call ("" when this process never saw it)."""
        return self.texts.get(_key(call), "")

    def keep(self, call: Any, values: dict[str, Any]) -> dict[str, Any]:
        """A finished call's row fields with its reply kept here and nothing quoting case
        data left: the text, a judge's rationale and parse error, a retry's request."""
        values = dict(values)
        if "text" in values:
            self.texts[_key(call)] = values["text"]
            values["text"] = ""
        if values.get("rationale"):
            values["rationale"] = ""
        if values.get("parse_error"):
            values["parse_error"] = "the judge's reply was unreadable (not kept: no-look run)"
        if "request" in values:
            values["request"] = self.row_request(
                Request(**values["request"]), values["request_hash"]
            )
        return values


def _key(call: Any) -> tuple[str, int]:
    return ("judgement" if call.is_judge_call else "answer", call.pk)


def seal(run_id: str, version_id: int, suite: Suite) -> Sealed:
    """Hold `run_id`'s case data in this process; labels are dropped (a no-look run is never
    labelled, and a suite's labels note what their labellers read)."""
    with _LOCK:
        sealed = _HELD.get(run_id)
        if sealed is None:
            suite = dataclasses.replace(suite, labels=())
            sealed = _HELD[run_id] = Sealed(run_id, version_id, suite)
        return sealed


def held(run_id: str) -> Sealed | None:
    """The case data of `run_id` if this process holds it."""
    return _HELD.get(run_id)


def suite_for(version_id: int) -> Suite | None:
    """The full suite of a stripped version, if this process runs it."""
    return next((s.suite for s in list(_HELD.values()) if s.version_id == version_id), None)


def release(run_id: str) -> None:
    """Forget `run_id`'s case data (the run is over)."""
    with _LOCK:
        _HELD.pop(run_id, None)
