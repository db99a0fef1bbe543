"""Pair scores from two judge orders, and the win-rate with its seeded bootstrap interval."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evalsite.core.stats.bootstrap import seed_from
from evalsite.core.stats.pairs import pair_score, score_category, win_rate


@pytest.mark.parametrize(
    ("order1", "order2", "score", "flip", "category"),
    [
        ("candidate", "candidate", 1.0, False, "candidate"),
        ("baseline", "baseline", 0.0, False, "baseline"),
        ("tie", "tie", 0.5, False, "tie"),
        ("candidate", "tie", 0.75, False, "candidate"),
        ("tie", "candidate", 0.75, False, "candidate"),
        ("baseline", "tie", 0.25, False, "baseline"),
        ("tie", "baseline", 0.25, False, "baseline"),
        ("candidate", "baseline", 0.5, True, "tie"),
        ("baseline", "candidate", 0.5, True, "tie"),
    ],
)
def test_pair_score_follows_the_spec_table(order1, order2, score, flip, category):
    result = pair_score(order1, order2)
    assert (result.score, result.flip, result.category) == (score, flip, category)


@pytest.mark.parametrize(("order1", "order2"), [("1", "tie"), ("tie", "Candidate"), ("", "")])
def test_pair_score_rejects_an_unmapped_verdict(order1, order2):
    with pytest.raises(ValueError, match="unknown verdict"):
        pair_score(order1, order2)


def test_score_category_splits_at_exactly_one_half():
    assert [score_category(s) for s in (0.0, 0.25, 0.4999, 0.5, 0.5001, 1.0)] == [
        "baseline", "baseline", "baseline", "tie", "candidate", "candidate",
    ]  # fmt: skip


def test_win_rate_counts_every_kind_of_pair_by_hand():
    scores = [1.0, 1.0, 1.0, 0.75, 0.75, 0.5, 0.5, 0.5, 0.25, 0.0]
    result = win_rate(scores, flips=2, seed=1)
    assert result.win_rate == pytest.approx(6.25 / 10)
    assert (result.n, result.wins, result.losses, result.ties) == (10, 3, 1, 1)
    assert (result.soft_wins, result.soft_losses, result.flips) == (2, 1, 2)
    assert (result.flip_rate, result.flip_warning) == (0.2, False)


def test_flip_warning_starts_above_thirty_percent():
    assert win_rate([0.5] * 3 + [1.0] * 7, flips=3, seed=1).flip_warning is False
    assert win_rate([0.5] * 4 + [1.0] * 6, flips=4, seed=1).flip_warning is True


def test_win_rate_of_no_pairs_is_undefined_not_zero():
    result = win_rate([], seed=1)
    assert (result.win_rate, result.ci, result.n, result.flip_rate) == (None, None, 0, None)
    assert result.flip_warning is False


def test_more_flips_than_half_scores_is_an_error():
    with pytest.raises(ValueError, match="flips"):
        win_rate([0.5, 1.0], flips=2, seed=1)
    with pytest.raises(ValueError, match="flips"):
        win_rate([0.5], flips=-1, seed=1)


@pytest.mark.parametrize("bad", [0.6, -0.25, 2.0, float("nan")])
def test_a_value_that_is_no_pair_score_is_an_error(bad):
    with pytest.raises(ValueError, match="not a pair score"):
        win_rate([1.0, bad], seed=1)


def test_the_interval_is_suppressed_below_eight_pairs():
    assert win_rate([1.0, 0.0] * 3 + [0.5], seed=1).ci is None
    assert win_rate([1.0, 0.0] * 4, seed=1).ci is not None
    assert win_rate([1.0, 0.0] * 4, seed=1, min_n=9).ci is None


def typical_scores(n: int, seed: int = 7) -> list[float]:
    rng = np.random.default_rng(seed)
    return [
        float(s) for s in rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], n, p=[0.2, 0.1, 0.2, 0.2, 0.3])
    ]


def test_one_seed_gives_one_interval_and_another_seed_another():
    scores = typical_scores(60)
    first = win_rate(scores, seed=seed_from("suite-hash"))
    assert win_rate(scores, seed=seed_from("suite-hash")) == first
    assert win_rate(scores, seed=seed_from("other-hash")).ci != first.ci


def test_the_interval_contains_the_mean_of_a_typical_sample():
    result = win_rate(typical_scores(80), seed=3)
    low, high = result.ci
    assert low < result.win_rate < high
    assert 0.0 <= low < high <= 1.0


def test_the_interval_matches_a_plain_index_resampling_bootstrap():
    scores = np.array(typical_scores(300))
    rng = np.random.default_rng(12345)
    means = scores[rng.integers(0, scores.size, size=(10_000, scores.size))].mean(axis=1)
    expected = np.percentile(means, [2.5, 97.5])
    low, high = win_rate(list(scores), seed=99).ci
    assert low == pytest.approx(expected[0], abs=0.004)
    assert high == pytest.approx(expected[1], abs=0.004)


def test_ten_thousand_pairs_with_ten_thousand_resamples_give_an_interval_around_the_rate():
    """The size of a large run; its speed is the benchmark's to measure (no timed assertion
    on a shared machine), its interval is checked here."""
    scores = typical_scores(10_000)
    result = win_rate(scores, seed=1, resamples=10_000)
    assert result.ci[0] < result.win_rate < result.ci[1]


def test_to_dict_is_plain_json_with_rounded_floats():
    data = win_rate([1.0, 0.75, 0.0] * 3, seed=5).to_dict()
    assert json.loads(json.dumps(data, allow_nan=False)) == data
    assert data["win_rate"] == round(5.25 / 9, 6)
    assert isinstance(data["ci"], list) and len(data["ci"]) == 2
    assert pair_score("candidate", "baseline").to_dict() == {
        "score": 0.5, "flip": True, "category": "tie",
    }  # fmt: skip


def test_seed_from_is_a_stable_64_bit_digest_of_the_text():
    assert seed_from("abc") == seed_from("abc") == 0xBA7816BF8F01CFEA
    assert seed_from("abd") != seed_from("abc")
    assert 0 <= seed_from("") < 2**64
