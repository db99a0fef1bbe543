"""The headline gate in its order of precedence, and the labels still needed to pass it."""

from __future__ import annotations

import math

import pytest

from evalsite.core.stats.gate import headline_gate, labels_needed
from evalsite.core.stats.kappa import Z_95, Kappa, cohen_kappa, kappa_band
from tests.core.stats.reference import rated_pairs


def kappa_of(value: float | None, n: int, se: float | None = 0.1) -> Kappa:
    """A Kappa with the figures the gate reads; the rest are placeholders."""
    ci = None if value is None or se is None else (value - Z_95 * se, value + Z_95 * se)
    return Kappa(n, value, 0.5, 0.3, 0.5, se, ci, kappa_band(value), [[0] * 3] * 3)


def agreeing(n_agree: int, n_disagree: int) -> Kappa:
    humans = ["baseline", "candidate", "tie"] * n_agree + ["baseline"] * n_disagree
    judges = ["baseline", "candidate", "tie"] * n_agree + ["candidate"] * n_disagree
    return cohen_kappa(humans, judges)


def test_no_labels_comes_first_although_kappa_is_also_undefined():
    gate = headline_gate(cohen_kappa([], []), min_labels=30, min_kappa=0.4)
    assert (gate.status, gate.eligible) == ("no_labels", False)
    assert gate.reason == "no labelled pairs to compare the judge with"


def test_an_undefined_kappa_over_three_labels_is_kappa_undefined_not_insufficient():
    gate = headline_gate(cohen_kappa(["tie"] * 3, ["tie"] * 3), min_labels=30, min_kappa=0.4)
    assert (gate.status, gate.eligible) == ("kappa_undefined", False)
    assert gate.reason.startswith("kappa is undefined over 3 labels")


def test_too_few_labels_comes_before_a_kappa_below_the_floor():
    gate = headline_gate(kappa_of(0.1, 12), min_labels=30, min_kappa=0.4)
    assert (gate.status, gate.eligible) == ("insufficient_labels", False)
    assert gate.reason == "kappa 0.10 (slight) over 12 labels; the gate needs 30"


def test_below_the_floor_names_kappa_band_labels_and_floor():
    gate = headline_gate(kappa_of(0.25, 12), min_labels=10, min_kappa=0.4)
    assert (gate.status, gate.eligible) == ("below_floor", False)
    assert gate.reason == "kappa 0.25 (fair) over 12 labels is below the floor 0.40"


def test_a_kappa_at_the_floor_with_enough_labels_is_ok():
    gate = headline_gate(kappa_of(0.4, 30), min_labels=30, min_kappa=0.4)
    assert (gate.status, gate.eligible) == ("ok", True)
    assert gate.reason == "kappa 0.40 (fair) over 30 labels meets the floor 0.40"


def test_a_kappa_just_under_the_floor_is_printed_with_the_digits_that_show_it():
    gate = headline_gate(kappa_of(0.399, 40), min_labels=30, min_kappa=0.4)
    assert gate.reason == "kappa 0.399 (fair) over 40 labels is below the floor 0.400"


def test_one_label_is_singular():
    gate = headline_gate(cohen_kappa(["tie"], ["tie"]), min_labels=30, min_kappa=0.4)
    assert "over 1 label:" in gate.reason


def test_gate_on_real_kappas_and_to_dict():
    gate = headline_gate(agreeing(20, 2), min_labels=30, min_kappa=0.4)
    assert gate.status == "ok"
    assert gate.to_dict() == {"status": "ok", "eligible": True, "reason": gate.reason}


def test_labels_needed_by_hand():
    # s = 0.1·√20; N > (1.959964 · s / (0.55 − 0.40))² = 34.15, so 35 labels: 15 more.
    assert labels_needed(kappa_of(0.55, 20, se=0.1), min_kappa=0.4, min_labels=10) == 15
    # The minimum label count can be what is missing.
    assert labels_needed(kappa_of(0.9, 10, se=0.01), min_kappa=0.4, min_labels=30) == 20


def test_no_more_labels_are_needed_once_the_lower_bound_clears_the_floor():
    assert labels_needed(kappa_of(0.8, 100, se=0.05), min_kappa=0.4, min_labels=30) == 0


def test_no_number_of_labels_helps_an_undefined_kappa_or_one_at_or_below_the_floor():
    assert labels_needed(cohen_kappa([], []), min_kappa=0.4, min_labels=30) is None
    assert labels_needed(cohen_kappa(["tie"] * 5, ["tie"] * 5), min_kappa=0.4, min_labels=3) is None
    assert labels_needed(kappa_of(0.4, 50), min_kappa=0.4, min_labels=3) is None
    assert labels_needed(kappa_of(0.2, 50), min_kappa=0.4, min_labels=3) is None


@pytest.mark.parametrize("seed", range(40))
def test_the_labels_needed_are_just_enough_at_the_current_agreement(seed):
    kappa = cohen_kappa(*rated_pairs(seed))
    floor = 0.3
    needed = labels_needed(kappa, min_kappa=floor, min_labels=20)
    if kappa.kappa is None or kappa.kappa <= floor:
        assert needed is None
        return
    scale = kappa.se * math.sqrt(kappa.n)

    def clears(total: int) -> bool:
        return total >= 20 and kappa.kappa - Z_95 * scale / math.sqrt(total) > floor

    total = kappa.n + needed
    assert clears(total)
    assert needed == 0 or not clears(total - 1)


def test_labels_needed_falls_as_labels_at_the_same_agreement_accumulate():
    needed = [
        labels_needed(agreeing(3 * m, 2 * m), min_kappa=0.6, min_labels=10) for m in range(1, 12)
    ]
    assert needed == sorted(needed, reverse=True)
    assert needed[0] > 0 and needed[-1] == 0
    # Same agreement, same target: n + needed stays put until no more are needed.
    targets = {agreeing(3 * m, 2 * m).n + k for m, k in enumerate(needed, start=1) if k}
    assert len(targets) == 1


def test_labels_needed_falls_as_kappa_rises():
    needed = [
        labels_needed(kappa_of(k, 20, se=0.15), min_kappa=0.4, min_labels=10)
        for k in (0.45, 0.5, 0.6, 0.7, 0.8, 0.9)
    ]
    assert needed == sorted(needed, reverse=True) and needed[0] > needed[-1]
