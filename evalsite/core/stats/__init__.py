"""The statistics of a report as pure functions over plain values (SPEC §8, §9).

numpy and the standard library only; the tests check the figures against established
implementations (scikit-learn, statsmodels, krippendorff) where one exists and by hand where
not. Results are frozen dataclasses whose ``to_dict()`` is plain JSON, with None where a
figure is undefined.
"""

from evalsite.core.stats.agreement import (
    fleiss_kappa,
    krippendorff_alpha,
    pairwise_cohen,
    strict_majority,
)
from evalsite.core.stats.bootstrap import percentile_interval, resample_counts, seed_from
from evalsite.core.stats.gate import GATE_STATUSES, Gate, headline_gate, labels_needed
from evalsite.core.stats.kappa import (
    Z_95,
    Kappa,
    bootstrap_kappa_ci,
    cohen_kappa,
    confusion_matrix,
    kappa_band,
)
from evalsite.core.stats.latency import Latency, latency_percentiles, nearest_rank
from evalsite.core.stats.pairs import (
    CATEGORIES,
    FLIP_WARNING_RATE,
    MIN_N_FOR_INTERVAL,
    PAIR_SCORES,
    PairScore,
    WinRate,
    pair_score,
    score_category,
    win_rate,
)
from evalsite.core.stats.ranking import BTScore, bradley_terry
from evalsite.core.stats.record import Record, jsonable
from evalsite.core.stats.task_kappa import MIN_N_PER_TASK, TaskKappa, per_task_kappa

__all__ = [
    "BTScore", "CATEGORIES", "FLIP_WARNING_RATE", "GATE_STATUSES", "Gate", "Kappa", "Latency",
    "MIN_N_FOR_INTERVAL", "MIN_N_PER_TASK", "PAIR_SCORES", "PairScore", "Record", "TaskKappa",
    "WinRate", "Z_95", "bootstrap_kappa_ci", "bradley_terry", "cohen_kappa", "confusion_matrix",
    "fleiss_kappa", "headline_gate", "jsonable", "kappa_band", "krippendorff_alpha",
    "labels_needed", "latency_percentiles", "nearest_rank", "pair_score", "pairwise_cohen",
    "per_task_kappa", "percentile_interval", "resample_counts", "score_category", "seed_from",
    "strict_majority", "win_rate",
]  # fmt: skip
