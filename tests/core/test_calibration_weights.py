"""The calibration section under active sampling (issue 33): labels that recorded the
queue's probability π weight kappa, its intervals, per task, per labeller and the curve by
1/π, in the order of the items; without any π every figure is as before."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from evalsite.core.calibration import LabelView, PairView, calibration_summary, match_labels
from evalsite.core.stats.kappa import (
    bootstrap_kappa_ci,
    case_interval,
    cohen_kappa,
    effective_size,
)
from evalsite.core.stats.pairs import CATEGORIES
from tests.helpers.references import cohen_kappa_score

SIDES = ("model-a", "model-b")


def pairs_and_labels(seed: int, cases: int = 40) -> tuple[list[PairView], list[LabelView]]:
    """One judged pair a case, in two tasks; one label a case by "ann" with π 0.5 or 1 (a
    flip's, where the judge is unsure), a suite-file label with no π, and, third, a case two
    labellers split on (no majority: not an item)."""
    rng = np.random.default_rng(seed)
    pairs, labels = [], []
    for i in range(cases):
        task, case = f"t{i % 2}", f"c{i}"
        judge = str(rng.choice(CATEGORIES))
        pairs.append(PairView(i, task, case, 0, *SIDES, "a", "b", judge))
        human = judge if rng.random() < 0.65 else str(rng.choice(CATEGORIES))
        chance = float(rng.choice([0.5, 1.0]))
        at = f"2025-01-01T00:{i:02d}"
        if i == 2:
            labels += [label(task, case, "baseline", at, "ann", chance),
                       label(task, case, "candidate", at, "bob", chance)]  # fmt: skip
        elif i == 5:
            labels.append(label(task, case, human, at, "", None, source="suite_file"))
        else:
            labels.append(label(task, case, human, at, "ann", chance))
    return pairs, labels


def label(task, case, prefer, at, who, chance, source="browser") -> LabelView:
    return LabelView(source, who, task, case, *SIDES, prefer, "a", "b", at=at, probability=chance)


def summary(labels, **overrides):
    pairs, _ = pairs_and_labels(1)
    matched = match_labels(pairs, labels)
    options = {"min_kappa": 0.2, "min_labels": 30, "seed": 4} | overrides
    return matched, calibration_summary(matched, **options)


def test_labels_with_a_probability_give_the_kappa_weighted_by_one_over_it():
    _, labels = pairs_and_labels(1)
    matched, cal = summary(labels)
    items = [item for item in matched.judged if item.human is not None]
    assert len(items) == 39  # the split case has no majority
    humans, judges = [item.human for item in items], [item.judge for item in items]
    weights = [1 / (item.probability or 1.0) for item in items]
    assert weights[4] == 1.0  # the suite-file label: no π, counted as 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = cohen_kappa_score(humans, judges, labels=list(CATEGORIES), sample_weight=weights)
    assert cal["kappa"] == pytest.approx(expected, abs=1e-12)
    assert cal["kappa"] != pytest.approx(cohen_kappa(humans, judges).kappa, abs=1e-3)
    assert cal["kappa_weighted"] is True
    assert cal["n"] == 39  # labels, not the effective size
    assert cal["kappa_n_effective"] == pytest.approx(effective_size(weights))
    cases = matched.item_cases
    assert cal["kappa_ci"] == case_interval(humans, judges, cases, weights=weights).ci
    assert cal["kappa_ci_bootstrap"] == bootstrap_kappa_ci(
        humans, judges, seed=4, resamples=2000, cases=cases, weights=weights
    )
    assert cal["curve"][-1]["kappa"] == pytest.approx(cal["kappa"], abs=1e-12)
    (ann,) = [row for row in cal["labellers"] if row["labeller"] == "ann"]
    # ann's own votes, on the split case too
    votes = [(item.votes["ann"], item.judge, 1 / (item.probability or 1.0))
             for item in matched.judged if "ann" in item.votes]  # fmt: skip
    own = cohen_kappa(*([vote[i] for vote in votes] for i in (0, 1)),
                      weights=[weight for *_, weight in votes])  # fmt: skip
    assert ann["kappa"] == pytest.approx(own.kappa, abs=1e-12)


def test_per_task_kappa_is_weighted_too():
    _, labels = pairs_and_labels(1)
    matched, cal = summary(labels)
    items = [item for item in matched.judged if item.human is not None and item.task == "t1"]
    expected = cohen_kappa([item.human for item in items], [item.judge for item in items],
                           weights=[1 / (item.probability or 1.0) for item in items])  # fmt: skip
    (t1,) = [task for task in cal["per_task"] if task["task"] == "t1"]
    assert t1["kappa"] == pytest.approx(expected.kappa, abs=1e-6)
    assert t1["n"] == len(items)


def test_the_gates_minimum_counts_labels_not_their_effective_size():
    _, labels = pairs_and_labels(1)
    _, cal = summary(labels, min_labels=39, min_kappa=-1.0)
    assert cal["kappa_n_effective"] < 39
    assert cal["status"] == "ok"
    assert summary(labels, min_labels=40, min_kappa=-1.0)[1]["status"] == "insufficient_labels"


def test_without_any_probability_every_figure_is_as_before():
    _, labels = pairs_and_labels(1)
    plain = [
        LabelView(lab.source, lab.labeller, lab.task, lab.case, lab.baseline, lab.candidate,
                  lab.prefer, lab.baseline_sha, lab.candidate_sha, at=lab.at)
        for lab in labels
    ]  # fmt: skip
    matched, cal = summary(plain)
    humans = [h for _, _, h, _ in matched.items]
    judges = [j for _, _, _, j in matched.items]
    assert matched.item_weights is None
    assert cal["kappa_weighted"] is False and cal["kappa_n_effective"] is None
    assert cal["kappa"] == cohen_kappa(humans, judges).kappa
    assert cal["kappa_ci"] == case_interval(humans, judges, matched.item_cases).ci
    every_one = [
        LabelView(lab.source, lab.labeller, lab.task, lab.case, lab.baseline, lab.candidate,
                  lab.prefer, lab.baseline_sha, lab.candidate_sha, at=lab.at, probability=1.0)
        for lab in labels
    ]  # fmt: skip
    _, ones = summary(every_one)
    assert {
        k: v for k, v in ones.items() if k != "kappa_weighted" and k != "kappa_n_effective"
    } == {k: v for k, v in cal.items() if k != "kappa_weighted" and k != "kappa_n_effective"}


def test_the_reports_kappa_line_says_it_is_weighted():
    from evalsite.core.report.overview import _kappa_line

    _, labels = pairs_and_labels(1)
    _, cal = summary(labels)
    line = _kappa_line(cal)
    assert (
        "n=39 labels, each weighted by 1/\u03c0 (the queue's chance of asking for it), worth "
        in line
    )
    assert "weighted" not in _kappa_line(cal | {"kappa_weighted": False})
