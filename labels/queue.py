"""The labelling queue (SPEC §10.2–10.3): which pair a member labels next, shown blind.

The queue offers the judged pairs of the suite's calibration run (SPEC §19: the pinned
baseline, else the latest finished, judged, whole-suite run; a member may pick another
judged run), in one seeded,
task-stratified random order (each task's pairs shuffled, then the tasks taken in turn), so
the labelled set represents the pairs and kappa is not biased by which pairs were picked.
A pair needs one label, or two when it is one of the overlap share
(``EVALSITE_LABEL_OVERLAP``, 20%) that a second labeller also gets, for human-human
agreement. A member labels a pair once, in whichever queue: review does not offer them a
pair they labelled in the sample, nor the sample one they reviewed. A pair shown to another
member in the last few minutes is passed over unless it still needs a second labeller.
Targeted review offers the run's flips and judge-human disagreements instead; its labels are
marked targeted and kept out of the headline kappa.

Blindness: the two answers appear as Left and Right, sides decided per (labeller, pair) by
a keyed hash of the server's secret; the page addresses the pair by a signed token of an
assignment id, which says nothing about models, sides or answers.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import math
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.core import signing
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from evalsite.core.stats.active import sampling_probability
from labels.models import Assignment
from runs.models import Label, Pair, Run, Suite
from runs.models.label import CONTENT_FIELDS, PAIR_CONTENT_FIELDS, content_of
from runs.results.calibration import pair_rows, refresh_human
from runs.results.memo import FinishedRunMemo

SAMPLE, TARGETED = Label.Mode.SAMPLE, Label.Mode.TARGETED
SHOWN_FOR = dt.timedelta(minutes=10)
_SIGNING_NAMESPACE = "evalsite.labels.pair"


def _keyed_fraction(*parts: object) -> float:
    message = "\x1f".join(str(part) for part in parts).encode()
    digest = hmac.new(settings.SECRET_KEY.encode(), message, hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def is_overlap(key: tuple[str, ...]) -> bool:
    """Whether this pair is one of the share given to a second labeller."""
    return _overlap_fraction(key) < settings.EVALSITE_LABEL_OVERLAP


@lru_cache(maxsize=100_000)
def _overlap_fraction(key: tuple[str, ...]) -> float:
    return _keyed_fraction("overlap", *key)


def labels_wanted(key: tuple[str, ...], mode: str) -> int:
    """How many labels a pair needs in `mode`'s queue: two for the sample's overlap share."""
    return 2 if mode == SAMPLE and is_overlap(key) else 1


def baseline_on_left(user, key: tuple[str, ...]) -> bool:
    """The side of the baseline for this labeller and pair: a keyed hash the page cannot
    reverse (the same labeller sees the same pair the same way every time)."""
    return _keyed_fraction("side", user.pk, *key) < 0.5


def stratified_order(run: Run, pairs: list[tuple[int, str]]) -> list[int]:
    """Pair ids in the run's seeded, task-stratified random order."""
    by_task: dict[str, list[int]] = {}
    for pk, task in sorted(pairs):
        by_task.setdefault(task, []).append(pk)
    rng = random.Random(f"{run.suite_version.sha256}:{run.id}")
    queues = []
    for task in sorted(by_task):
        ids = by_task[task]
        rng.shuffle(ids)
        queues.append(ids)
    rng.shuffle(queues)
    order = []
    while any(queues):
        for ids in queues:
            if ids:
                order.append(ids.pop())
    return order


def candidates(run: Run, mode: str) -> QuerySet[Pair]:
    pairs = Pair.objects.filter(run=run).judged()
    if mode == TARGETED:
        return pairs.filter(flip=True) | pairs.disagreements()
    return pairs


@dataclass(frozen=True)
class Offered:
    """The pairs a queue offers: each pair's content key, the queue order, the keys, and in
    the sample queue each offered pair's probability of being asked (docs/judging.md)."""

    keys: dict[int, tuple[str, ...]]
    order: list[int]
    present: frozenset[tuple[str, ...]]
    chances: dict[int, float] | None = None


_OFFERED: FinishedRunMemo[Offered] = FinishedRunMemo()


def offered(run: Run, mode: str) -> Offered:
    """The pairs the queue offers in `mode`: a finished run's judged pairs worked out once
    per process; the targeted ones (they move with the labels) every time."""
    if mode == SAMPLE:
        return _OFFERED.get(run, lambda: _sampled(run))
    return _offered(run, list(candidates(run, mode).values_list("pk", *PAIR_CONTENT_FIELDS)))


def _sampled(run: Run) -> Offered:
    """The sample queue: the run's judged pairs in its stratified random order, each asked
    for when its keyed coin falls under its probability (the judge's uncertainty over a
    floor: :func:`~evalsite.core.stats.active.sampling_probability`)."""
    judged = [
        row for row in pair_rows(run) if not row["excluded_reason"] and row["score"] is not None
    ]
    chances = {
        row["pk"]: sampling_probability(row["score"], row["flip"], pairs=len(judged))
        for row in judged
    }
    rows = [(row["pk"], *(row[name] for name in PAIR_CONTENT_FIELDS)) for row in judged]
    asked = [row for row in rows if _keyed_fraction("ask", *row[1:]) < chances[row[0]]]
    return _offered(run, asked, chances)


def _offered(run: Run, rows: list[tuple], chances: dict[int, float] | None = None) -> Offered:
    keys = {row[0]: tuple(row[1:]) for row in rows}
    order = stratified_order(run, [(row[0], row[1]) for row in rows])
    return Offered(keys, order, frozenset(keys.values()), chances)


@dataclass(frozen=True)
class Offer:
    """A pair offered to a member: the assignment that addresses it and the pair."""

    assignment: Assignment
    pair: Pair
    token: str
    baseline_left: bool


def label_rows(suite: Suite) -> list[tuple]:
    """(labeller id, mode, *content key) of every label of the suite, in either queue."""
    labels = Label.objects.filter(suite=suite)
    return list(labels.values_list("labeller_id", "mode", *CONTENT_FIELDS))


def _of_mode(labels: list[tuple], mode: str) -> Iterator[tuple[Any, tuple]]:
    """(labeller id, content key) of the labels given in `mode`'s queue."""
    return ((who, tuple(key)) for who, given_in, *key in labels if given_in == mode)


def next_offer(
    suite: Suite, user, mode: str = SAMPLE, run: Run | None = None, labels: list | None = None
) -> Offer | None:
    """The next pair this member should label, or None when the queue is empty for them."""
    for pk in _waiting(suite, user, mode, run, labels):
        pairs = Pair.objects.select_related("run").defer("run__report", "run__estimate")
        return offer(suite, user, pairs.get(pk=pk), mode)
    return None


def waiting(suite: Suite, user, mode: str = SAMPLE, run: Run | None = None) -> list[int]:
    """Ids of the pairs waiting for this member, in queue order."""
    return list(_waiting(suite, user, mode, run))


def still_to_label(suite: Suite, user, runs: list[Run]) -> frozenset[tuple[str, ...]]:
    """Content keys (either orientation) that someone else has labelled, of the pairs of
    `runs` that wait, or may come back, for this member in either mode: those labels are
    not shown to the member (SPEC §10.4). Like `waiting`, except that a pair another member
    has open now counts too, since it comes back when they leave it."""
    keys: set[tuple[Any, ...]] = set()
    labels = label_rows(suite)
    theirs = {tuple(key) for who, _, *key in labels if who != user.pk}
    for mode in (SAMPLE, TARGETED):
        for run in runs:
            waiting_ids = _waiting(suite, user, mode, run, labels, busy=False)
            keys.update(offered(run, mode).keys[pk] for pk in waiting_ids)
    keys |= {(task, case, b, a, b_sha, a_sha) for task, case, a, b, a_sha, b_sha in keys}
    return frozenset(keys & theirs)


def _waiting(
    suite: Suite, user, mode: str, run: Run | None, labels: list | None = None, busy: bool = True
) -> Iterator[int]:
    run = run or Run.objects.calibration_run(suite)
    if run is None:
        return
    queue = offered(run, mode)
    keys = queue.keys
    labels = labels if labels is not None else label_rows(suite)
    counts = Counter(key for _, key in _of_mode(labels, mode))  # the labels this queue needs
    # a pair shown to someone who labelled it, in either queue, is not busy, and one this
    # member labelled, in either queue, is not waiting for them
    done_by = {(who, tuple(key)) for who, _, *key in labels}
    mine = {key for who, key in done_by if who == user.pk}
    skipped: set[Any] = set()
    shown: Counter[Any] = Counter()  # open for someone else right now
    recent = timezone.now() - SHOWN_FOR
    assignments = Assignment.objects.filter(suite=suite).values_list(
        "labeller_id", "state", "updated_at", *CONTENT_FIELDS
    )
    for labeller_id, state, updated_at, *key in assignments:
        key = tuple(key)
        if labeller_id == user.pk and state == Assignment.State.SKIPPED:
            skipped.add(key)
        elif (
            busy
            and labeller_id != user.pk
            and state == Assignment.State.SHOWN
            and updated_at > recent
            and (labeller_id, key) not in done_by
        ):
            shown[key] += 1
    seen = set()
    for pk in queue.order:
        key = keys[pk]
        if key in mine or key in skipped or key in seen:
            continue
        if counts[key] + shown[key] < labels_wanted(key, mode):
            seen.add(key)  # repeats with identical answers are one pair to label
            yield pk


def offer(suite: Suite, user, pair: Pair, mode: str = SAMPLE) -> Offer:
    """Show `pair` to `user`: note the assignment and sign its token, which carries the
    probability the sample queue asked for the pair with (its label records it)."""
    assignment = _assignment(suite, user, pair)
    data: dict[str, Any] = {"a": assignment.pk, "m": mode}
    if mode == SAMPLE:
        data["p"] = (offered(pair.run, SAMPLE).chances or {}).get(pair.pk)
    token = signing.dumps(data, salt=_SIGNING_NAMESPACE, compress=True)
    return Offer(assignment, pair, token, baseline_on_left(user, pair.content_key))


def _assignment(suite: Suite, user, pair: Pair) -> Assignment:
    content = pair.content
    try:
        with transaction.atomic():
            assignment, created = Assignment.objects.get_or_create(
                suite=suite, labeller=user, **content
            )
    except IntegrityError:  # two tabs asked at once
        assignment, created = Assignment.objects.get(suite=suite, labeller=user, **content), False
    if not created:
        assignment.state = Assignment.State.SHOWN
        assignment.save(update_fields=["state", "updated_at"])
    return assignment


class BadToken(Exception):
    """A token that is not this member's, or was tampered with."""


@dataclass(frozen=True)
class Ticket:
    """What a signed token says: the assignment, the queue's mode and, in the sample queue,
    the probability the pair was asked for with (None: a token from before it was kept)."""

    assignment: Assignment
    mode: str
    probability: float | None = None


def from_token(token: str, user) -> Ticket:
    try:
        data = signing.loads(token, salt=_SIGNING_NAMESPACE)
        assignment = Assignment.objects.select_related("suite").get(pk=data["a"], labeller=user)
    except (signing.BadSignature, Assignment.DoesNotExist, KeyError, TypeError):
        raise BadToken("this pair is not in your queue (the link is stale or not yours)") from None
    mode = data.get("m") if data.get("m") in (SAMPLE, TARGETED) else SAMPLE
    chance = data.get("p") if mode == SAMPLE else None
    return Ticket(assignment, mode, float(chance) if isinstance(chance, int | float) else None)


def pair_for(assignment: Assignment) -> Pair | None:
    """The pair of the suite's calibration run with the assignment's content (any repeat)."""
    run = Run.objects.calibration_run(assignment.suite)
    pairs = (
        Pair.objects.with_content(content_of(assignment))
        .select_related("run", "baseline", "candidate")
        .defer("run__report", "run__estimate")
    )
    if run is not None:
        return pairs.filter(run=run).first() or pairs.order_by("-pk").first()
    return pairs.order_by("-pk").first()


# --- labelling ------------------------------------------------------------------------------


CHOICES = {"left": "left", "1": "left", "tie": "tie", "2": "tie", "right": "right", "3": "right"}


def preference(user, assignment: Assignment, choice: str) -> str:
    """Left / tie / right as seen by this member, as baseline / candidate / tie."""
    side = CHOICES[choice]
    if side == "tie":
        return Label.Prefer.TIE
    left_is_baseline = baseline_on_left(user, tuple(content_of(assignment).values()))
    if (side == "left") == left_is_baseline:
        return Label.Prefer.BASELINE
    return Label.Prefer.CANDIDATE


def seen_as(prefer: str, baseline_left: bool) -> str:
    """A stored preference back in the member's own Left / tie / Right terms."""
    if prefer == Label.Prefer.TIE:
        return "tie"
    return "left" if (prefer == Label.Prefer.BASELINE) == baseline_left else "right"


def record(
    user,
    assignment: Assignment,
    choice: str,
    note: str,
    mode: str,
    probability: float | None = None,
) -> Label:
    """This member's label on the assignment's pair, with the probability the sample queue
    asked for it with; a second submit updates it (idempotent). A label changed later keeps
    the queue it was given in (:meth:`LabelQuerySet.give`: a page of the other queue left
    open, say)."""
    content = content_of(assignment)
    values = {
        "labeller": user,
        "prefer": preference(user, assignment, choice),
        "note": note.strip()[:4000],
        "source": Label.Source.BROWSER,
    }
    picked = {"mode": mode, "probability": probability if mode == SAMPLE else None}
    for _ in range(2):
        try:
            with transaction.atomic():
                label = Label.objects.give(assignment.suite, user, content, values, picked)
            break
        except IntegrityError:  # the same submit raced itself: the row exists now
            continue
    refresh_human(assignment.suite, content)
    return label


@dataclass(frozen=True)
class Undone:
    """The label an undo deleted: its pair's assignment (to show again) and the choice as
    the member made it (left, tie or right)."""

    assignment: Assignment | None
    choice: str


def undo_last(suite: Suite, user, mode: str = SAMPLE) -> Undone | None:
    """Delete this member's latest label in the suite given in `mode`'s queue (the pair
    comes back in that queue); None when there is none."""
    labels = Label.objects.filter(suite=suite, labeller=user, mode=mode)
    label = labels.order_by("-updated_at", "-pk").first()
    if label is None:
        return None
    content = content_of(label)
    choice = seen_as(label.prefer, baseline_on_left(user, tuple(content.values())))
    label.delete()
    refresh_human(suite, content)
    assignment = Assignment.objects.filter(suite=suite, labeller=user, **content).first()
    return Undone(assignment, choice)


def skip(assignment: Assignment) -> None:
    assignment.state = Assignment.State.SKIPPED
    assignment.save(update_fields=["state", "updated_at"])


def progress(
    suite: Suite, user, mode: str = SAMPLE, run: Run | None = None, labels: list | None = None
) -> dict[str, int]:
    """How far the suite's queue is: pairs offered, pairs with a label, this member's labels.
    Counted in SQL and over the labels, never by reading every pair of a big run."""
    run = run or Run.objects.calibration_run(suite)
    if run is None:
        return {"pairs": 0, "labelled": 0, "mine": 0}
    present = offered(run, mode).present
    given = list(_of_mode(labels if labels is not None else label_rows(suite), mode))
    total = len(present)
    labelled = {key for _, key in given if key in present}
    mine = {key for who, key in given if who == user.pk and key in present}
    return {"pairs": total, "labelled": len(labelled), "mine": len(mine)}


def why_empty(suite: Suite, user, mode: str = SAMPLE, run: Run | None = None) -> str:
    """Why nothing waits for this member: no judged run, no pair to offer, pairs open for
    other members (and for how long), pairs they skipped, or every pair has its labels.
    Read only when the queue is empty, so a label costs no query for it."""
    run = run or Run.objects.calibration_run(suite)
    if run is None:
        return "the suite has no judged run to label yet"
    queue = offered(run, mode)
    if not queue.keys:
        if mode == TARGETED:
            return "this run has no flips or judge–human disagreements to review"
        return "this run has no judged pairs"
    held = {queue.keys[pk] for pk in _waiting(suite, user, mode, run, busy=False)}
    if held:
        minutes = _reserved_minutes(suite, user, held)
        pairs = f"the last {len(held)} pairs are" if len(held) > 1 else "the last pair is"
        return f"{pairs} reserved for another member for {_count(minutes, 'more minute')}"
    skipped = Assignment.objects.filter(
        suite=suite, labeller=user, state=Assignment.State.SKIPPED
    ).values_list(*CONTENT_FIELDS)
    passed = sum(1 for key in skipped if tuple(key) in queue.present)
    if passed:
        return f"you skipped the {_count(passed, 'pair')} left"
    labels = label_rows(suite)
    given_here = Counter(key for _, key in _of_mode(labels, mode))
    other = TARGETED if mode == SAMPLE else SAMPLE
    elsewhere = [  # pairs that would wait for this member but for their label in the other
        key
        for who, key in _of_mode(labels, other)
        if who == user.pk and key in queue.present and given_here[key] < labels_wanted(key, mode)
    ]
    if elsewhere:
        where = "sample" if other == SAMPLE else "targeted review"
        return (
            f"you labelled the {_count(len(elsewhere), 'pair')} left in the {where} already, "
            "and a member labels a pair once"
        )
    judged = len(queue.chances or {})
    if mode == SAMPLE and judged > len(queue.present):
        return (
            f"every pair the sample asks for has the labels it needs: the queue asks for "
            f"{len(queue.present)} of the run's {judged} judged pairs, more where the judge was "
            "unsure"
        )
    return "every pair has the labels it needs"


def _reserved_minutes(suite: Suite, user, held: set[tuple]) -> int:
    """Whole minutes until the last of the `held` pairs, open for other members, is free."""
    now = timezone.now()
    opened = Assignment.objects.filter(
        suite=suite, state=Assignment.State.SHOWN, updated_at__gt=now - SHOWN_FOR
    ).exclude(labeller=user)
    rows = opened.values_list("updated_at", *CONTENT_FIELDS)
    last = max((row[0] for row in rows if tuple(row[1:]) in held), default=now)
    return max(1, math.ceil((last + SHOWN_FOR - now).total_seconds() / 60))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def queue_count(user) -> int:
    """Pairs waiting for this member across every suite (for the dashboard)."""
    return sum(len(waiting(suite, user)) for suite in Suite.objects.all())
