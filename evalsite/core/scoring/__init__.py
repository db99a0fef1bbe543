"""Scoring one answer (SPEC §7): schema verdict, deterministic checks, sandboxed execution
checks, weighted match, single-answer grades, and the pure aggregates over answers.
docs/checks.md is the user-facing description of all of it."""

from evalsite.core.scoring.aggregate import (
    TAG_FLOOR,
    ContestantRates,
    RepeatStats,
    TagRate,
    answer_passed,
    answer_tags,
    contestant_rates,
    repeat_stats,
    tag_rates,
)
from evalsite.core.scoring.checks import PYTHON_NOT_ALLOWED, CheckResult, ChecksResult, run_checks
from evalsite.core.scoring.execution import BlockResult, ExecResult, run_execution_check, run_many
from evalsite.core.scoring.fences import FencedBlock, checked_text, fenced_blocks
from evalsite.core.scoring.grading import GradeResult, GradeUnusable, grade_messages, parse_grade
from evalsite.core.scoring.json_answer import SchemaVerdict, find_json, schema_verdict
from evalsite.core.scoring.matching import MatchResult, weighted_match
from evalsite.core.scoring.sandbox import (
    OPT_OUT_SETTING,
    BwrapSandbox,
    NoSandbox,
    Sandbox,
    SandboxUnavailable,
    detect_sandbox,
)

__all__ = [
    "BlockResult", "BwrapSandbox", "CheckResult", "ChecksResult", "ContestantRates",
    "ExecResult", "FencedBlock", "GradeResult", "GradeUnusable", "MatchResult", "NoSandbox",
    "OPT_OUT_SETTING", "PYTHON_NOT_ALLOWED", "RepeatStats", "Sandbox", "SandboxUnavailable",
    "SchemaVerdict", "TAG_FLOOR", "TagRate", "answer_passed", "answer_tags", "checked_text",
    "contestant_rates", "detect_sandbox", "fenced_blocks", "find_json", "grade_messages",
    "parse_grade", "repeat_stats", "run_checks", "run_execution_check", "run_many",
    "schema_verdict", "tag_rates", "weighted_match",
]  # fmt: skip
