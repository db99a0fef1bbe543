"""Matching human labels to a run's pairs (SPEC §10.1, §19), before any statistic is computed.

Two kinds of label reach a run:

- **Content labels** (from the browser or an import) are bound to the exact answer texts:
  task, case, the two contestants and the sha256 of each answer. One applies to every pair
  of the run with that content key, in either orientation (a label given with the sides the
  other way round has its preference mirrored). One with the same task, case and contestants
  but other answer texts is **stale**.
- **Suite-file labels** are bound to task, case and the two models only, and apply to
  whatever answers the run produced, every repeat of the case. One naming a case the run
  did not answer is **not in the run**; one naming a model pair the run does not have is
  **ignored**.

**One judgement counts once.** A label covers a set of pairs (a suite-file label: every
repeat of its case; a content label: every pair with its answers, one repeat or several).
Every label about one case and one pair of contestants, whichever repeats it covers and
wherever it comes from (the suite file, the browser, an import), is a judgement of one
*item*, the case; each labeller counts once per item (their latest label), and the item's
human preference is the strict majority of its labellers (more than half); with no
majority it is left out and counted. The item is compared once with the judge: the judge's
mean pair score over the judged pairs its labels cover, read as a category by the rule of
SPEC §8 (above ½ candidate, below ½ baseline, ½ tie). So repeats never multiply a label,
and calibration's n counts judgements about cases, never pairs: the same labels give the
same n at 1 repeat or 3.

Targeted-review labels are kept out of the consensus that the headline kappa uses.

From the matched labels, :func:`calibration_summary` builds the calibration section (the gate,
kappa with its intervals, per task, per labeller, the human-human ceiling and the curve): the
report, the labelling page's live panel and the calibration page all read this one builder.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from evalsite.core.stats.agreement import (
    fleiss_kappa,
    krippendorff_alpha,
    pairwise_cohen,
    strict_majority,
)
from evalsite.core.stats.gate import HALF_WIDTH, headline_gate, labels_for_half_width, labels_needed
from evalsite.core.stats.kappa import bootstrap_kappa_ci, case_interval, cohen_kappa, effective_size
from evalsite.core.stats.pairs import score_category
from evalsite.core.stats.task_kappa import per_task_kappa

__all__ = [
    "REPEATS_RULE", "SUITE_FILE", "UNNAMED", "Calibration", "Item", "LabelView", "PairIndex",
    "PairView", "calibration_summary", "match_labels",
]  # fmt: skip

_MIRROR = {"baseline": "candidate", "candidate": "baseline", "tie": "tie"}
SUITE_FILE = "suite_file"
UNNAMED = "suite file"  # the labeller of a suite-file label that names none
CURVE_POINTS = 20
KAPPA_BOOTSTRAP_RESAMPLES = 2000
REPEATS_RULE = (
    "the labels about a case are one judgement per labeller, whichever repeats they cover, "
    "compared once with the judge's mean score over the repeats they cover (above 0.5 "
    "candidate, below 0.5 baseline, 0.5 tie)"
)


@dataclass(frozen=True)
class PairView:
    key: int  # the pair's id
    task: str
    case: str
    repeat: int
    baseline: str  # contestant on the baseline side
    candidate: str
    baseline_sha: str
    candidate_sha: str
    judge: str | None  # the judge's category, None when the pair was excluded
    score: float | None = None  # the judge's combined score (SPEC §8)


@dataclass(frozen=True)
class LabelView:
    source: str  # "browser", "import" or "suite_file"
    labeller: str
    task: str
    case: str
    baseline: str
    candidate: str
    prefer: str  # baseline / candidate / tie
    baseline_sha: str = ""
    candidate_sha: str = ""
    mode: str = "sample"
    at: str = ""  # ISO time: labels are matched, and the kappa curve drawn, in this order
    probability: float | None = None  # the sample queue's chance of asking (None: counts as 1)

    @property
    def content_key(self) -> tuple[str, ...]:
        """The pair content key a content label is bound to, in the order of the database's
        (runs.models.label.CONTENT_FIELDS)."""
        return (
            self.task, self.case, self.baseline, self.candidate, self.baseline_sha,
            self.candidate_sha,
        )  # fmt: skip


@dataclass
class Item:
    """One thing the humans judged, a case (for one pair of contestants): the judged pairs
    its labels cover, their votes (labeller → preference in the pairs' orientation) and the
    judge's combined category over those pairs."""

    pair: int  # the first of its judged pairs: where the pages link to
    pairs: tuple[int, ...]  # every judged pair it covers (its repeats)
    task: str
    judge: str
    votes: dict[str, str] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # labeller → label source
    case: str = ""  # its case: the unit kappa's interval resamples (repeats share a prompt)
    chances: list[float | None] = field(default_factory=list)  # each label's probability

    @property
    def human(self) -> str | None:
        return strict_majority(self.votes.values())

    @property
    def probability(self) -> float | None:
        """The chance the sample queue gave it of being asked, for the corrected win-rate's
        weights: None when no label recorded one; else the largest, a label without one
        counting as 1 (given outside the weighted queue, it was asked for certain)."""
        if all(chance is None for chance in self.chances):
            return None
        return max(1.0 if chance is None else chance for chance in self.chances)


@dataclass
class Calibration:
    """The matched labels of one run: its judged items in the order their first label was
    given, and what was set aside."""

    judged: list[Item] = field(default_factory=list)
    stale: int = 0
    ignored: int = 0  # model pair not in the run
    not_in_run: int = 0  # case not answered by the run
    on_excluded: int = 0
    targeted: int = 0

    @property
    def items(self) -> list[tuple[int, str, str, str]]:
        """(pair, task, human consensus, judge category) of each item with a consensus."""
        return [
            (item.pair, item.task, human, item.judge)
            for item in self.judged
            if (human := item.human) is not None
        ]

    @property
    def item_cases(self) -> list[str]:
        """The task and case of each of :attr:`items`, in its order: labels of one case's
        repeats are one cluster for kappa's interval."""
        return [f"{item.task}\x00{item.case}" for item in self.judged if item.human is not None]

    @property
    def item_weights(self) -> list[float] | None:
        """The weight 1/π of each of :attr:`items`, in its order, π its
        :attr:`Item.probability` (none recorded: 1); None when no item has a probability,
        so kappa is read unweighted, as before active sampling."""
        chances = [item.probability for item in self.judged if item.human is not None]
        if all(chance is None for chance in chances):
            return None
        return [1 / (chance or 1.0) for chance in chances]

    @property
    def no_majority(self) -> int:
        return sum(1 for item in self.judged if item.human is None)

    @property
    def over_repeats(self) -> int:
        """Items whose one judgement covers more than one judged pair."""
        return sum(1 for item in self.judged if len(item.pairs) > 1)

    @property
    def ratings(self) -> dict[int, dict[str, str]]:
        """Per item (by index), each named labeller's preference, on items with two or more."""
        out = {}
        for index, item in enumerate(self.judged):
            named = {who: prefer for who, prefer in item.votes.items() if who != UNNAMED}
            if len(named) >= 2:
                out[index] = named
        return out

    @property
    def by_labeller(self) -> dict[str, list[tuple[str, str, float]]]:
        """Each labeller's own (preference, judge category, weight) on the items they
        labelled, the weight 1/π as in :attr:`item_weights`."""
        out: dict[str, list[tuple[str, str, float]]] = {}
        for item in self.judged:
            weight = 1 / (item.probability or 1.0)
            for who, prefer in item.votes.items():
                out.setdefault(who, []).append((prefer, item.judge, weight))
        return out

    @property
    def human_by_pair(self) -> dict[int, str]:
        """Each judged pair's human consensus: its item's (a pair is in one item, its
        case's)."""
        return {
            key: human
            for item in self.judged
            if (human := item.human) is not None
            for key in item.pairs
        }

    @property
    def labels_used(self) -> dict[str, int]:
        """Labels counted, by source: one per labeller and item."""
        used = Counter(source for item in self.judged for source in item.sources.values())
        browser = used["browser"] + used["import"]
        return {
            "browser": browser,
            "suite_file": used[SUITE_FILE],
            "total": browser + used[SUITE_FILE],
        }


class PairIndex:
    """A run's pairs looked up by content key (either orientation), by task, case and
    contestants, and by task and case. Built once per run; matching labels is then a lookup
    per label."""

    def __init__(self, pairs: Iterable[PairView]):
        self.by_content: dict[tuple[Any, ...], list[tuple[PairView, bool]]] = defaultdict(list[Any])
        self.by_cell: dict[tuple[Any, ...], list[tuple[PairView, bool]]] = defaultdict(list[Any])
        self.by_case: dict[tuple[str, str], list[PairView]] = defaultdict(list)
        self.by_key: dict[int, PairView] = {}
        for pair in pairs:
            forward = (pair.task, pair.case, pair.baseline, pair.candidate)
            backward = (pair.task, pair.case, pair.candidate, pair.baseline)
            self.by_content[(*forward, pair.baseline_sha, pair.candidate_sha)].append((pair, False))
            self.by_content[(*backward, pair.candidate_sha, pair.baseline_sha)].append((pair, True))
            self.by_cell[forward].append((pair, False))
            self.by_cell[backward].append((pair, True))
            self.by_case[pair.task, pair.case].append(pair)
            self.by_key[pair.key] = pair

    def covered(self, label: LabelView) -> list[tuple[PairView, bool]]:
        """The pairs `label` is about, each with whether its sides are the label's mirrored."""
        cell = (label.task, label.case, label.baseline, label.candidate)
        if label.source == SUITE_FILE:
            return self.by_cell.get(cell, [])
        return self.by_content.get((*cell, label.baseline_sha, label.candidate_sha), [])


def match_labels(pairs: Sequence[PairView] | PairIndex, labels: Iterable[LabelView]) -> Calibration:
    """The run's calibration set: the items (cases) its labels judge, each compared once."""
    index = pairs if isinstance(pairs, PairIndex) else PairIndex(pairs)
    result = Calibration()
    items: dict[tuple[str, str, frozenset[str]], Item] = {}
    covered: dict[tuple[str, str, frozenset[str]], dict[int, PairView]] = defaultdict(dict)
    for label in sorted(labels, key=lambda lab: lab.at):
        if label.mode != "sample":
            result.targeted += 1
            continue
        matches = index.covered(label)
        if not matches:
            _set_aside(result, index, label)
            continue
        judged = [pair for pair, _ in matches if pair.judge is not None]
        if not judged:
            result.on_excluded += 1
            continue
        first = judged[0]
        key = (first.task, first.case, frozenset((first.baseline, first.candidate)))
        item = items.get(key)
        if item is None:
            item = items[key] = Item(first.key, (), first.task, "", case=first.case)
            result.judged.append(item)
        covered[key].update((pair.key, pair) for pair in judged)
        mirrored = matches[0][1]  # a run orients every pair of two contestants one way
        item.votes[label.labeller] = _MIRROR[label.prefer] if mirrored else label.prefer
        item.sources[label.labeller] = label.source
        item.chances.append(label.probability)
    for key, item in items.items():  # the judge over every repeat the item's labels cover
        judged = sorted(covered[key].values(), key=_order)
        item.pair, item.pairs, item.judge = (
            judged[0].key,
            tuple(p.key for p in judged),
            _combined(judged),
        )
    return result


def _set_aside(result: Calibration, index: PairIndex, label: LabelView) -> None:
    """Count a label that covers none of the run's pairs, by the true reason."""
    cell = (label.task, label.case, label.baseline, label.candidate)
    if label.source != SUITE_FILE and index.by_cell.get(cell):
        result.stale += 1
    elif (label.task, label.case) not in index.by_case:
        result.not_in_run += 1
    else:
        result.ignored += 1


def _order(pair: PairView) -> tuple[int, int]:
    return (pair.repeat, pair.key)


_CATEGORY_SCORE = {"candidate": 1.0, "tie": 0.5, "baseline": 0.0}


def _combined(pairs: Sequence[PairView]) -> str:
    """The judge's one category over the repeats an item covers: its mean pair score."""
    if len(pairs) == 1:
        return cast(str, pairs[0].judge)  # judged pairs: none excluded, each has a category
    scores = [_CATEGORY_SCORE[cast(str, p.judge)] if p.score is None else p.score for p in pairs]
    return score_category(sum(scores) / len(scores))


# --- the calibration section ----------------------------------------------------------------


def calibration_summary(
    matched: Calibration,
    *,
    min_kappa: float,
    min_labels: int,
    seed: int,
    min_lower_bound: float | None = None,
    brief: bool = False,
) -> dict[str, Any]:
    """The calibration section from matched labels: the gate, kappa with both intervals,
    the confusion matrix, per task, the human-human ceiling and the kappa curve. The report,
    the live panel of the labelling page and the calibration page all use this; `brief`
    (the live panel, after every label) leaves out the bootstrap interval, the per-task,
    per-labeller and human-human tables and the curve.

    When any label recorded the sample queue's probability π (active sampling, issue 33),
    kappa, its intervals, per task, per labeller and the curve weight each item by 1/π
    (:attr:`Calibration.item_weights`): the queue over-asks where the judge was unsure, and
    unweighted those labels understate its agreement. ``n`` still counts labels, and so does
    the gate's ``min_labels``. The human-human ceiling stays unweighted (docs/judging.md)."""
    humans = [human for _, _, human, _ in matched.items]
    judges = [judge for _, _, _, judge in matched.items]
    weights = matched.item_weights  # None: no label has a π, kappa as before
    kappa = cohen_kappa(humans, judges, weights=weights)
    cases = matched.item_cases
    interval = case_interval(humans, judges, cases, weights=weights)
    gate = headline_gate(
        kappa,
        min_labels=min_labels,
        min_kappa=min_kappa,
        min_lower_bound=min_lower_bound,
        interval=interval,
    )
    target = min_kappa if min_lower_bound is None else min_lower_bound
    figures = {
        "status": gate.status,
        "reason": gate.reason,
        "kappa": kappa.kappa,
        "kappa_band": kappa.band,
        "kappa_ci": interval.ci,  # over cases: what the gate reads (docs/judging.md)
        "kappa_ci_none": interval.why_none,
        "kappa_cases": interval.cases,
        "kappa_ci_asymptotic": kappa.ci,  # labels as independent (Fleiss–Cohen–Everitt)
        "agreement": kappa.agreement,
        "n": kappa.n,
        # weighted by 1/π: the labels the sample queue asked for by the judge's uncertainty
        "kappa_weighted": weights is not None,
        "kappa_n_effective": None if weights is None else effective_size(weights),
        "min_kappa": min_kappa,
        "min_kappa_lower_bound": min_lower_bound,
        "min_labels": min_labels,
        "labels_needed": labels_needed(kappa, min_kappa=target, min_labels=min_labels),
        "labels_for_half_width": labels_for_half_width(kappa, interval),
        "half_width": HALF_WIDTH,
        "labels_used": matched.labels_used,
        "no_majority": matched.no_majority,
    }
    if brief:
        return figures
    per_task = per_task_kappa(
        ((task, h, j, case) for (_, task, h, j), case in zip(matched.items, cases, strict=True)),
        floor=min_kappa,
        weights=weights,
    )
    return figures | {
        "kappa_ci_bootstrap": bootstrap_kappa_ci(
            humans,
            judges,
            seed=seed,
            resamples=KAPPA_BOOTSTRAP_RESAMPLES,
            cases=cases,
            weights=weights,
        ),
        "confusion": kappa.confusion,
        "per_task": [task.to_dict() for task in per_task],
        # the tasks tested against min_kappa: the family the per-task Holm correction reads
        "per_task_comparisons": sum(1 for task in per_task if task.p_value is not None),
        "labels_stale": matched.stale,
        "labels_ignored": matched.ignored,
        "labels_not_in_run": matched.not_in_run,
        "over_repeats": matched.over_repeats,
        "repeats_rule": REPEATS_RULE if matched.over_repeats else None,
        "labels_targeted": matched.targeted,
        "labels_on_excluded_pairs": matched.on_excluded,
        "humans": _humans(matched),
        "curve": _curve(humans, judges, weights),
        "labellers": _labellers(matched),
    }


def _humans(matched: Calibration) -> dict[str, Any]:
    ratings = matched.ratings
    return {
        "pairwise": {name: k.kappa for name, k in pairwise_cohen(ratings).items()},
        "fleiss_kappa": fleiss_kappa(ratings) if ratings else None,
        "krippendorff_alpha": krippendorff_alpha(ratings) if ratings else None,
        "n_items": len(ratings),
    }


def _labellers(matched: Calibration) -> list[dict[str, Any]]:
    """Each labeller's own agreement with the judge, over the pairs they labelled, weighted
    as the headline kappa is."""
    rows = []
    weighted = matched.item_weights is not None
    for labeller, votes in sorted(matched.by_labeller.items()):
        humans, judges, weights = (list(column) for column in zip(*votes, strict=True))
        kappa = cohen_kappa(humans, judges, weights=weights if weighted else None)
        rows.append(
            {
                "labeller": labeller,
                "n": kappa.n,
                "kappa": kappa.kappa,
                "band": kappa.band,
                "agreement": kappa.agreement,
            }  # fmt: skip
        )
    return rows


def _curve(
    humans: list[str], judges: list[str], weights: list[float] | None
) -> list[dict[str, Any]]:
    """Kappa as the labels grew (in the order they were given), at up to 20 sizes, each
    point weighted as the headline kappa is."""
    n = len(humans)
    if n == 0:
        return []
    sizes = sorted({max(1, round(n * (i + 1) / CURVE_POINTS)) for i in range(CURVE_POINTS)})
    points = []
    for size in sizes:
        kappa = cohen_kappa(
            humans[:size], judges[:size], weights=None if weights is None else weights[:size]
        )
        points.append({"n": size, "kappa": kappa.kappa, "ci": kappa.ci})
    return points
