"""Matching human labels to a run's pairs (SPEC §10.1), before any statistic is computed.

Two kinds of label reach a run:

- **Content labels** (from the browser or an import) are bound to the exact answer texts:
  task, case, the two contestants and the sha256 of each answer. One applies to every pair
  of the run with that content key, in either orientation (a label given with the sides the
  other way round has its preference mirrored). One with the same task, case and contestants
  but other answer texts is **stale**.
- **Suite-file labels** are bound to task, case and the two models only, and apply to
  whatever answers the run produced (every repeat). One naming a model pair the run does not
  have is **ignored**.

Each labeller counts once per pair (their latest label). Several labels of a pair become
one consensus by strict majority (more than half); with no majority the pair is left out
and counted.
Targeted-review labels are kept out of the consensus that the headline kappa uses.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

__all__ = [
    "SUITE_FILE", "UNNAMED", "Calibration", "LabelView", "PairIndex", "PairView", "match_labels",
]  # fmt: skip

_MIRROR = {"baseline": "candidate", "candidate": "baseline", "tie": "tie"}
SUITE_FILE = "suite_file"
UNNAMED = "suite file"  # the labeller of a suite-file label that names none


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


@dataclass
class Calibration:
    """The matched labels of one run.

    ``items``: (pair key, task, human consensus, judge category) for each included pair
    with a consensus, in the order their first label was given. ``ratings``: per pair key,
    each named labeller's preference, for human-human agreement.
    """

    items: list[tuple[int, str, str, str]] = field(default_factory=list)
    ratings: dict[int, dict[str, str]] = field(default_factory=dict)
    used: Counter = field(default_factory=Counter)  # by source
    stale: int = 0
    ignored: int = 0
    no_majority: int = 0
    on_excluded: int = 0
    targeted: int = 0
    human_by_pair: dict[int, str] = field(default_factory=dict)
    # each labeller's own (preference, judge category) on the pairs they labelled
    by_labeller: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    # per judged pair key, each labeller's preference (in the pair's orientation)
    votes: dict[int, dict[str, str]] = field(default_factory=dict)

    @property
    def labels_used(self) -> dict[str, int]:
        browser = self.used["browser"] + self.used["import"]
        return {
            "browser": browser,
            "suite_file": self.used[SUITE_FILE],
            "total": browser + self.used[SUITE_FILE],
        }


class PairIndex:
    """A run's pairs looked up by content key (either orientation), by task, case and
    contestants, and by task and case. Built once per run; matching labels is then a lookup
    per label."""

    def __init__(self, pairs: Iterable[PairView]):
        self.by_content: dict[tuple, list[tuple[PairView, bool]]] = defaultdict(list)
        self.by_cell: dict[tuple, list[tuple[PairView, bool]]] = defaultdict(list)
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


def match_labels(pairs: Sequence[PairView] | PairIndex, labels: Iterable[LabelView]) -> Calibration:
    """The run's calibration set: which labels apply to which pair, and their consensus."""
    index = pairs if isinstance(pairs, PairIndex) else PairIndex(pairs)
    by_content, by_cell, by_case = index.by_content, index.by_cell, index.by_case
    result = Calibration()
    votes: dict[int, dict[str, tuple[str, str]]] = defaultdict(dict)  # labeller → (prefer, source)
    first_at: dict[int, str] = {}
    pair_by_key = index.by_key
    for label in sorted(labels, key=lambda lab: lab.at):
        if label.mode != "sample":
            result.targeted += 1
            continue
        cell = (label.task, label.case, label.baseline, label.candidate)
        if label.source == SUITE_FILE:
            matches = _suite_matches(label, by_case.get((label.task, label.case), ()))
        else:
            matches = by_content.get((*cell, label.baseline_sha, label.candidate_sha), [])
        if not matches:
            if label.source == SUITE_FILE:
                result.ignored += 1
            elif by_cell.get(cell):
                result.stale += 1
            continue
        counted = False
        for pair, mirrored in matches:
            if pair.judge is None:
                continue
            prefer = _MIRROR[label.prefer] if mirrored else label.prefer
            votes[pair.key][label.labeller] = (prefer, label.source)
            first_at.setdefault(pair.key, label.at)
            counted = True
        if counted:
            result.used[label.source] += 1
        else:
            result.on_excluded += 1

    for key in sorted(votes, key=lambda k: (first_at[k], k)):
        pair = pair_by_key[key]
        for labeller, (prefer, _) in votes[key].items():
            result.by_labeller.setdefault(labeller, []).append((prefer, pair.judge))
        preferences = [prefer for prefer, _ in votes[key].values()]
        consensus = _majority(preferences)
        result.votes[key] = {who: prefer for who, (prefer, _) in votes[key].items()}
        named = {who: prefer for who, (prefer, _) in votes[key].items() if who != UNNAMED}
        if len(named) >= 2:
            result.ratings[key] = named
        if consensus is None:
            result.no_majority += 1
            continue
        result.human_by_pair[key] = consensus
        result.items.append((key, pair.task, consensus, pair.judge))
    return result


def _suite_matches(label: LabelView, pairs: Sequence[PairView]) -> list[tuple[PairView, bool]]:
    """Suite-file labels name models (a variant suffix is allowed and must match too)."""
    out = []
    for pair in pairs:
        if (pair.baseline, pair.candidate) == (label.baseline, label.candidate):
            out.append((pair, False))
        elif (pair.candidate, pair.baseline) == (label.baseline, label.candidate):
            out.append((pair, True))
    return out


def _majority(preferences: Sequence[str]) -> str | None:
    """The preference of more than half the labels, else None."""
    winner, count = Counter(preferences).most_common(1)[0]
    return winner if 2 * count > len(preferences) else None
