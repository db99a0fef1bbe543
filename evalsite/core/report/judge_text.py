"""The label-corrected and length-aware win-rates in words, for the terminal, report.md and
report.html, and the run page (docs/judging.md). One text per figure, used by all of them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalsite.core.report import numbers as num
from evalsite.core.report.document import Block, Code, Items
from evalsite.core.report.text import visible

__all__ = [
    "consistency_text", "corrected_text", "judge_figure_blocks", "judge_figure_lines",
    "kappa_more_text", "length_text", "more_labels_text",
]  # fmt: skip


def corrected_text(row: Mapping[str, Any], eligible: bool) -> str:
    """``corrected win-rate 0.512 [0.431, 0.593] (n labelled 18 / N judged 194; judge bias
    -0.071)``, UNCALIBRATED as the raw win-rate is when the gate is not ok; or why none."""
    corrected = row.get("corrected")
    if not corrected:
        return ""
    counts = f"n labelled {corrected['n_labelled']} / N judged {corrected['n_judged']}"
    if corrected.get("win_rate") is None:
        return f"corrected win-rate: suppressed - {corrected.get('suppressed')} ({counts})"
    flag = "" if eligible else " (UNCALIBRATED)"
    text = (
        f"corrected win-rate {num.rate(corrected['win_rate'])}{flag} "
        f"{num.interval_or_reason(corrected)} ({counts}; judge bias "
        f"{-corrected['rectifier']:+.3f})"
    )
    more = more_labels_text(corrected)
    return f"{text}; {more}" if more else text


def more_labels_text(corrected: Mapping[str, Any]) -> str:
    """When to stop labelling: ``enough to decide: the candidate is better`` once the
    corrected interval leaves 0.5, else the labels for ±0.05 (``about 140 more labels for
    ±0.05``) or why labels cannot get there; "" for a figure without them."""
    more = corrected.get("more") or {}
    decide, narrow = more.get("decide") or {}, more.get("half_width") or {}
    if decide.get("more") == 0 and more.get("better"):
        return f"enough to decide: the {more['better']} is better"
    if narrow.get("more") == 0:
        return "interval within ±0.05"
    if narrow.get("more") is not None:
        return f"about {num.count(narrow['more'])} more labels for ±0.05"
    if narrow.get("why") and corrected.get("win_rate") is not None:
        return f"±0.05 out of reach: {narrow['why']}"
    return ""


def kappa_more_text(calibration: Mapping[str, Any]) -> str:
    """``about 42 more labels for ±0.1`` (kappa's interval over cases, at the current
    agreement), ``interval within ±0.1``, or "" without a kappa to project from."""
    needed = calibration.get("labels_for_half_width")
    if needed is None or calibration.get("kappa") is None:
        return ""
    half = f"\u00b1{calibration.get('half_width', 0.1):g}"
    wanted = needed - calibration.get("n", 0)
    if wanted <= 0:
        return f"interval within {half}"
    return f"about {num.count(wanted)} more labels for {half}"


def length_text(row: Mapping[str, Any]) -> str:
    """The length-controlled win-rate, the judge's length slope and its bias against the
    humans, with intervals; or why each is missing."""
    length = row.get("length")
    if not length:
        return ""
    preference = length.get("preference") or {}
    if preference.get("suppressed"):
        return f"length-controlled win-rate: none - {preference['suppressed']}"
    text = (
        f"length-controlled win-rate {num.rate(preference['controlled'])} "
        f"{num.interval(preference.get('controlled_ci'))}; judge length slope "
        f"{preference['slope']:+.2f} {num.signed_interval(preference.get('slope_ci'), 2)} "
        f"log-odds per typical difference ({preference['scale']:.0f} {length.get('unit')}); "
        f"n={num.cases(preference)}"
    )
    bias = length.get("bias") or {}
    if bias.get("suppressed"):
        return f"{text}; against humans: none - {bias['suppressed']}"
    if bias:
        warning = " - WARNING: past the margin" if bias.get("warning") else ""
        ci = num.signed_interval(bias.get("bias_ci"), 2)
        text += f"; judge minus humans {bias['bias']:+.2f} {ci}{warning}"
    return text


def consistency_text(row: Mapping[str, Any]) -> str:
    """``judge self-consistency 0.920 (46/50 extra verdicts agree; 25 pairs asked again
    2x in each order) beside flip rate 0.100``, or nothing without ``judge.consistency``."""
    consistency = row.get("consistency")
    if not consistency:
        return ""
    flips = f"beside flip rate {num.rate(row.get('flip_rate'))}"
    if not consistency.get("verdicts"):
        return f"judge self-consistency: no extra verdict was read {flips}"
    return (
        f"judge self-consistency {num.rate(consistency['agreement'])} "
        f"{num.interval_or_reason(consistency)} "
        f"({consistency['agree']}/{consistency['verdicts']} extra verdicts agree; "
        f"{consistency['pairs']} pairs asked again {consistency['k']}x in each order) {flips}"
    )


def _texts(report: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    eligible = bool(report.get("headline_eligible"))
    rows = report.get("win_rates") or {}
    out = []
    for name, row in rows.items():
        row = row or {}
        texts = [corrected_text(row, eligible), length_text(row), consistency_text(row)]
        if any(texts):
            out.append((name, [text for text in texts if text]))
    return out


def judge_figure_lines(report: Mapping[str, Any]) -> list[str]:
    """Terminal lines, one per figure of each candidate."""
    return [
        f"  {visible(name)}: {visible(text)}" for name, texts in _texts(report) for text in texts
    ]


def judge_figure_blocks(report: Mapping[str, Any]) -> list[Block]:
    """report.md / report.html: the same figures as a list under the win-rate table."""
    items = tuple((Code(name), ": " + text) for name, texts in _texts(report) for text in texts)
    return [Items(items)] if items else []
