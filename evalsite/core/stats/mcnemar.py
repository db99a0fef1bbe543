"""The change in pass rate between two runs, tested with the case as the unit.

A case's repeats share its prompt: a model that fails a case tends to fail all its repeats,
so counting every repeat as an independent unit, as McNemar's test does, makes a change look
surer than it is (with 3 correlated repeats a case, about 20% false alarms at 0.05). Here
each case contributes d = gained − lost over its units (a unit is a task, case and repeat).
Under no change the two runs are exchangeable within a case, so each d is as likely to be
−d: the **exact sign-flip (permutation) test over cases** takes p = P(|Σ ±dₖ| ≥ |Σ dₖ|) over
the 2^G equally likely sign patterns. With one unit a case every d is −1, 0 or +1 and this is
exactly **McNemar's exact test**, which is what is computed then.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from evalsite.core.stats.paired import mcnemar_exact
from evalsite.core.stats.record import Record

MCNEMAR = "McNemar exact"
SIGN_FLIP = "sign-flip test over cases"


@dataclass(frozen=True)
class CaseMcNemar(Record):
    n: int  # units in both runs
    cases: int  # the test's units
    before: float | None  # pass rate in A over those units
    after: float | None
    delta: float | None
    lost: int  # units passed in A, failed in B
    gained: int  # units failed in A, passed in B
    p_value: float | None  # exact two-sided; None without units
    test: str  # MCNEMAR (one unit a case) or SIGN_FLIP


def case_mcnemar(
    before: Sequence[bool], after: Sequence[bool], cases: Sequence[Hashable] | None = None
) -> CaseMcNemar:
    """The change in pass rate from ``before`` to ``after`` (aligned units) and its exact
    two-sided p with ``cases`` (each unit's case) as the unit; each unit its own case
    without them."""
    plain = mcnemar_exact(before, after)
    names = list(range(len(before))) if cases is None else list(cases)
    if len(names) != len(before):
        raise ValueError(f"{len(names)} cases for {len(before)} units")
    count = len(set(names))
    fields = dataclasses.asdict(plain) | {"cases": count}
    if count == plain.n:
        return CaseMcNemar(**fields, test=MCNEMAR)
    change: dict[Hashable, int] = defaultdict(int)
    for name, a, b in zip(names, before, after, strict=True):
        change[name] += bool(b) - bool(a)
    return CaseMcNemar(**fields | {"p_value": sign_flip_p(list(change.values()))}, test=SIGN_FLIP)


def sign_flip_p(changes: Sequence[int]) -> float:
    """P(|Σ εₖ·dₖ| ≥ |Σ dₖ|) over independent fair signs εₖ, exactly: the cases with
    |d| = v contribute v·(2X − m), X ~ Binomial(m, ½); the distributions of the groups are
    convolved (by FFT, so a run of many cases stays fast)."""
    sizes = Counter(abs(int(d)) for d in changes if d)
    total = sum(v * m for v, m in sizes.items())  # Σ|d|: the sum ranges over −total..total
    if total == 0:
        return 1.0
    length = 1 << total.bit_length()  # ≥ total + 1: the convolution does not wrap
    spectrum = np.ones(length // 2 + 1, dtype=complex)
    for v, m in sizes.items():
        group = np.zeros(length)
        group[: v * m + 1 : v] = _binomial_half_pmf(m)
        spectrum *= np.fft.rfft(group)
    pmf = np.fft.irfft(spectrum, length)[: total + 1]  # of Σ v·X over the groups
    observed = abs(int(sum(changes)))
    sums = 2 * np.arange(total + 1) - total
    return float(min(1.0, max(0.0, math.fsum(pmf[np.abs(sums) >= observed]))))


def _binomial_half_pmf(m: int) -> np.ndarray:
    j = np.arange(m + 1)
    logs = [math.lgamma(m + 1) - math.lgamma(i + 1) - math.lgamma(m - i + 1) for i in j]
    return np.exp(np.array(logs) - m * math.log(2))
