"""promptfoo's ``promptfooconfig.yaml`` in evalsite's format, following promptfoo's
configuration reference: ``prompts`` (inline and ``file://``), ``providers``, ``tests``
(inline, or a CSV/YAML file), ``defaultTest`` and the common assertions. Each prompt after
the first is a variant (a contestant is ``provider@prompt``); the tests are the cases of one
task, ``tests``; an assertion becomes a check, a grade or the judge's rubric, and every
other assertion is listed as untranslated (docs/importing.md has the table).
"""

from __future__ import annotations

import copy
import pathlib
import re
from typing import Any

from evalsite.core.importers.common import (
    At,
    Collector,
    Translation,
    identifier,
    jsonl_values,
    read_yaml,
    suite_name,
    unique,
    variant_specs,
)
from evalsite.core.importers.promptfoo_assertions import (
    DEFAULT_GRADER,
    Context,
    assertions,
    other_grader,
)
from evalsite.core.importers.promptfoo_prompts import (
    CODE,
    DATA,
    PLAIN,
    as_js_yaml,
    needs_jinja,
    read_js_yaml,
)
from evalsite.core.importers.promptfoo_prompts import prompts as read_prompts
from evalsite.core.importers.promptfoo_providers import (
    COMPATIBLE,
    KNOWN_CONFIG,
    grader,
    provider_text,
)
from evalsite.core.importers.promptfoo_providers import providers as read_providers
from evalsite.core.importers.promptfoo_transform import (
    NO_PLACE,
    Transform,
)
from evalsite.core.importers.promptfoo_transform import read as read_transform
from evalsite.core.importers.promptfoo_vars import case_combinations
from evalsite.core.importers.promptfoo_vars import resolved as vars_resolved
from evalsite.core.importers.promptfoo_weights import scorecard

__all__ = ["translate"]

MEDIA = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".pdf", ".mp3", ".wav", ".mp4"}
TOP = {
    "description",
    "prompts",
    "providers",
    "targets",
    "tests",
    "defaultTest",
    "evaluateOptions",
    "assertionTemplates",  # read where a $ref names one
}
TEST = {"description", "vars", "assert", "options"}
TEST_FILES = DATA | {".csv", ".jsonl"}
VAR_FILE_CHARS = 200_000  # a var file read into the suite; a suite is at most 5 MiB


def translate(source: pathlib.Path, *, uploaded: bool = False) -> Translation:
    """The config at ``source``; the files it refers to are read from its folder, or, when
    ``uploaded`` (the add-suite page), not at all: each is a problem saying so. A config
    with no prompt, or whose tests all fail to translate, is refused (:class:`Refused`,
    with the untranslated list): never a suite with a placeholder prompt or case."""
    document = as_js_yaml(read_yaml(source))
    data = document.data if isinstance(document.data, dict) else {}
    c = Collector(str(source), document, folder=None if uploaded else source.parent)
    c.unknown_keys(data, TOP, (), "")
    prompts = read_prompts(data.get("prompts"), c)
    contestants = read_providers(data.get("providers", data.get("targets")), c)
    tests = _tests(data.get("tests"), c)
    default: Any = data.get("defaultTest") if isinstance(data.get("defaultTest"), dict) else {}
    suite: dict[str, Any] = {
        "suite": suite_name(source, "promptfooconfig", "promptfoo"),
        "version": 1,
    }
    if data.get("description"):
        suite["description"] = str(data["description"])
    texts = [text for _, text in prompts if isinstance(text, str)]
    if any(needs_jinja(text) for text in texts):
        suite["templating"] = "jinja2"
    names = [name for name, _ in prompts]
    suite["models"] = contestants.contestants(names, c)
    repeat = (data.get("evaluateOptions") or {}).get("repeat")
    if isinstance(repeat, int) and 1 <= repeat <= 20:
        suite["repeats"] = repeat
    _evaluate_options(data.get("evaluateOptions"), c)
    params = _shared_params(contestants.configs, c)
    if params:
        suite["defaults"] = params
    task, judge, weights = _task(prompts, tests, default, c, data)
    if judge:
        suite["judge"] = judge
    if weights:
        suite["scorecard"] = weights
    if len(prompts) > 1:
        suite["variants"] = variant_specs(dict(prompts))
    suite["tasks"] = [task]
    _refuse_empty(data, prompts, task["cases"], c)
    c.raise_problems()
    return Translation(
        "promptfoo",
        str(source),
        f"{suite['suite']}.yaml",
        suite,
        dict(contestants.files),
        tuple(c.untranslated),
        tuple(c.notes),
        _HEADER,
    )


def _refuse_empty(data: dict[str, Any], prompts: list[Any], cases: list[Any], c: Collector) -> None:
    """A problem when no prompt translated, or tests were given and no case translated (a
    file that could not be read is a problem of its own already)."""
    if c.problems:
        return
    if not prompts:
        c.problem(
            c.at(("prompts",)),
            "no prompt translated (every prompt is listed as untranslated above); evalsite "
            "writes no suite without one",
        )
    if data.get("tests") not in (None, []) and not cases:
        c.problem(
            c.at(("tests",)),
            "no test translated (each is listed as untranslated above); evalsite writes no "
            "suite with a placeholder case",
        )


_HEADER = (
    "promptfoo -> evalsite: providers are contestants (one per provider and prompt:",
    "provider@prompt), the tests are the cases of the task `tests`, defaultTest's vars and",
    "assertions are merged into every case; assertions are checks, llm-rubric a case grade",
    "(the judge scores 1-5, normalised to 0-1), select-best the pairwise judge's rubric.",
)


def _evaluate_options(options: Any, c: Collector) -> None:
    if not isinstance(options, dict):
        return
    for key in options:
        if key != "repeat":
            why = "a run option in evalsite (e.g. evalsite run --concurrency N)"
            c.skip(("evaluateOptions", key), f"evaluateOptions.{key}", why)


# --- prompts ---------------------------------------------------------------------------------


# --- providers -------------------------------------------------------------------------------


# A provider's config key that is an evalsite request setting under another name:
# OpenAI's newer max_completion_tokens and Ollama's num_predict are evalsite's max_tokens.
CONFIG_ALIASES = {"max_completion_tokens": "max_tokens", "num_predict": "max_tokens"}
REASONING = {"none", "minimal", "low", "medium", "high", "xhigh"}


def _shared_params(configs: list[dict[str, Any]], c: Collector) -> dict[str, Any]:
    params: dict[str, Any] = {}
    configs = [_aliased(config) for config in configs]
    for key in ("temperature", "max_tokens", "top_p", "reasoning_effort"):
        values = [config.get(key) for config in configs]
        if key == "reasoning_effort" and any(v is not None and v not in REASONING for v in values):
            why = f"one of {', '.join(sorted(REASONING))} in evalsite"
            c.skip(("providers",), "config.reasoning_effort", why)
            continue
        if values and all(v is not None and v == values[0] for v in values):
            params[key] = values[0]
        elif any(v is not None for v in values):
            c.skip(
                ("providers",),
                f"config.{key}",
                "differs between providers; evalsite's "
                "defaults hold one value (a variant's params can hold another)",
            )
    for config in configs:
        for key in config:
            if key not in KNOWN_CONFIG | {"reasoning_effort"}:
                c.skip(("providers",), f"config.{key}", "not a request setting evalsite has")
    return params


def _aliased(config: dict[str, Any]) -> dict[str, Any]:
    """`config` with CONFIG_ALIASES' keys under evalsite's name (its own name wins)."""
    out = {key: value for key, value in config.items() if key not in CONFIG_ALIASES}
    for key, name in CONFIG_ALIASES.items():
        if key in config:
            out.setdefault(name, config[key])
    return out


# --- tests -----------------------------------------------------------------------------------


def _tests(value: Any, c: Collector) -> list[tuple[dict[str, Any], At]]:
    """Every test, inline or read from CSV/YAML files, and where it is (file, line, key)."""
    items = value if isinstance(value, list) else [] if value is None else [value]
    out: list[tuple[dict[str, Any], At]] = []
    for index, item in enumerate(items):
        where = ("tests", index) if isinstance(value, list) else ("tests",)
        if isinstance(item, dict) and "path" in item:
            out += _test_generator(item, where, c)
        elif isinstance(item, dict):
            out.append((item, c.at(("tests", index))))
        elif isinstance(item, str) and item.startswith("file://"):
            out += _test_file(item, ("tests", index), c)
        else:
            c.skip(("tests", index), "test", "not a test or a file:// reference")
    return out


def _test_generator(
    item: dict[str, Any], where: tuple[Any, ...], c: Collector
) -> list[tuple[dict[str, Any], At]]:
    """promptfoo's ``{path, config}``: a tests file (CSV, YAML, JSON, JSONL) with no config
    is read as one; a script that makes the tests is listed, never one empty test."""
    written = str(item.get("path"))
    suffix = pathlib.PurePosixPath(written).suffix.lower()
    if set(item) == {"path"} and written.startswith("file://") and suffix in TEST_FILES:
        return _test_file(written, where, c)
    why = (
        "a test generator: promptfoo calls the script with its config to make the tests, "
        "and evalsite runs no such script (a Python one is a cases_from: {python: "
        "module:function} whose function takes no arguments: write one returning its cases)"
    )
    c.skip(where, f"tests {written}", why)
    return []


def _test_file(
    written: str, where: tuple[Any, ...], c: Collector
) -> list[tuple[dict[str, Any], At]]:
    suffix = pathlib.PurePosixPath(written).suffix.lower()
    if suffix == ".csv":
        found = c.read_text(written, c.at(where))
        return _csv_tests(*found, c) if found else []
    if suffix in DATA:
        loaded = read_js_yaml(c, written, c.at(where))
        if loaded is None:
            return []
        document, file = loaded
        tests = document.data if isinstance(document.data, list) else []
        return [
            (t, (file, document.lines.get((i,)), f"[{i}]"))
            for i, t in enumerate(tests)
            if isinstance(t, dict)
        ]
    if suffix == ".jsonl":
        found = c.read_text(written, c.at(where))
        return _jsonl_tests(*found, c) if found else []
    c.skip(where, f"tests {written}", "only CSV, JSONL, YAML and JSON test files translate")
    return []


def _csv_tests(text: str, file: str, c: Collector) -> list[tuple[dict[str, Any], At]]:
    out: list[tuple[dict[str, Any], At]] = []
    for line, row in c.csv_rows(text, file):
        test: dict[str, Any] = {"vars": {}, "assert": []}
        for column, cell in row.items():
            if column is None or cell is None:
                continue
            if column.startswith("__expected"):
                if cell:
                    test["assert"].append(_csv_assertion(cell))
            elif column == "__description":
                test["description"] = cell
            elif column.startswith("__"):
                c.skip_at(line, f"column {column}", "not translated", file=file)
            else:
                test["vars"][column] = cell
        out.append((test, (file, line, "")))
    return out


def _jsonl_tests(text: str, file: str, c: Collector) -> list[tuple[dict[str, Any], At]]:
    """A test object a line (blank lines skipped); a line that is none is listed."""
    out: list[tuple[dict[str, Any], At]] = []
    for line, test in jsonl_values(text):
        if isinstance(test, dict):
            out.append((test, (file, line, "")))
        else:
            c.skip_at(
                line, "test", "not a JSON object (a JSONL file holds a test a line)", file=file
            )
    return out


def _csv_assertion(cell: str) -> dict[str, Any]:
    """promptfoo's ``__expected`` cell: ``type: value``, a bare type, or text to equal."""
    match = re.fullmatch(r"([a-z-]+):\s?(.*)", cell, re.S)
    kind, value = (match[1], match[2]) if match else ("equals", cell)
    if match is None and cell in {"is-json", "contains-json"}:
        return {"type": cell}
    if kind == "grade":
        kind = "llm-rubric"
    if kind in {"contains-any", "contains-all", "icontains-any", "icontains-all"}:
        return {"type": kind, "value": [part.strip() for part in value.split(",")]}
    if kind in {"fn", "eval"}:
        kind = "javascript"
    return {"type": kind, "value": value}


# --- the task --------------------------------------------------------------------------------


def _task(
    prompts: list[tuple[str, Any]],
    tests: list[Any],
    default: dict[str, Any],
    c: Collector,
    data: dict[str, Any],
) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]] | None]:
    base_prompt = prompts[0][1] if prompts else ""
    task: dict[str, Any] = {"id": "tests", "prompt": base_prompt}
    context = Context(data, default.get("assert"))
    _grader(default.get("options"), ("defaultTest", "options"), c, context)
    if not data.get("tests"):  # promptfoo runs each prompt once, with defaultTest
        tests = [({"description": "default"}, c.at(("defaultTest",)))]
    c.unknown_keys(default, {"vars", "assert", "options"}, ("defaultTest",), "defaultTest.")
    taken: set[str] = set()
    placeholders = set()
    for _, prompt in prompts:
        texts = [prompt] if isinstance(prompt, str) else [m["content"] for m in prompt]
        for text in texts:
            placeholders |= set(PLAIN.findall(text))
    default_vars = _vars(default.get("vars"), c.at(("defaultTest", "vars")), c)
    cases = []
    for number, (test, at) in enumerate(tests, start=1):
        cases.extend(
            _cases(
                test,
                number,
                at,
                default_vars,
                placeholders,
                taken,
                c,
                context,
            )
        )
    if context.schema is not None:
        task["schema"] = context.schema
    judge: dict[str, Any] = {}
    if context.graded or context.rubric:
        judge["model"] = context.grader or DEFAULT_GRADER
        if context.grader is None:
            asked = (
                f"the file's grader {context.asked} does not translate"
                if context.asked
                else ("promptfoo's default grader's vendor")
            )
            c.notes.append(f"the judge is {DEFAULT_GRADER} ({asked}): set judge.model to yours")
    if context.rubric:
        judge["rubric"] = context.rubric
    elif judge:
        task["judge"] = False  # the judge grades; it compares in pairs only for select-best
    task["cases"] = cases
    return task, judge, scorecard(context.weighed, c)


def _grader(options: Any, path: tuple[Any, ...], c: Collector, context: Context) -> None:
    """defaultTest's ``options``: its ``provider`` is the judge when evalsite calls it (a
    text or an object with an ``id``); it and every other option listed otherwise."""
    if not isinstance(options, dict):
        return
    for key in options:
        if key not in {"provider", "transform"}:
            c.skip(
                (*path, key), f"{path[0]}.options.{key}", "not an option this importer translates"
            )
    context.default_transform = read_transform(options.get("transform"))
    if context.default_transform.kind == "other":
        why = f"{NO_PLACE}; every test's assertions are left out with it (a test's own "
        c.skip((*path, "transform"), f"{path[0]}.options.transform", why + "transform replaces it)")
    if options.get("provider") is None:
        return
    written = provider_text(options["provider"])
    context.grader = grader(options["provider"])
    endpoint = (context.grader or "").partition("/")[0]
    if endpoint in COMPATIBLE:
        c.notes.append(
            f"the judge {context.grader} is a model of the Endpoint {endpoint} (base URL "
            f"{COMPATIBLE[endpoint]}): add it in the admin, with a price row"
        )
    if context.grader is None:
        context.asked = written
        why = f"not a model evalsite calls as the judge; the judge is {DEFAULT_GRADER}"
        c.skip((*path, "provider"), f"{path[0]}.options.provider {written}", why)


def _cases(
    test: dict[str, Any],
    number: int,
    at: At,
    default_vars: dict[str, Any],
    placeholders: set[str],
    taken: set[str],
    c: Collector,
    context: Context,
) -> list[dict[str, Any]]:
    """The test's cases: one per combination of its list vars (promptfoo_vars), each with
    its vars' references to other vars filled in; the checks and grade of each the test's."""
    file, line, place = at
    for key in test:
        if key not in TEST:
            c.skip_at(
                line, f"test {number}: {key}", "not a key this importer translates", file=file
            )
    outer = _test_options(test, number, at, c, context)
    where = (file, line, f"{place}.vars" if place else "vars")
    variables = {**default_vars, **_vars(test.get("vars"), where, c)}
    combinations = case_combinations(variables, number, at, c)
    if not combinations:
        return []
    shared: dict[str, Any] = {}
    if outer.kind != "other":  # else the checks would test the untransformed answer: listed
        checks, grade = assertions(test.get("assert"), (), file, c, context, line, outer)
        defaults = context.defaults(outer, c)
        shared = {"checks": defaults[0] + checks, "grade": grade or defaults[1]}
    name = str(test.get("description") or "")
    base = identifier(name, f"test-{number}") if name else f"test-{number}"
    cases = []
    for k, chosen in enumerate(combinations, start=1):
        case: dict[str, Any] = {
            "id": unique(base if len(combinations) == 1 else f"{base}-{k}", taken)
        }
        vars_out = vars_resolved(chosen)
        for key in sorted(placeholders - set(vars_out)):
            vars_out[key] = ""  # promptfoo renders a missing var as nothing
        if vars_out:
            case["vars"] = vars_out
        cases.append(case | {key: copy.deepcopy(v) for key, v in shared.items() if v})
    return cases


def _test_options(
    test: dict[str, Any], number: int, at: At, c: Collector, context: Context
) -> Transform:
    """A test's ``options`` (its grading provider; the rest listed) and the transform its
    assertions read the output through: its own, else defaultTest's. A transform evalsite
    has no place for is listed, the test's assertions with it."""
    file, line, _ = at
    options: Any = test.get("options") if isinstance(test.get("options"), dict) else {}
    for key, value in options.items():
        if key == "provider":
            other_grader(value, f"test {number}: options.provider", line, file, c, context)
        elif key != "transform":
            why = "not an option this importer translates"
            c.skip_at(line, f"test {number}: options.{key}", why, file=file)
    if "transform" not in options:
        return context.default_transform
    outer = read_transform(options["transform"])
    if outer.kind == "other":
        asserted = len(test.get("assert") or []) if isinstance(test.get("assert"), list) else 0
        why = f"{NO_PLACE}; the test's assertions ({asserted}, and defaultTest's) go with it"
        c.skip_at(line, f"test {number}: options.transform {outer.written}", why, file=file)
    return outer


def _vars(value: Any, at: At, c: Collector) -> dict[str, Any]:
    """A test's vars as promptfoo loads them: a mapping, or a ``file://`` YAML or JSON file
    holding one; a value ``file://PATH`` is that file's text (a YAML or JSON file's data)."""
    what = at[2]
    if isinstance(value, str) and value.startswith("file://"):
        found = read_js_yaml(c, value, at)
        value, what = (found[0].data if found else None), f"{at[2]} {value}"
    if not isinstance(value, dict):
        if value is not None:
            why = "not a mapping of vars (promptfoo makes a list into several tests)"
            c.skip_at(at[1], what, why, file=at[0])
        return {}
    loaded = {}
    for key, item in value.items():
        if isinstance(item, str) and item.startswith("file://"):
            item = _var_file(item, (at[0], at[1], f"{at[2]}.{key}"), c)
        if item is not None:
            loaded[key] = item
    return loaded


def _var_file(written: str, at: At, c: Collector) -> Any:
    """The value of a var promptfoo loads from a file; None (untranslated) for a script's
    or a media file's."""
    suffix = pathlib.PurePosixPath(written).suffix.lower()
    if any(ch in written for ch in "*?["):
        why = "a glob: promptfoo makes a test of each file it matches; list each file's test"
        c.skip_at(at[1], f"{at[2]} {written}", why, file=at[0])
        return None
    if suffix in CODE | MEDIA:
        why = (
            "a var a script computes is code evalsite runs not"
            if suffix in CODE
            else "promptfoo inlines it as base64 text; attach it as a case file (files:)"
        )
        c.skip_at(at[1], f"{at[2]} {written}", why, file=at[0])
        return None
    if suffix in DATA:
        document = read_js_yaml(c, written, at)
        return None if document is None else document[0].data
    found = c.read_text(written, at)
    if found is not None and len(found[0]) > VAR_FILE_CHARS:
        why = (
            f"longer than {VAR_FILE_CHARS:,} characters: the suite would hold it in every case "
            "that uses it; attach it as a case file (files:) or shorten it"
        )
        c.skip_at(at[1], f"{at[2]} {written}", why, file=at[0])
        return None
    return None if found is None else found[0]
