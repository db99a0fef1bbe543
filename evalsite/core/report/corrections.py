"""The judge's win-rate corrected by the labels, read against answer length, and the
judge's self-consistency (§9).

Per candidate, from the rows the report is built from: ``corrected`` (prediction-powered
inference over the sample queue's labels, :mod:`evalsite.core.stats.ppi`), ``length``
(the judge's length preference, the length-controlled win-rate and the judge's length bias
against the humans, :mod:`evalsite.core.stats.length`) and, with ``judge.consistency``,
``consistency`` (:mod:`evalsite.core.stats.consistency`). Targeted-review labels never reach
here: :func:`~evalsite.core.calibration.match_labels` keeps them out of the items.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from evalsite.core.calibration import Item
from evalsite.core.stats.bootstrap import seed_from
from evalsite.core.stats.consistency import self_consistency
from evalsite.core.stats.length import length_bias, length_preference
from evalsite.core.stats.more_labels import labels_for_corrected, labels_to_decide
from evalsite.core.stats.ppi import Stratum, corrected_win_rate

__all__ = [
    "LENGTH_UNIT", "corrected_figure", "corrected_figures", "judge_figures", "judged_pairs",
    "length_warnings",
]  # fmt: skip

LENGTH_UNIT = "output tokens"
_HUMAN_SCORE = {"candidate": 1.0, "tie": 0.5, "baseline": 0.0}


def judge_figures(data: Any, *, eligible: bool) -> dict[str, dict[str, Any]]:
    """Per candidate ``{"corrected": …, "length": …}`` for ``win_rates.<candidate>``;
    ``data`` is the report's :class:`~evalsite.core.report.build.ReportInput`."""
    baseline = data.contestants[0]
    lengths = {
        (a.task, a.case, a.contestant, a.repeat): a.output_tokens
        for a in data.answers
        if a.output_tokens is not None
    }
    figures = {}
    for candidate in data.contestants[1:]:
        pairs = judged_pairs(data.pairs, baseline, candidate)
        if not pairs:  # the win-rate line says "no judged pairs"; nothing to correct
            continue
        items = _labelled_items(data.calibration.judged, pairs)
        corrected = corrected_figure(pairs, data.calibration.judged)
        corrected["headline"] = eligible and corrected["win_rate"] is not None
        figures[candidate] = {
            "corrected": corrected,
            "length": _length(pairs, items, lengths),
        }
        if data.judge_consistency:
            rows = [(key, first, again) for c, key, first, again in data.rechecks if c == candidate]
            figures[candidate]["consistency"] = self_consistency(
                rows,
                data.judge_consistency,
                cases={key: (pair.task, pair.case) for key, pair in pairs.items()},
                seed=seed_from(data.suite_hash),
            ).to_dict()
    return figures


def judged_pairs(pairs: Iterable[Any], baseline: str, candidate: str) -> dict[int, Any]:
    """The pairs of ``candidate`` against ``baseline`` the judge scored (none excluded), by
    key: what each candidate's corrected and length figures are over."""
    return {
        p.key: p
        for p in pairs
        if p.candidate == candidate
        and p.baseline == baseline
        and not p.excluded_reason
        and p.score is not None
    }


def corrected_figures(
    contestants: Sequence[str], pairs: Sequence[Any], judged: Sequence[Item]
) -> dict[str, dict[str, Any]]:
    """Each candidate's :func:`corrected_figure` against the baseline (the first of
    ``contestants``), for a candidate with judged pairs: the calibration page's and MCP's,
    the same the report has under ``win_rates.<candidate>.corrected``."""
    figures = {}
    for candidate in contestants[1:]:
        if found := judged_pairs(pairs, contestants[0], candidate):
            figures[candidate] = corrected_figure(found, judged)
    return figures


def corrected_figure(pairs: Mapping[int, Any], judged: Sequence[Item]) -> dict[str, Any]:
    """One candidate's label-corrected win-rate over its judged ``pairs`` (key → a pair
    with ``task``, ``case`` and ``score``), from the calibration's ``judged`` items, with
    ``more``: the labels that would bring its interval to ±0.05, and those that would make
    it leave 0.5 (0: it already does, and ``better`` names the side)."""
    corrected = corrected_win_rate(_strata(pairs, _labelled_items(judged, pairs)))
    figure = corrected.to_dict()
    better = None
    if corrected.win_rate is not None and corrected.win_rate != 0.5:
        better = "candidate" if corrected.win_rate > 0.5 else "baseline"
    figure["more"] = {
        "half_width": labels_for_corrected(corrected).to_dict(),
        "decide": labels_to_decide(corrected).to_dict(),
        "better": better,
    }
    return figure


def _labelled_items(judged: Sequence[Item], pairs: Mapping[int, Any]) -> list[tuple[Item, str]]:
    """The items of these pairs with a human consensus, each pair in one item only: the
    most specific (a label on its own answers before a suite-file label on every repeat)."""
    taken: set[int] = set()
    items = []
    for item in sorted(judged, key=lambda item: len(item.pairs)):
        human = item.human
        if human is None or not all(key in pairs for key in item.pairs) or taken & set(item.pairs):
            continue
        taken.update(item.pairs)
        items.append((item, human))
    return items


def _mean_score(item: Item, pairs: Mapping[int, Any]) -> float:
    return math.fsum(pairs[key].score for key in item.pairs) / len(item.pairs)


def _strata(pairs: Mapping[int, Any], items: list[tuple[Item, str]]) -> dict[str, Stratum]:
    labelled = {key for item, _ in items for key in item.pairs}
    human: dict[str, list[float]] = defaultdict(list)
    judge: dict[str, list[float]] = defaultdict(list)
    label_cases: dict[str, list[str]] = defaultdict(list)
    chances: dict[str, list[float | None]] = defaultdict(list)
    for item, consensus in items:
        human[item.task].append(_HUMAN_SCORE[consensus])
        judge[item.task].append(_mean_score(item, pairs))
        label_cases[item.task].append(pairs[item.pairs[0]].case)
        chances[item.task].append(item.probability)
    rest: dict[str, list[float]] = defaultdict(list)
    cases: dict[str, list[str]] = defaultdict(list)
    counts: dict[str, int] = defaultdict(int)
    for key, pair in pairs.items():
        counts[pair.task] += 1
        if key not in labelled:
            rest[pair.task].append(pair.score)
            cases[pair.task].append(pair.case)  # its repeats are one cluster
    return {
        task: Stratum(
            human[task],
            judge[task],
            rest[task],
            counts[task],
            cases[task],
            label_cases[task],
            chances[task],  # all None: the classical estimator (corrected_win_rate decides)
        )
        for task in sorted(counts)
    }


def _length(
    pairs: Mapping[int, Any], items: list[tuple[Item, str]], lengths: Mapping[tuple[Any, ...], int]
) -> dict[str, Any]:
    difference = {}
    for key, p in pairs.items():
        mine = lengths.get((p.task, p.case, p.candidate, p.repeat))
        theirs = lengths.get((p.task, p.case, p.baseline, p.repeat))
        if mine is not None and theirs is not None:
            difference[key] = mine - theirs
    preference = length_preference(
        [pairs[key].score for key in difference],
        list(difference.values()),
        [_case(pairs[key]) for key in difference],  # a case's repeats are one cluster
    )
    if pairs and not difference:  # not too few pairs: no lengths at all
        preference = replace(preference, suppressed=f"no answer lengths ({LENGTH_UNIT}) reported")
    measured = [(item, human) for item, human in items if all(k in difference for k in item.pairs)]
    bias = None
    if preference.scale is not None:
        bias = length_bias(
            [_HUMAN_SCORE[human] for _, human in measured],
            [_mean_score(item, pairs) for item, _ in measured],
            [_mean_difference(item, difference) for item, _ in measured],
            preference.scale,
            [_case(pairs[item.pairs[0]]) for item, _ in measured],
        ).to_dict()
    return {"unit": LENGTH_UNIT, "preference": preference.to_dict(), "bias": bias}


def _case(pair: Any) -> tuple[str, str]:
    return (pair.task, pair.case)


def _mean_difference(item: Item, difference: Mapping[int, int]) -> float:
    return math.fsum(difference[key] for key in item.pairs) / len(item.pairs)


def length_warnings(win_rates: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per candidate whose judge prefers longer answers more than the humans do,
    past the margin."""
    lines = []
    for candidate, rate in win_rates.items():
        bias = ((rate.get("length") or {}).get("bias")) or {}
        if bias.get("warning"):
            low, high = bias["bias_ci"]
            lines.append(
                f"{candidate}: the judge prefers longer answers more than your labellers do "
                f"(length bias {bias['bias']:.2f} [{low:.2f}, {high:.2f}] log-odds per typical "
                f"length difference, margin {bias['margin']:.2f}); read the length-controlled "
                "win-rate beside the raw one"
            )
    return lines
