"""evaling's ``eval.yaml`` in evalsite's format: models with provider and params, variants
with prompt files, cases inline or from CSV/JSONL (``file://`` values become case files),
the scorecard's criteria and judges, thresholds and settings. evaling's prompts are Jinja2,
so the suite says ``templating: jinja2``; content parts (``text``, ``image: "{{ files.x }}"``)
are evalsite's own. Every file a case attaches is copied beside the suite, under the same
relative path (evalsite reads no file outside the suite's folder).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import re
import shlex
from typing import Any

from evalsite.core.importers.common import (
    At,
    Collector,
    Translation,
    identifier,
    parse_translation,
    read_yaml,
    suite_name,
    unique,
    variant_specs,
)
from evalsite.core.media import MAX_MEDIA_BYTES
from evalsite.core.problems import SuiteError
from evalsite.core.providers.command import command_variable

__all__ = ["translate"]

TOP = {
    "settings", "models", "variants", "prompt", "cases", "scorecard", "judges", "thresholds",
    "privacy",
}  # fmt: skip
PROVIDERS = {"anthropic": "anthropic", "openai": "openai"}
PARAMS = ("temperature", "max_tokens", "top_p", "stop", "timeout_s")
CHECK_SCORERS = {"exact", "contains", "not-contains", "regex"}
CASE_KEYS = {"id", "vars", "files", "expected", "tags"}
_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # after scripted/


class _State:
    """What the walk collects beside the suite: files to copy, checks per case."""

    def __init__(self, c: Collector) -> None:
        self.c = c
        self.files: dict[str, str | bytes] = {}
        self.checks_at: tuple[Any, ...] | None = None  # the source's checks criterion
        self.checked_cases = 0  # cases that got a check (written inline or to cases_path)

    def copy(self, written: str, at: At) -> str | None:
        """Copy a file a case attaches; its path relative to the source's folder, or None
        when it cannot be read (a problem at ``at``)."""
        found = self.c.read_bytes(written, at, limit=MAX_MEDIA_BYTES)
        if found is None:
            return None
        self.files[found[1]] = found[0]
        return found[1]


def translate(source: pathlib.Path, *, uploaded: bool = False) -> Translation:
    """The eval at ``source``; the files it refers to are read from its folder, or, when
    ``uploaded`` (the add-suite page), not at all: each is a problem saying so."""
    document = read_yaml(source)
    data = document.data if isinstance(document.data, dict) else {}
    c = Collector(str(source), document, folder=None if uploaded else source.parent)
    state = _State(c)
    c.unknown_keys(data, TOP, (), "")
    for key in (data.get("settings") or {}) if isinstance(data.get("settings"), dict) else {}:
        why = "a workspace setting: evalsite's are EVALSITE_DATA_DIR and `evalsite run` options"
        c.skip(("settings", key), f"settings.{key}", why)
    suite: dict[str, Any] = {
        "suite": suite_name(source, "eval", "evaling"),
        "version": 1,
        "templating": "jinja2",
    }
    mocks: dict[str, str | None] = {}
    ids, models, params = _models(data.get("models"), c, mocks)
    variants = _variants(data, state)
    names = list(variants)
    suite["models"] = [f"{m}@{v}" for m in models for v in names] if len(names) > 1 else models
    if params:
        suite["defaults"] = params
    task: dict[str, Any] = {"id": "eval", "prompt": next(iter(variants.values()), "")}
    scorecard, checks, judge = _scorecard(data, ids, task, state)
    if judge:
        suite["judge"] = judge
        task["judge"] = False  # evaling's judges grade answers; they compare none in pairs
    gate = _thresholds(data.get("thresholds"), c)
    if gate:
        suite["gate"] = gate
    if scorecard:
        suite["scorecard"] = scorecard
    if len(names) > 1:
        suite["variants"] = variant_specs(variants)
    _cases(data.get("cases"), task, checks, state)
    _drop_empty_checks(suite, task, state)
    _privacy(data.get("privacy"), suite, c)
    suite["tasks"] = [task]
    c.raise_problems()
    translation = Translation(
        "evaling",
        str(source),
        f"{suite['suite']}.yaml",
        suite,
        state.files,
        tuple(c.untranslated),
        tuple(c.notes),
        _HEADER,
    )
    return _with_mock_replies(translation, mocks) if mocks else translation


_HEADER = (
    "evaling -> evalsite: a contestant is model@variant (the first variant is the task's",
    "own prompt), cases keep their vars and files, the scorecard's criteria keep their",
    "names and weights (llm-judge -> grade, json-schema -> schema, the deterministic",
    "scorers -> checks), thresholds are gates. Files are copied beside this suite.",
)


def _models(
    value: Any, c: Collector, mocks: dict[str, str | None]
) -> tuple[dict[str, str], list[str], dict[str, Any]]:
    """evaling model id -> evalsite model string, the contestants' models, shared params;
    each mock model's fixed response (None: it echoes) into ``mocks``."""
    ids: dict[str, str] = {}
    configs: list[dict[str, Any]] = []
    for index, entry in enumerate(value if isinstance(value, list) else []):
        if not isinstance(entry, dict):
            continue
        provider, model_id = entry.get("provider"), entry.get("id")
        path = ("models", index)
        if provider == "openai-compatible":
            url = entry.get("base_url", "")
            c.skip(path, f"model {model_id}", "an OpenAI-compatible base_url is an Endpoint")
            c.notes.append(
                f"{model_id} calls {url}: add an Endpoint in the admin with that "
                f"base URL and run with --models <endpoint>/{model_id}"
            )
            continue
        if provider == "mock" and _MODEL_NAME.fullmatch(str(model_id)):
            # evaling's deterministic offline model: a scripted one, answering from a
            # replies file the import writes (_mock_replies); it takes no params
            response = (entry.get("params") or {}).get("response")
            mocks[str(model_id)] = response if isinstance(response, str) else None
            ids[str(model_id)] = f"scripted/{model_id}"
            continue
        if provider == "command" and _MODEL_NAME.fullmatch(str(model_id)):
            ids[str(model_id)] = _command_model(str(model_id), entry, path, c)
            continue
        if provider not in PROVIDERS:
            why = "evalsite has no such provider (command is in docs/providers.md)"
            c.skip(path, f"model {model_id} ({provider})", why)
            continue
        ids[str(model_id)] = f"{PROVIDERS[provider]}/{model_id}"
        params = dict(entry.get("params") or {})
        for key in ("max_retries", "timeout_s", "max_concurrency", "requests_per_minute"):
            if key in entry:
                params.setdefault(key, entry[key])
        configs.append(params)
        c.unknown_keys(
            entry,
            {
                "id",
                "provider",
                "params",
                "max_retries",
                "timeout_s",
                "max_concurrency",
                "requests_per_minute",
            },
            path,
            "models[].",
        )
    return ids, list(ids.values()), _shared(configs, c)


def _command_model(
    model_id: str, entry: dict[str, Any], path: tuple[Any, ...], c: Collector
) -> str:
    """evaling's command model as evalsite's command/<id>: the same mechanism (the request
    on stdin, the answer on stdout), its program named by a variable the note gives."""
    program = entry.get("command")
    where = f" from {c.folder}" if c.folder is not None else ""
    c.notes.append(
        f"{model_id} is command/{model_id}: run it{where} with "
        f"{command_variable(model_id)}={shlex.quote(str(program or 'PROGRAM'))}; evalsite "
        "sends its own request JSON on stdin (docs/providers.md#command-models), which a "
        "program written for evaling's must read"
    )
    if entry.get("params"):
        c.skip(
            (*path, "params"),
            f"model {model_id} params",
            "evalsite's command request carries no params: give them on the program's command line",
        )
    c.unknown_keys(entry, {"id", "provider", "command", "params"}, path, "models[].")
    return f"command/{model_id}"


def _with_mock_replies(translation: Translation, mocks: dict[str, str | None]) -> Translation:
    """The translation with a replies file for its mock models: a fixed response for every
    case, or, for a mock that echoes, the text of the last user message evalsite renders for
    that case and variant. A suite that does not validate is returned as it is (the import
    reports its problems)."""
    import yaml

    from evalsite.core.suites import parse_contestant, render_messages

    assert translation.suite is not None
    suite = translation.suite
    replies_file = f"{suite['suite']}.replies.yaml"
    try:
        loaded = parse_translation(translation)
    except SuiteError:
        return translation
    replies: dict[str, dict[str, str]] = {}
    for text in suite["models"]:
        contestant = parse_contestant(text)
        provider, _, name = contestant.model.partition("/")
        if provider != "scripted" or name not in mocks:
            continue
        fixed = mocks[name]
        key = name if fixed is not None else text.removeprefix("scripted/")
        for task in loaded.tasks:
            for case in task.cases:
                if fixed is None:
                    messages = render_messages(loaded, task.id, case.id, contestant)
                    reply = _last_user_text(messages) or "(an empty prompt)"
                else:
                    reply = fixed
                replies.setdefault(key, {})[f"{task.id}/{case.id}"] = reply
    header = "# Replies of evaling's mock models, written by `evalsite import evaling`.\n"
    files = {**translation.files, replies_file: header + yaml.safe_dump(
        replies, sort_keys=False, allow_unicode=True, width=100)}  # fmt: skip
    echoes = sorted(name for name, fixed in mocks.items() if fixed is None)
    echoed = f" ({', '.join(echoes)}: the case's last user message)" if echoes else ""
    notes = [
        f"mock models {', '.join(sorted(mocks))} are scripted/<id>, answering from "
        f"{replies_file}{echoed}"
    ]
    return dataclasses.replace(
        translation,
        suite={**suite, "replies": replies_file},
        files=files,
        notes=(*translation.notes, *notes),
    )


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    """The text of the last user message: its string, or its text parts joined."""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        parts = content if isinstance(content, list) else []
        return "\n".join(str(p.get("text", "")) for p in parts if p.get("type") == "text")
    return ""


def _shared(configs: list[dict[str, Any]], c: Collector) -> dict[str, Any]:
    params: dict[str, Any] = {}
    keys = {key for config in configs for key in config}
    for key in sorted(keys):
        values = [config.get(key) for config in configs]
        if key in PARAMS and all(v == values[0] for v in values):
            params[key] = values[0]
        elif key in PARAMS:
            c.skip(
                ("models",),
                f"params.{key}",
                "differs between models; evalsite's defaults hold one value for every contestant",
            )
        else:
            c.skip(
                ("models",),
                f"{key}",
                "not a request setting of a suite (rate limits and retries are the server's)",
            )
    return params


def _variants(data: dict[str, Any], state: _State) -> dict[str, Any]:
    """Variant name -> prompt (a text or messages), the top-level prompt when none."""
    out: dict[str, Any] = {}
    taken = {"base"}
    for index, entry in enumerate(data.get("variants") or []):
        if not isinstance(entry, dict):
            continue
        name = unique(identifier(entry.get("name", ""), f"variant-{index + 1}"), taken)
        prompt = _prompt(entry.get("prompt"), state, ("variants", index, "prompt"))
        if prompt is not None:
            out[name] = prompt
    if not out and data.get("prompt") is not None:
        prompt = _prompt(data["prompt"], state, ("prompt",))
        if prompt is not None:
            out["base"] = prompt
    return out


def _prompt(value: Any, state: _State, path: tuple[Any, ...]) -> Any:
    if isinstance(value, str) and value.endswith((".yaml", ".yml", ".json", ".txt", ".j2")):
        if value.endswith((".txt", ".j2")):
            found = state.c.read_text(value, state.c.at(path))
            return found[0] if found else None
        document = state.c.read_yaml(value, state.c.at(path))
        if document is None:
            return None
        value = document[0].data
        if isinstance(value, dict):
            value = value.get("messages", value.get("prompt"))
    if isinstance(value, str) or (isinstance(value, list) and value):
        return value
    state.c.skip(path, "prompt", "not a text, a list of messages or a prompt file")
    return None


def _scorecard(
    data: dict[str, Any], ids: dict[str, str], task: dict[str, Any], state: _State
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """The scorecard, the check specs every case gets, and the judge."""
    c = state.c
    scorecard: list[dict[str, Any]] = []
    checks: list[dict[str, Any]] = []
    judge: dict[str, Any] = {}
    judges: Any = data.get("judges") if isinstance(data.get("judges"), dict) else {}
    for index, entry in enumerate(data.get("scorecard") or []):
        scorer = entry.get("scorer") if isinstance(entry, dict) else None
        if not isinstance(scorer, dict):
            continue
        kind, path = scorer.get("type"), ("scorecard", index)
        criterion = {
            "criterion": identifier(entry.get("criterion", ""), f"c{index}"),
            "weight": entry.get("weight", 1),
        }
        if kind == "llm-judge":
            name = scorer.get("judge")
            spec: Any = judges.get(name) if isinstance(judges.get(name), dict) else {}
            if judge:
                c.skip(
                    path,
                    f"criterion {criterion['criterion']}",
                    "evalsite grades with one "
                    "judge and one rubric per task: only the first llm-judge criterion is kept",
                )
                continue
            judge = {"model": ids.get(str(spec.get("model")), f"anthropic/{spec.get('model')}")}
            at = ("judges", name, "rubric")
            task["grade"] = {"rubric": _rubric(spec.get("rubric"), state, at)}
            scorecard.append({**criterion, "scorer": "grade"})
        elif kind == "json-schema":
            task["schema"] = _schema(scorer.get("schema"), state, (*path, "scorer", "schema"))
            scorecard.append({**criterion, "scorer": "schema"})
        elif kind == "json-valid":
            scorecard.append({**criterion, "scorer": "json_valid"})
        elif kind in CHECK_SCORERS:
            checks.append(scorer)
            if any(item["scorer"] == "checks" for item in scorecard):
                c.skip(
                    path,
                    f"criterion {criterion['criterion']} weight",
                    "its check joins "
                    "the first deterministic criterion: evalsite's checks scorer scores all "
                    "checks together",
                )
            else:
                scorecard.append({**criterion, "scorer": "checks"})
                state.checks_at = path
        else:
            c.skip(path, f"scorer {kind}", _WHY.get(str(kind), "no evalsite scorer does this"))
    return scorecard, checks, judge


_CALIBRATION = "judge calibration in evalsite is labels and the judge lab (docs/judge-lab.md)"
_WHY = {
    "python": "evalsite's python check calls function(answer, vars): write one and add it "
    "as {python: module:function}",
    "exact-agreement": _CALIBRATION,
    "within-n": _CALIBRATION,
}


def _drop_empty_checks(suite: dict[str, Any], task: dict[str, Any], state: _State) -> None:
    """A checks criterion whose checks reached no case (each compares with a case's expected
    value, and no case has one) would score nothing, and evalsite refuses such a scorecard:
    the criterion is listed instead (each case's missing value already is)."""
    scorecard = suite.get("scorecard") or []
    if state.checks_at is None or state.checked_cases or task.get("checks"):
        return
    criterion = next(item["criterion"] for item in scorecard if item["scorer"] == "checks")
    why = (
        "its check compares with each case's expected value, and no case has one: it would "
        "score no answer"
    )
    state.c.skip(state.checks_at, f"criterion {criterion}", why)
    kept = [item for item in scorecard if item["scorer"] != "checks"]
    if kept:
        suite["scorecard"] = kept
    else:
        suite.pop("scorecard", None)


def _rubric(value: Any, state: _State, path: tuple[Any, ...]) -> str:
    if isinstance(value, str) and value.endswith((".yaml", ".yml", ".txt", ".md", ".j2")):
        at = state.c.at(path)
        if not value.endswith((".yaml", ".yml")):
            found = state.c.read_text(value, at)
            return found[0] if found else ""
        document = state.c.read_yaml(value, at)
        if document is None:
            return ""
        loaded = document[0].data
        if isinstance(loaded, list):  # a judge prompt: its messages' text is the rubric
            state.c.notes.append(
                f"the judge prompt {value} is the grade's rubric text; "
                "evalsite's grade prompt frames it"
            )
            return "\n\n".join(str(m.get("content", "")) for m in loaded if isinstance(m, dict))
        if isinstance(loaded, str):
            return loaded
        text = state.c.read_text(value, at)  # any other YAML: its text is the rubric
        return text[0] if text else ""
    return str(value or "")


def _schema(value: Any, state: _State, path: tuple[Any, ...]) -> Any:
    if isinstance(value, dict):
        return value
    found = state.c.read_yaml(str(value), state.c.at(path))
    return found[0].data if found else None  # inlined: an uploaded suite can keep it


def _thresholds(value: Any, c: Collector) -> dict[str, Any]:
    gate: dict[str, Any] = {}
    if not isinstance(value, dict):
        return gate
    for key, number in value.items():
        if key in {"min_pass_rate", "min_score"}:
            gate[key] = number
        elif key == "baseline" and number == "regression":
            gate["max_regression_points"] = 0
            c.notes.append(
                "thresholds.baseline: regression is gate.max_regression_points: 0 "
                "against the run pinned with `evalsite baseline set`"
            )
        else:
            c.skip(("thresholds", key), f"thresholds.{key}", "no evalsite gate does this")
    return gate


def _cases(value: Any, task: dict[str, Any], checks: list[Any], state: _State) -> None:
    c = state.c
    path: tuple[str | int, ...] = ("cases",)
    if isinstance(value, dict) and "source" in value:
        _source(value, c)
        return
    if isinstance(value, dict) and "file" in value:
        value, path = str(value["file"]), ("cases", "file")
    if isinstance(value, str):
        records = _records(value, c.at(path), c)
    else:
        records = [
            (r, c.at(("cases", i))) for i, r in enumerate(value or []) if isinstance(r, dict)
        ]
    taken: set[str] = set()
    cases = [
        _case(record, n, at, checks, taken, state)
        for n, (record, at) in enumerate(records, start=1)
    ]
    if isinstance(value, str):
        name = f"{pathlib.PurePosixPath(value).stem}.imported.jsonl"
        state.files[name] = "".join(json.dumps(case, ensure_ascii=False) + "\n" for case in cases)
        task["cases_path"] = name
    else:
        task["cases"] = cases


def _source(value: dict[str, Any], c: Collector) -> None:
    """evaling's cases from a Python source (a factory called with ``params``, read in
    pages): evalsite's ``cases_from: {python: module:function}`` calls a function with no
    arguments, so the source is listed with what to write, and with no case the import is
    refused (an evalsite suite needs one)."""
    reference = str(value.get("source"))
    params = value.get("params") or {}
    params = params if isinstance(params, dict) else {}
    called = ", ".join(f"{key}={val!r}" for key, val in params.items())
    module, _, function = reference.partition(":")
    dotted = module.removesuffix(".py").replace("/", ".")
    why = (
        f"evalsite's cases_from: {{python: {dotted}:FUNCTION}} calls a function with no "
        f"arguments that returns the cases: write one that returns {function}({called})'s "
        "rows and name it in the task's cases_from (docs/no-look.md, Datasources)"
    )
    c.skip(("cases", "source"), f"cases source {reference}", why)
    if "limit" in value:
        why = f"a run option in evalsite: evalsite run --limit {value['limit']}"
        c.skip(("cases", "limit"), "cases.limit", why)
    for key in sorted(set(value) - {"source", "params", "limit"}):
        why = "the source's own setting: a cases_from function returns every case at once"
        c.skip(("cases", key), f"cases.{key}", why)
    c.problem(
        c.at(("cases", "source")),
        "no case translated: the cases come from a Python source evalsite cannot call as it "
        "is (see the untranslated list)",
    )


def _privacy(value: Any, suite: dict[str, Any], c: Collector) -> None:
    """evaling's ``privacy.no_look`` is evalsite's (docs/no-look.md); other keys listed."""
    if not isinstance(value, dict):
        return
    if value.get("no_look") is True:
        suite["privacy"] = {"no_look": True}
    for key in sorted(set(value) - {"no_look"}):
        c.skip(("privacy", key), f"privacy.{key}", "not a key this importer translates")


def _records(written: str, at: At, c: Collector) -> list[tuple[dict[str, Any], At]]:
    """Each case of a CSV or JSONL cases file, and where it is (file, line)."""
    found = c.read_text(written, at)
    if found is None:
        return []
    text, file = found
    if written.lower().endswith(".csv"):
        return [(row, (file, line, "")) for line, row in c.csv_rows(text, file)]
    out: list[tuple[dict[str, Any], At]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            c.problem((file, number, ""), f"not valid JSON: {error.msg} at column {error.colno}")
            continue
        if isinstance(record, dict):
            out.append((record, (file, number, "")))
        else:
            c.problem((file, number, ""), "a case must be a JSON object")
    return out


def _case(
    record: dict[str, Any],
    number: int,
    at: At,
    checks: list[Any],
    taken: set[str],
    state: _State,
) -> dict[str, Any]:
    file, line, _ = at
    flat = "vars" not in record and "files" not in record
    variables = _mapping(record, "vars", number, at, state.c)
    files = _mapping(record, "files", number, at, state.c)
    extra = {k: v for k, v in record.items() if k not in CASE_KEYS | {"reference", "human_label"}}
    if flat:
        variables.update(extra)
    else:
        for key in extra:
            state.c.skip_at(line, f"case {number}: {key}", "not a case key", file=file)
    for key in ("reference", "human_label"):
        if key in record:
            why = (
                (
                    "a preference label in evalsite is a pair of answers (labels:); a "
                    "per-answer human label is not"
                )
                if key == "human_label"
                else "not translated"
            )
            state.c.skip_at(line, f"case {number}: {key}", why, file=file)
    written = {key: (str(value), "files") for key, value in files.items()}
    for key, value in list(variables.items()):
        if isinstance(value, str) and value.startswith("file://"):
            written[key] = (variables.pop(key).removeprefix("file://"), "vars")
    case: dict[str, Any] = {"id": unique(identifier(record.get("id", ""), f"case-{number}"), taken)}
    if variables:
        case["vars"] = variables
    copied = {
        key: state.copy(value, (file, line, ".".join(filter(None, (at[2], kind, key)))))
        for key, (value, kind) in written.items()
    }
    if any(v for v in copied.values()):
        case["files"] = {k: v for k, v in copied.items() if v}
    case_checks = [_check(spec, record.get("expected")) for spec in checks]
    if any(check is None for check in case_checks):
        state.c.skip_at(
            line,
            f"case {number}: expected",
            "a check compares with the case's expected value, which this case lacks",
            file=file,
        )
    elif record.get("expected") is not None and all(_own_value(s) is not None for s in checks):
        state.c.skip_at(
            line,
            f"case {number}: expected",
            "no translated check compares with it (a python check receives the case's vars: "
            "add it there)",
            file=file,
        )
    if any(case_checks):
        case["checks"] = [check for check in case_checks if check]
        state.checked_cases += 1
    if record.get("tags"):
        case["tags"] = [str(tag) for tag in record["tags"]]
    return case


def _mapping(record: dict[str, Any], key: str, number: int, at: At, c: Collector) -> dict[str, Any]:
    """The case's ``vars`` or ``files``: a mapping, or untranslated."""
    value = record.get(key)
    if value is None or isinstance(value, dict):
        return dict(value or {})
    c.skip_at(at[1], f"case {number}: {key}", "not a mapping", file=at[0])
    return {}


def _own_value(spec: dict[str, Any]) -> Any:
    """The value a scorer spec compares with itself; None: the case's expected value."""
    return spec.get("pattern", spec.get("value"))


def _check(spec: dict[str, Any], expected: Any) -> dict[str, Any] | None:
    kind = spec["type"]
    value = _own_value(spec)
    value = expected if value is None else value
    if value is None:
        return None
    sensitive = spec.get("case_sensitive")
    check: dict[str, Any] = {
        "exact": {"equals": str(value)},
        "contains": {"contains": str(value)},
        "not-contains": {"not_contains": str(value)},
        "regex": {"regex": str(value)},
    }[kind]
    if sensitive is False:
        check["case_sensitive"] = False
    return check
