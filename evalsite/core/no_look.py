"""No-look runs (docs/no-look.md): what of a suite and of a run's results may be written.

A no-look run writes no case data anywhere. These are the pure rules the Django side
applies before anything is stored: the suite as stored (cases reduced to their ids and
tags), a call's request without its messages, and a scored answer's results without the
notes that quote the answer or the expected values. Case ids and tags are kept: they are
how results are read, so they must not hold data themselves.
"""

from __future__ import annotations

import copy
import json
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalsite.core.media import MEDIA_KEY

HIDDEN = "hidden: no-look run"
NO_WORKER = (
    "a no-look run keeps its case data in the memory of the `evalsite run` process that "
    "started it; start it with `evalsite run`"
)
NO_LABELS = (
    "labelling is refused for a no-look run: nobody may read its answers, and a label is "
    "a person's reading of two of them"
)
STRIPPED_HEADER = (
    "# A no-look suite as stored: its case data was never written (docs/no-look.md).\n"
    "# Each case keeps its id and tags only; run the suite from its own file.\n"
)


def strip_document(document: Mapping[str, Any]) -> dict[str, Any]:
    """The suite document without its case data: each case reduced to its id and tags (a
    graded case keeps its threshold, its criteria hidden), labels and the table of
    attached files dropped. The tasks'
    prompts, checks and settings are the suite's own text and are kept."""
    stripped = copy.deepcopy(dict(document))
    stripped.pop(MEDIA_KEY, None)  # the attached files' names may be data too
    stripped.pop("labels", None)
    stripped.pop("labels_path", None)
    for task in stripped.get("tasks") or ():
        if not isinstance(task, dict):
            continue
        task.pop("cases_path", None)
        task["cases"] = [_stripped_case(case) for case in task.get("cases") or ()]
        if not task["cases"]:
            task.pop("cases")
    return stripped


def _stripped_case(case: Any) -> dict[str, Any]:
    case = case if isinstance(case, dict) else {}
    kept = {"id": case.get("id", "")}
    if case.get("tags"):
        kept["tags"] = list(case["tags"])
    grade = case.get("grade")
    if isinstance(grade, dict):  # that it is graded, and at what threshold, is no data
        threshold = {"threshold": grade["threshold"]} if "threshold" in grade else {}
        kept["grade"] = {"criteria": HIDDEN, **threshold}
    return kept


def stripped_text(stripped: Mapping[str, Any]) -> str:
    """The stored YAML text of a stripped suite: its JSON (valid YAML) under a header."""
    return STRIPPED_HEADER + json.dumps(stripped, indent=2, ensure_ascii=False) + "\n"


def sealed_request(request: Mapping[str, Any]) -> dict[str, Any]:
    """A call's request as its row keeps it: model, params and ids, no messages."""
    return {**request, "messages": [], "sealed": True}


def sealed_error(kind: str, status: int | None = None) -> str:
    """A provider error as a no-look run stores it: its kind and HTTP status only (the
    provider's message may quote the request)."""
    where = f" (HTTP {status})" if status else ""
    return f"{kind} error{where}; the provider's message is not kept in a no-look run"


def sealed_failure(error: BaseException) -> str:
    """Why a no-look run failed, without the exception's text (it may quote case data):
    its type and the innermost place it was raised."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return type(error).__name__
    last = frames[-1]
    return f"{type(error).__name__} in {Path(last.filename).name}:{last.lineno} ({last.name})"


def sealed_scores(values: Mapping[str, Any]) -> dict[str, Any]:
    """A scored answer's stored fields without what quotes the answer or the case: the
    schema error, the parsed JSON, the checks' notes, the execution output and the weighted
    match's detail. Verdicts and scores stay."""
    checks = values.get("checks")
    execution = values.get("exec_check")
    return {
        **values,
        "schema_error": "",
        "parsed_json": None,
        "checks": _sealed_checks(checks) if checks else checks,
        "exec_check": _sealed_exec(execution) if execution else execution,
        "match_detail": None,
    }


def _sealed_checks(checks: Mapping[str, Any]) -> dict[str, Any]:
    results = [
        {"kind": result.get("kind"), "passed": result.get("passed"), "note": None}
        for result in checks.get("results") or ()
    ]
    return {"passed": checks.get("passed"), "results": results, "note": None}


def _sealed_exec(execution: Mapping[str, Any]) -> dict[str, Any]:
    kept = ("verdict", "exit_code", "isolation", "duration_ms")
    return {key: execution.get(key) for key in kept} | {"output_tail": "", "blocks": []}
