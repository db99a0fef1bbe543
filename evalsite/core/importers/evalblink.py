"""evalblink's benchmark YAML (``name``, ``models``, ``prompts``, ``variables``,
``test_cases``, ``evaluation``, ``inference``…) in evalsite's format, with the mapping
decisions of ``examples/evalblink-quickstart.yaml``: prompts are variants (a contestant is
``model@prompt``), ``exact_match`` is the check of that name, ``llm_judge`` a case
``grade:``, ``weighted_match`` a task of its own, ``quality_threshold`` a
``min_best_score`` gate (a ``min_score`` on the combination a ``gate:`` block names).
evalblink routes every model through OpenRouter, so ``openai/gpt-4o-mini`` is the
contestant ``openrouter/openai/gpt-4o-mini``.
"""

from __future__ import annotations

import pathlib
from typing import Any

from evalsite.core.importers.common import (
    Collector,
    Translation,
    identifier,
    read_yaml,
    unique,
)
from evalsite.core.suite_schema import MODEL

__all__ = ["translate"]

import re

_MODEL = re.compile(MODEL)
TOP = {
    "name",
    "description",
    "quality_threshold",
    "max_cost_usd",
    "models",
    "inference",
    "evaluation",
    "prompts",
    "variables",
    "test_cases",
    "concurrency",
    "gate",
}
INFERENCE = {"temperature", "max_tokens", "top_p"}
EVALUATION = {
    "judge_model",
    "judge_threshold",
    "judge_max_tokens",
    "quality_threshold",
    "variables",
}
CASE = {"id", "variables", "expected_output", "evaluation", "criteria", "reference", "tags"}
DEFAULT_JUDGE_THRESHOLD = 0.7


def _yours(key: Any) -> bool:
    """evalblink leaves keys starting with _ or x- to the user (anchors, notes)."""
    return isinstance(key, str) and (key.startswith("_") or key.startswith("x-"))


def translate(source: pathlib.Path) -> Translation:
    document = read_yaml(source)
    data = document.data if isinstance(document.data, dict) else {}
    c = Collector(str(source), document)
    c.unknown_keys({k: v for k, v in data.items() if not _yours(k)}, TOP, (), "")
    name = str(data.get("name") or source.stem)
    suite: dict[str, Any] = {
        "suite": identifier(name, "evalblink"),
        "version": 1,
        "description": name,
        "templating": "jinja2",  # evalblink renders template and system with Jinja2
    }
    models = _models(data.get("models"), c)
    variants, prompt, system = _prompts(data.get("prompts"), c)
    contestants = [f"{m}@{v}" for m in models for v in variants] if len(variants) > 1 else models
    suite["models"] = contestants
    _limits_and_gate(data, suite, contestants, c)
    defaults = _inference(data.get("inference"), c)
    if defaults:
        suite["defaults"] = defaults
    evaluation: Any = data.get("evaluation") if isinstance(data.get("evaluation"), dict) else {}
    c.unknown_keys(
        {k: v for k, v in evaluation.items() if not _yours(k)},
        EVALUATION,
        ("evaluation",),
        "evaluation.",
    )
    judge = _judge(evaluation, c)
    if judge:
        suite["judge"] = judge
    if len(variants) > 1:
        suite["variants"] = variants
    suite["tasks"] = _tasks(data, prompt, system, evaluation, c)
    if data.get("concurrency") is not None:
        why = "a run option in evalsite: evalsite run --concurrency N"
        c.skip(("concurrency",), "concurrency", why)
    return Translation(
        "evalblink",
        str(source),
        f"{suite['suite']}.yaml",
        suite,
        {},
        tuple(c.untranslated),
        tuple(c.notes),
        _HEADER,
    )


_HEADER = (
    "evalblink -> evalsite: models are openrouter/<id> contestants, one per model and",
    "prompt (model@prompt); exact_match is the check of that name (whole answer, any",
    "case); llm_judge criteria/reference are a case grade: (the judge scores 1-5,",
    "normalised to 0-1, against judge_threshold); weighted_match cases are the task",
    "weighted-match; the task's judge: false keeps the judge to grading, as evalblink's.",
)


def _models(value: Any, c: Collector) -> list[str]:
    out: list[str] = []
    for index, model in enumerate(value if isinstance(value, list) else []):
        contestant = f"openrouter/{model}"
        if not isinstance(model, str) or not _MODEL.fullmatch(contestant):
            why = "evalsite's model strings take letters, digits, '.', '_', '-', ':' and '/' only"
            c.skip(("models", index), f"model {model!r}", why)
        elif contestant not in out:
            out.append(contestant)
    return out


def _prompts(value: Any, c: Collector) -> tuple[dict[str, Any], str, str | None]:
    """The variants (by prompt id), the task's prompt and system (the first prompt's)."""
    prompts = [p for p in (value if isinstance(value, list) else []) if isinstance(p, dict)]
    if not prompts:
        return {}, "", None
    first = prompts[0]
    system = first.get("system")
    taken: set[str] = {"base"}
    variants: dict[str, Any] = {}
    for index, entry in enumerate(prompts):
        c.unknown_keys(entry, {"id", "template", "system"}, ("prompts", index), "prompts[].")
        name = unique(identifier(entry.get("id", ""), f"prompt-{index + 1}"), taken)
        if index == 0:
            variants[name] = {}  # the task's own prompt, named as evalblink's Prompt column
            continue
        spec: dict[str, Any] = {"prompt": entry.get("template") or ""}
        if entry.get("system") is not None:
            spec["system"] = entry["system"]
        elif system is not None:
            spec["system"] = ""  # no system prompt, not the first prompt's
        variants[name] = spec
    return variants, first.get("template") or "", system


def _limits_and_gate(
    data: dict[str, Any], suite: dict[str, Any], contestants: list[str], c: Collector
) -> None:
    cost = data.get("max_cost_usd")
    if isinstance(cost, int | float) and not isinstance(cost, bool) and cost > 0:
        suite["limits"] = {"max_cost_usd": cost}
    elif cost is not None:
        c.skip(("max_cost_usd",), "max_cost_usd", "evalsite's limits.max_cost_usd must be above 0")
    threshold = data.get("quality_threshold")
    if threshold is None or not contestants:
        return
    wanted = round(float(threshold) / 100, 6)
    target = _gated(data.get("gate"), contestants)
    # evalblink gates its best combination, or the one its gate: block names
    suite["gate"] = {"min_score": {target: wanted}} if target else {"min_best_score": wanted}


def _gated(gate: Any, contestants: list[str]) -> str | None:
    if not isinstance(gate, dict):
        return None
    model, prompt = gate.get("model"), gate.get("prompt")
    for contestant in contestants:
        name, _, variant = contestant.partition("@")
        if (model is None or name == f"openrouter/{model}") and (
            prompt is None or variant == identifier(str(prompt), "")
        ):
            return contestant
    return None


def _inference(value: Any, c: Collector) -> dict[str, Any]:
    if not isinstance(value, dict):
        return {}
    c.unknown_keys(value, INFERENCE, ("inference",), "inference.")
    return {key: value[key] for key in ("temperature", "max_tokens", "top_p") if key in value}


def _judge(evaluation: dict[str, Any], c: Collector) -> dict[str, Any]:
    model = evaluation.get("judge_model")
    if not isinstance(model, str):
        return {}
    judge: dict[str, Any] = {"model": f"openrouter/{model}"}
    if not _MODEL.fullmatch(judge["model"]):
        c.skip(("evaluation", "judge_model"), "judge_model", "not an evalsite model string")
        return {}
    if isinstance(evaluation.get("judge_max_tokens"), int):
        judge["max_tokens"] = evaluation["judge_max_tokens"]
    return judge


def _tasks(
    data: dict[str, Any],
    prompt: str,
    system: str | None,
    evaluation: dict[str, Any],
    c: Collector,
) -> list[dict[str, Any]]:
    shared: Any = data.get("variables") if isinstance(data.get("variables"), dict) else {}
    threshold = evaluation.get("judge_threshold", DEFAULT_JUDGE_THRESHOLD)
    plain: list[dict[str, Any]] = []
    weighted: list[dict[str, Any]] = []
    taken: set[str] = set()
    for index, entry in enumerate(data.get("test_cases") or []):
        if not isinstance(entry, dict):
            continue
        c.unknown_keys(
            {k: v for k, v in entry.items() if not _yours(k)},
            CASE,
            ("test_cases", index),
            "test_cases[].",
        )
        case = _case(entry, index, shared, threshold, taken, c)
        (weighted if entry.get("evaluation") == "weighted_match" else plain).append(case)
    base: dict[str, Any] = {"prompt": prompt, "judge": False}
    if system is not None:
        base["system"] = system
    tasks = []
    if plain:
        tasks.append({"id": "cases", **base, "cases": plain})
    if weighted:
        spec = _weighted_spec(evaluation, c)
        tasks.append({"id": "weighted-match", **base, "weighted_match": spec, "cases": weighted})
    return tasks


def _case(
    entry: dict[str, Any],
    index: int,
    shared: dict[str, Any],
    threshold: Any,
    taken: set[str],
    c: Collector,
) -> dict[str, Any]:
    case_id = unique(identifier(entry.get("id", ""), f"case-{index + 1}"), taken)
    if str(entry.get("id")) != case_id:
        c.notes.append(f"test case {entry.get('id')!r} is {case_id!r} (evalsite's ids)")
    case: dict[str, Any] = {"id": case_id}
    variables = {**shared, **(entry.get("variables") or {})}
    if variables:
        case["vars"] = variables
    mode = entry.get("evaluation", "exact_match")
    if mode == "exact_match":
        case["checks"] = [{"exact_match": str(entry.get("expected_output", ""))}]
    elif mode == "llm_judge":
        grade: dict[str, Any] = {"criteria": str(entry.get("criteria", "")).strip()}
        if entry.get("reference") is not None:
            grade["reference"] = str(entry["reference"])
        grade["threshold"] = threshold
        case["grade"] = grade
    elif mode == "weighted_match":
        case["expected"] = entry.get("expected_output")
    else:
        c.skip(("test_cases", index, "evaluation"), f"evaluation {mode!r}", "unknown mode")
    if entry.get("tags"):
        case["tags"] = [str(tag) for tag in entry["tags"]]
    return case


def _weighted_spec(evaluation: dict[str, Any], c: Collector) -> dict[str, Any]:
    """evaluation.variables (use_case / percent / order with weights and tolerances) and
    evaluation.quality_threshold as the task's weighted_match block."""
    fields: dict[str, Any] = {}
    raw = evaluation.get("variables")
    items = raw.items() if isinstance(raw, dict) else []
    if isinstance(raw, list):
        items = [(item.get("name"), item) for item in raw if isinstance(item, dict)]
    for name, options in items:
        if not isinstance(options, dict):
            continue
        field = {"weight": options.get("weight", 0)}
        if options.get("tolerance") is not None and name != "use_case":
            field["tolerance"] = options["tolerance"]
        fields[str(name)] = field
    threshold = evaluation.get("quality_threshold", 0)
    return {"label": "use_case", "threshold": threshold, "fields": fields}
