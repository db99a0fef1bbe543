"""Paired significance between two runs: the bootstrap against a plain numpy loop, McNemar
against statsmodels."""

from __future__ import annotations

import time

import numpy as np
import pytest

from evalsite.core.stats.paired import mcnemar_exact, paired_bootstrap
from tests.helpers.references import mcnemar


def plain_paired_bootstrap(before, after, seed, resamples):
    """The textbook paired bootstrap: resample units with replacement, one at a time."""
    rng = np.random.default_rng(seed)
    before, after = np.asarray(before), np.asarray(after)
    n = before.size
    deltas = []
    for _ in range(resamples):
        index = rng.integers(0, n, n)
        deltas.append(after[index].mean() - before[index].mean())
    return np.percentile(deltas, [2.5, 97.5])


@pytest.mark.parametrize("seed", range(8))
def test_paired_bootstrap_equals_the_plain_loop(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 700))
    before = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], n)
    after = np.clip(before + rng.normal(-0.05, 0.3, n), 0, 1)
    result = paired_bootstrap(before, after, seed=seed, resamples=500)
    low, high = plain_paired_bootstrap(before, after, seed, 500)
    assert result.ci == pytest.approx((low, high), abs=1e-6)
    assert result.delta == pytest.approx(after.mean() - before.mean(), abs=1e-12)
    assert result.n == n


def test_paired_bootstrap_in_chunks_draws_as_one_resample_at_a_time(monkeypatch):
    monkeypatch.setattr("evalsite.core.stats.bootstrap._CHUNK_CELLS", 1000)
    before, after = np.arange(300) % 2, np.arange(300) % 3 == 0
    result = paired_bootstrap(before, after, seed=5, resamples=40)
    assert result.ci == pytest.approx(tuple(plain_paired_bootstrap(before, after, 5, 40)))


def test_no_interval_below_eight_units():
    result = paired_bootstrap([1, 0, 1], [0, 0, 1], seed=1)
    assert result.ci is None and result.delta == pytest.approx(-1 / 3)
    assert paired_bootstrap([], [], seed=1).delta is None


@pytest.mark.parametrize("seed", range(12))
def test_mcnemar_equals_statsmodels_exact(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 5, 20, 80, 400]))
    before = rng.random(n) < 0.7
    after = np.where(rng.random(n) < rng.uniform(0.5, 1), before, rng.random(n) < 0.5)
    result = mcnemar_exact(before.tolist(), after.tolist())
    table = [
        [np.sum(before & after), np.sum(before & ~after)],
        [np.sum(~before & after), np.sum(~before & ~after)],
    ]
    assert result.p_value == pytest.approx(mcnemar(table, exact=True).pvalue, abs=1e-6)
    assert (result.lost, result.gained) == (table[0][1], table[1][0])
    assert result.delta == pytest.approx(after.mean() - before.mean())


def plain_cluster_bootstrap(before, after, clusters, seed, resamples):
    """Resample whole clusters (a case with its repeats), one resample at a time."""
    rng = np.random.default_rng(seed)
    names = list(dict.fromkeys(clusters))
    members = {name: [i for i, c in enumerate(clusters) if c == name] for name in names}
    before, after = np.asarray(before), np.asarray(after)
    deltas = []
    for _ in range(resamples):
        units = [i for k in rng.integers(0, len(names), len(names)) for i in members[names[k]]]
        deltas.append(after[units].mean() - before[units].mean())
    return np.percentile(deltas, [2.5, 97.5])


@pytest.mark.parametrize("seed", range(6))
def test_clustered_bootstrap_equals_resampling_whole_cases(seed):
    rng = np.random.default_rng(30 + seed)
    cases = int(rng.integers(4, 120))
    sizes = rng.integers(1, 4, cases)  # repeats, some lost to exclusions
    clusters = [f"case{c}" for c, size in enumerate(sizes) for _ in range(size)]
    rng.shuffle(clusters)
    n = len(clusters)
    before = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], n)
    after = np.clip(before + rng.normal(0, 0.3, n), 0, 1)
    result = paired_bootstrap(before, after, seed=seed, clusters=clusters, resamples=400)
    expected = plain_cluster_bootstrap(before, after, clusters, seed, 400)
    if n < 8:
        assert result.ci is None
    else:
        assert result.ci == pytest.approx(tuple(expected), abs=1e-6)


def test_one_unit_a_cluster_is_the_unit_bootstrap():
    rng = np.random.default_rng(2)
    before, after = rng.random(50), rng.random(50)
    plain = paired_bootstrap(before, after, seed=3)
    clustered = paired_bootstrap(before, after, seed=3, clusters=[f"c{i}" for i in range(50)])
    assert clustered.ci == pytest.approx(plain.ci, abs=1e-12)


def test_correlated_repeats_widen_the_clustered_interval():
    rng = np.random.default_rng(8)
    case_effect = np.repeat(rng.normal(0, 0.4, 40), 5)  # five repeats share their case
    before = np.zeros(200)
    after = case_effect + rng.normal(0, 0.05, 200)
    clusters = np.repeat(np.arange(40), 5).tolist()
    units = paired_bootstrap(before, after, seed=1).ci
    cases = paired_bootstrap(before, after, seed=1, clusters=clusters).ci
    assert cases[1] - cases[0] > 1.8 * (units[1] - units[0])


def test_mcnemar_on_a_large_run_equals_statsmodels_and_is_quick():
    rng = np.random.default_rng(12)
    before, after = rng.random(20_000) < 0.7, rng.random(20_000) < 0.68
    started = time.perf_counter()
    result = mcnemar_exact(before.tolist(), after.tolist())
    assert time.perf_counter() - started < 5.0  # a bound on the method, not a benchmark
    table = [[np.sum(before & after), np.sum(before & ~after)],
             [np.sum(~before & after), np.sum(~before & ~after)]]  # fmt: skip
    assert result.p_value == pytest.approx(mcnemar(table, exact=True).pvalue, abs=1e-6)
