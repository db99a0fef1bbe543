"""Judge self-consistency: the agreement share, the seeded sample, and the extra calls'
requests (their attempt enters the cache key only when set)."""

from __future__ import annotations

import numpy as np

from evalsite.core.plan import request_hash
from evalsite.core.providers.base import Request
from evalsite.core.stats.consistency import SAMPLE_PAIRS, sample_pairs, self_consistency


def test_agreement_is_the_share_of_extra_verdicts_equal_to_their_orders_first():
    rng = np.random.default_rng(4)
    sides = np.array(["baseline", "candidate", "tie"])
    first = rng.choice(sides, 300)
    again = np.where(rng.random(300) < 0.8, first, rng.choice(sides, 300))
    pairs = np.repeat(np.arange(100), 3)
    rows = list(zip(pairs.tolist(), first.tolist(), again.tolist(), strict=True))
    result = self_consistency(rows, k=3)
    assert result.agreement == np.mean(first == again)
    assert (result.pairs, result.verdicts, result.k) == (100, 300, 3)
    assert result.unstable_pairs == len(set(pairs[first != again].tolist()))
    assert self_consistency([], k=1).agreement is None


def test_the_sample_is_seeded_and_takes_every_pair_of_a_small_run():
    keys = list(range(1000, 1400))
    chosen = sample_pairs(keys, "suite:run")
    assert chosen == sample_pairs(list(reversed(keys)), "suite:run")
    assert len(chosen) == SAMPLE_PAIRS and chosen != sample_pairs(keys, "suite:other")
    assert sample_pairs([3, 1, 2], "s") == [1, 2, 3]


def test_an_attempt_bypasses_the_cache_and_leaves_every_other_key_as_it_was():
    request = Request("fake/judge", ({"role": "user", "content": "x"},), purpose="judge", order=1)
    again = Request(**(request.to_json() | {"attempt": 1}))
    assert "attempt" not in request.to_json()  # existing cache keys do not move
    keys = [request_hash(r, provider="fake", adapter_version="1", mode=None)
            for r in (request, again)]  # fmt: skip
    assert keys[0] != keys[1]
    assert Request(**again.to_json()) == again
