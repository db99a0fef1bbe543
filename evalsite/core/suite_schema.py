"""The JSON Schema (Draft 2020-12) of a suite file, and its errors as readable Problems.

Every object level has ``additionalProperties: false``. A schema fragment may carry
``x-message``, the message to show when that fragment's rule fails (JSON Schema ignores
unknown keywords, so the schema stays valid). ``$defs`` entries double as the schemas of
referenced files: ``cases`` (a cases file), ``labels_file``, ``task_schema``.

:mod:`evalsite.core.schema_errors` validates against it and words the errors; the schema
checks shape only, cross-references (labels naming tasks, variants, templates) are checked
in :mod:`evalsite.core.suite_rules`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalsite.core.media import PART_TYPES
from evalsite.core.templating import NAME

IDENTIFIER = r"^[a-z0-9][a-z0-9-]{0,63}$"
MODEL = r"^[a-z0-9][a-z0-9_-]*/[A-Za-z0-9][A-Za-z0-9._/:-]*$"
CONTESTANT = MODEL[:-1] + r"(@[a-z0-9][a-z0-9-]{0,63})?$"
PYTHON_REF = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$"
TEXT_CHECKS = ("equals", "contains", "not_contains", "one_of", "regex")
SCORERS = ("schema", "checks", "exec", "grade", "weighted_match", "json_valid")  # scorecard
CHECK_KINDS = (
    *TEXT_CHECKS, "max_chars", "min_chars", "exact_match", "json_path", "json_valid", "python",
)  # fmt: skip

_IDENTIFIER_MESSAGE = "must be an identifier: lowercase letters, digits and '-', at most 64"
_STRICT = {"additionalProperties": False}


def _object(
    properties: dict[str, Any], *required: str, rules: Sequence[Any] = (), **extra: Any
) -> dict[str, Any]:
    """A closed object schema; ``rules`` apply only once the value is an object, so a
    wrong type is one error, not one per rule."""
    schema = {"type": "object", "properties": properties, "required": list(required), **_STRICT}
    if rules:
        schema |= {"if": {"type": "object"}, "then": {"allOf": list(rules)}}
    return schema | extra


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/$defs/{name}"}


def _number(minimum: float | None = None, maximum: float | None = None) -> dict[str, Any]:
    bounds = {"minimum": minimum, "maximum": maximum}
    return {"type": "number", **{k: v for k, v in bounds.items() if v is not None}}


GUIDELINES_CHARS = 20_000
_GUIDELINES = {
    "type": "string",
    "minLength": 1,
    "maxLength": GUIDELINES_CHARS,
    "x-message": f"must be text of 1 to {GUIDELINES_CHARS:,} characters",
}


def _exactly_one(*keys: str, message: str) -> dict[str, Any]:
    return {"oneOf": [{"required": [key]} for key in keys], "x-message": message}


def _not_both(first: str, second: str) -> dict[str, Any]:
    message = f"give '{first}' or '{second}', not both"
    return {"not": {"required": [first, second]}, "x-message": message}


MAX_TOKENS = 1_000_000  # the most output tokens a call may ask for (no model answers more)
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")  # reasoning_effort's levels
_MAX_TOKENS = {
    "type": "integer",
    "minimum": 1,
    "maximum": MAX_TOKENS,
    "x-message": f"must be a whole number of tokens from 1 to {MAX_TOKENS:,}",
}
_PARAMS = {
    "temperature": _number(0, 2),
    "max_tokens": _MAX_TOKENS,
    "top_p": _number(0, 1),
    "stop": _ref("stop"),
    "reasoning_effort": {
        "enum": list(EFFORTS),
        "x-message": f"must be one of: {', '.join(EFFORTS)} (as each model takes)",
    },
    "thinking": _object(
        {
            "budget_tokens": _MAX_TOKENS
            | {
                "minimum": 0,
                "x-message": f"must be a whole number of tokens from 0 to {MAX_TOKENS:,}",
            }
        },
        "budget_tokens",
    ),
}
_TIMEOUT = {"type": "number", "exclusiveMinimum": 0, "maximum": 3600}
_RATE = _number(0, 1)
_SIGNIFICANCE_NEEDS_POINTS = {
    "dependentRequired": {"significance": ["max_regression_points"]},
    "x-message": "significance qualifies max_regression_points; set that too",
}

DEFS: dict[str, Any] = {
    "identifier": {"type": "string", "pattern": IDENTIFIER, "x-message": _IDENTIFIER_MESSAGE},
    "model": {
        "type": "string",
        "pattern": MODEL,
        "x-message": "must be a model string 'provider/model', e.g. 'openai/gpt-4o-mini'",
    },
    "contestant": {
        "type": "string",
        "pattern": CONTESTANT,
        "x-message": "must be a contestant: a model string with an optional '@variant'",
    },
    "text": {"type": "string", "minLength": 1},
    "path": {"type": "string", "minLength": 1},
    "stop": {"type": ["string", "array"], "items": {"type": "string", "minLength": 1}},
    "tags": {"type": "array", "items": {"type": "string", "minLength": 1}},
    "message": _object(
        {
            "role": {"enum": ["system", "user", "assistant"]},
            "content": {
                "type": ["string", "array"],
                "minItems": 1,
                "items": _ref("part"),
                "x-message": "content is a text, or a list of parts (text, image, file, audio, "
                "video)",
            },
        },
        "role",
        "content",
    ),
    "part": _object(
        {kind: {"type": "string", "minLength": 1} for kind in PART_TYPES},
        rules=[
            _exactly_one(
                *PART_TYPES,
                message=f"a content part needs exactly one of: {', '.join(PART_TYPES)}",
            )
        ],
    ),
    "files": {
        "type": "object",
        "propertyNames": {
            "pattern": f"^{NAME}$",
            "x-message": "file names are letters, digits, _ and -",
        },
        "additionalProperties": _ref("path"),
    },
    "prompt": {
        "type": ["string", "array"],
        "minLength": 1,
        "minItems": 1,
        "items": _ref("message"),
    },
    "vars": {
        "type": "object",
        "propertyNames": {
            "pattern": f"^{NAME}$",
            "x-message": "var names are letters, digits, _ and -",
        },
        "additionalProperties": {"type": ["string", "number", "boolean", "null"]},
    },
    "check": _object(
        {
            **{
                kind: {"type": "string"} for kind in ("equals", "contains", "not_contains", "regex")
            },
            "one_of": {"type": "array", "minItems": 1, "items": {"type": "string"}},
            "max_chars": {"type": "integer", "minimum": 0},
            "min_chars": {"type": "integer", "minimum": 0},
            "exact_match": {"type": "string"},
            "json_valid": {
                "const": True,
                "x-message": "json_valid takes true (the answer must parse as JSON)",
            },
            "json_path": _object(
                {
                    "path": {"type": "string"},
                    "equals": {"type": ["string", "number", "boolean", "null"]},
                    "compare": {
                        "enum": ["value", "json_spelling"],
                        "x-message": "compare is 'value' (the default) or 'json_spelling'",
                    },
                },
                "path",
                "equals",
            ),
            "python": {
                "type": "string",
                "pattern": PYTHON_REF,
                "x-message": "must be 'module:function', e.g. 'scoring.triage:check'",
            },
            "case_sensitive": {"type": "boolean"},
            "read": {"const": "evalpin", "x-message": "read takes 'evalpin' (docs/checks.md)"},
        },
        rules=[
            _exactly_one(
                *CHECK_KINDS, message=f"a check needs exactly one of: {', '.join(CHECK_KINDS)}"
            )
        ],
        dependentSchemas={
            "case_sensitive": {
                "anyOf": [{"required": [kind]} for kind in TEXT_CHECKS],
                "x-message": f"case_sensitive applies only to {', '.join(TEXT_CHECKS)}",
            }
        },
    ),
    "checks": {"type": "array", "items": _ref("check")},
    "exec_check": _object(
        {"setup": {"type": "string"}, "run": _ref("text"), "timeout_s": _TIMEOUT}
    ),
    "case": _object(
        {
            "id": _ref("identifier"),
            "vars": _ref("vars"),
            "files": _ref("files"),
            "tags": _ref("tags"),
            "checks": _ref("checks"),
            "check": _ref("exec_check"),
            "expected": {"type": "array", "minItems": 1, "items": {"type": "object"}},
            "grade": _object(
                {"criteria": _ref("text"), "reference": {"type": "string"}, "threshold": _RATE},
                "criteria",
            ),
        },
        "id",
    ),
    "cases": {"type": "array", "items": _ref("case"), "minItems": 1},
    "label": _object(
        {
            "task": _ref("identifier"),
            "case": _ref("identifier"),
            "baseline": _ref("contestant"),
            "candidate": _ref("contestant"),
            "prefer": {"enum": ["baseline", "candidate", "tie"]},
            "note": {"type": "string"},
            "labeller": _ref("text"),
            # the chance the sample queue asked for the pair (labels exported from a site)
            "probability": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 1,
                "x-message": "must be a number above 0 and at most 1",
            },
        },
        "task",
        "case",
        "baseline",
        "candidate",
        "prefer",
    ),
    "labels": {"type": "array", "items": _ref("label")},
    "labels_file": {
        "type": ["array", "object"],
        "items": _ref("label"),
        "properties": {"labels": _ref("labels")},
        "required": ["labels"],
        **_STRICT,
    },
    "task_schema": {"type": ["object", "boolean"]},
    # A datasource: the cases come at run time from a callable or a command (core.datasource).
    "cases_from": _object(
        {
            "python": {
                "type": "string",
                "pattern": PYTHON_REF,
                "x-message": "must be 'module:function', e.g. 'sources.tickets:cases'",
            },
            "command": {"type": "array", "minItems": 1, "items": _ref("text")},
        },
        rules=[_exactly_one("python", "command", message="give 'python' or 'command'")],
    ),
    "task": _object(
        {
            "id": _ref("identifier"),
            "kind": _ref("text"),
            "prompt": _ref("prompt"),
            "system": {"type": "string"},
            "schema": _ref("task_schema"),
            "schema_path": _ref("path"),
            "rubric": {"type": "string"},
            "judge": {"type": "boolean"},
            "tags": _ref("tags"),
            "checks": _ref("checks"),
            "check": _ref("exec_check"),
            "grade": _object({"rubric": _ref("text"), "threshold": _RATE}),
            "weighted_match": _object(
                {
                    "label": _ref("text"),
                    "threshold": _RATE,
                    "fields": {
                        "type": "object",
                        "minProperties": 1,
                        "additionalProperties": _object(
                            {"weight": _number(0), "tolerance": _number(0)}, "weight"
                        ),
                    },
                },
                "label",
                "threshold",
                "fields",
            ),
            "variants": {
                "type": "object",
                "propertyNames": _ref("identifier"),
                "additionalProperties": _object(
                    {"prompt": _ref("prompt"), "system": {"type": "string"}}
                ),
            },
            **_PARAMS,
            "timeout_s": _TIMEOUT,
            "cases": _ref("cases"),
            "cases_path": _ref("path"),
            "cases_from": _ref("cases_from"),
        },
        "id",
        "prompt",
        rules=[
            _exactly_one(
                "cases",
                "cases_path",
                "cases_from",
                message="a task needs exactly one of 'cases', 'cases_path' and 'cases_from'",
            ),
            _not_both("schema", "schema_path"),
        ],
    ),
}

_CRITERION = _object(
    {
        "criterion": {
            "type": "string",
            "pattern": r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$",
            "x-message": "a criterion name is letters, digits, '_' and '-', at most 64",
        },
        "weight": {
            "type": "number",
            "exclusiveMinimum": 0,
            "x-message": "a criterion's weight must be a number above 0",
        },
        "scorer": {
            "enum": list(SCORERS),
            "x-message": f"the scorer must be one of: {', '.join(SCORERS)}",
        },
    },
    "criterion",
    "weight",
    "scorer",
)
_RATE_OR_PER_CONTESTANT = {
    "type": ["number", "object"],
    "minimum": 0,
    "maximum": 1,
    "propertyNames": _ref("contestant"),
    "additionalProperties": _RATE,
}

SUITE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$defs": DEFS,
    **_object(
        {
            "suite": _ref("identifier"),
            "version": {"const": 1, "x-message": "must be 1 (the only suite format version)"},
            "description": {"type": "string"},
            "templating": {
                "enum": ["default", "jinja2"],
                "x-message": "must be 'default' ({{name}} only) or 'jinja2'",
            },
            "defaults": _object({**_PARAMS, "timeout_s": _TIMEOUT, "system": {"type": "string"}}),
            "limits": _object(
                {
                    "max_cost_usd": {"type": "number"}
                }  # its bounds: money.parse_cap, every cap's rule
            ),
            "models": {"type": "array", "items": _ref("contestant")},
            "repeats": {"type": "integer", "minimum": 1, "maximum": 20},
            "judge": _object(
                {
                    "model": _ref("model"),
                    "rubric": {"type": "string"},
                    "max_tokens": _MAX_TOKENS,
                    "temperature": _number(0, 2),
                    "pairing": {"enum": ["baseline", "all"]},
                    "consistency": {"type": "integer", "minimum": 1, "maximum": 5},
                    "calibration": _object(
                        {
                            "min_kappa": _number(-1, 1),
                            "min_kappa_lower_bound": _number(0, 1),
                            "min_labels": {"type": "integer", "minimum": 0},
                            "on_below_floor": {"enum": ["flag", "fail"]},
                        }
                    ),
                },
                "model",
            ),
            "gate": _object(
                {
                    "min_win_rate_lower_bound": {
                        "type": ["number", "object"],
                        "minimum": 0,
                        "maximum": 1,
                        "propertyNames": _ref("contestant"),
                        "additionalProperties": _RATE,
                    },
                    "max_flip_rate": _RATE,
                    "min_schema_pass_rate": _RATE,
                    "min_check_pass_rate": _RATE,
                    "min_pass_all_rate": _RATE,
                    "require_headline_eligible": {"type": "boolean"},
                    "max_regression_points": _number(0),
                    # with it, a regression must also be significant (docs/ci.md)
                    "significance": {"type": "number", "exclusiveMinimum": 0, "maximum": 0.5},
                    "min_score": _RATE_OR_PER_CONTESTANT,
                    "min_pass_rate": _RATE_OR_PER_CONTESTANT,
                    # the highest matrix score of the run must reach it (evalblink's gate)
                    "min_best_score": _RATE,
                },
                rules=[_SIGNIFICANCE_NEEDS_POINTS],
            ),
            "report": _object({"mover_threshold": _RATE, "frontier_points": _number(0, 100)}),
            "variants": {
                "type": "object",
                "propertyNames": _ref("identifier"),
                "additionalProperties": _object(
                    {
                        "system": {"type": "string"},
                        "prompt": _ref("prompt"),
                        "params": _object(_PARAMS),
                    }
                ),
            },
            "privacy": _object({"no_look": {"type": "boolean"}}),
            # what a member labelling the suite's pairs reads beside them (docs/labelling.md)
            "labelling": _object({"guidelines": _GUIDELINES}),
            "replies": _ref("path"),
            "labels": _ref("labels"),
            "labels_path": _ref("path"),
            "tasks": {"type": "array", "items": _ref("task"), "minItems": 1},
            "scorecard": {"type": "array", "items": _CRITERION, "minItems": 1},
        },
        "suite",
        "version",
        "tasks",
        rules=[_not_both("labels", "labels_path")],
    ),
}
