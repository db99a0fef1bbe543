"""Active against uniform label sampling for the corrected win-rate (issue 33): seeded.

A synthetic run of 900 judged pairs: 3 tasks of 150, 100 and 50 cases × 3 repeats, each
repeat after the first copying the first one's pair (verdict and human label) with
probability 0.7, so a case is a cluster. Per pair the judge's verdict is drawn first —
decisive (score 1 or 0, both orders agreeing), a split (¾ or ¼), a tie (½) or a flip (½,
the orders disagreeing), in shares that differ by task — then the human's label given it.

What was taken from /work/shared/data/pairsets (MT-Bench human majority against gpt-4,
chatgpt, llama-2 and palm-2 in both orders; PandaLM's three annotators against gpt-3.5 and
pandalm-7b): the judges' *disagreements* sit on their flips and ties (every flip is half
wrong; 70-87% of ties disagree, against 13-19% of agreed verdicts), but their *squared*
errors, which set a corrected interval's width, hardly do: E(y − f)² is 0.25 on a flip,
0.18-0.22 on a tie and 0.13-0.23 on an agreed verdict, because an agreed verdict that is
wrong is wrong by 1 and a flip by ½. Flip shares there are 13-42%. The "pair sets" judge
below has those rates (an agreed verdict: the human agrees 80%, ties 7%, disagrees 13%;
a tie: human ties 20%; a flip: human leans to the baseline 48/42 with 10% ties). Assumed,
with no data behind it: splits (one order a tie; no judge there gave both orders and
ties), and the shares of each verdict per task. The "sure judge" is hypothetical: the same
flips and ties, but its agreed verdicts are wrong 1% of the time — the judge for which
active sampling is made.

Uniform: the first L pairs of the run's task-stratified random order, classical PPI (as
today). Active: the same order scanned with a uniform coin per pair, a label when the coin
is under the pair's :func:`~evalsite.core.stats.active.sampling_probability`, until L
labels; the weighted estimator. The truth is the expected human win-rate of the model.
"labels for uniform's width": the labels active sampling needs for the mean width uniform
sampling has at L, interpolated over active runs at 0.4-1.3 × L (width² linear in 1/L).

Kappa (the same runs): the population kappa is that of the expected human × judge table
over every pair; each scheme's mean kappa of its L labels (a label a pair, categories by
the side of ½), active sampling's unweighted and weighted by 1/π, and how often each one's
95% case interval (:func:`~evalsite.core.stats.kappa.case_interval`) covers the population
kappa. Uniform sampling's π is 1, so its weighted kappa is its unweighted one.

    PYTHONPATH=. .venv/bin/python bench/active_labels.py [--runs 500] [--seed 33] [--strict]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from evalsite.core.stats.active import sampling_probability
from evalsite.core.stats.kappa import case_interval, cohen_kappa
from evalsite.core.stats.ppi import Stratum, corrected_win_rate

COVERAGE_TARGET = 0.93
SAVING_TARGET = 0.30
LABELS = (60, 120, 240)
GRID = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3)  # × L: active label counts run
REPEATS, COPY = 3, 0.7
# the judge's verdicts: (score, flip) of a decisive win, loss, split ¾, split ¼, tie, flip
OUTCOMES = ((1.0, False), (0.0, False), (0.75, False), (0.25, False), (0.5, False), (0.5, True))
HUMAN_SCORES = np.array([1.0, 0.5, 0.0])


@dataclass(frozen=True)
class Task:
    name: str
    cases: int
    shares: tuple[float, ...]  # of each of OUTCOMES


TASKS = (
    Task("writing", 150, (0.38, 0.22, 0.07, 0.04, 0.04, 0.25)),
    Task("coding", 100, (0.30, 0.35, 0.05, 0.05, 0.05, 0.20)),
    Task("reasoning", 50, (0.45, 0.15, 0.06, 0.04, 0.02, 0.28)),
)


def _mirror(rows: Sequence[tuple[float, float, float]]) -> np.ndarray:
    """P(human 1, ½, 0) for each of OUTCOMES from those of a win, a split ¾, a tie and a
    flip: a loss and a split ¼ mirror a win and a split ¾."""
    win, split, tie, flip = rows
    return np.array([win, win[::-1], split, split[::-1], tie, flip])


JUDGES = {
    "pair sets": _mirror([(0.80, 0.07, 0.13), (0.50, 0.20, 0.30), (0.40, 0.20, 0.40),
                          (0.42, 0.10, 0.48)]),
    "sure judge": _mirror([(0.985, 0.01, 0.005), (0.60, 0.25, 0.15), (0.40, 0.20, 0.40),
                           (0.42, 0.10, 0.48)]),
}  # fmt: skip


@dataclass(frozen=True)
class Run:
    task: np.ndarray  # index into TASKS, a pair
    case: np.ndarray
    outcome: np.ndarray  # index into OUTCOMES
    human: np.ndarray
    order: np.ndarray  # the queue's task-stratified random order


def truth(human_given: np.ndarray) -> float:
    """The expected human win-rate, tasks weighted by their share of the pairs."""
    means = [np.asarray(task.shares) @ (human_given @ HUMAN_SCORES) for task in TASKS]
    return float(np.average(means, weights=[task.cases for task in TASKS]))


def draw_run(rng: np.random.Generator, human_given: np.ndarray) -> Run:
    tasks, cases, outcomes, humans = [], [], [], []
    for index, task in enumerate(TASKS):
        fresh = rng.choice(len(OUTCOMES), size=(task.cases, REPEATS), p=task.shares)
        copied = rng.random((task.cases, REPEATS)) < COPY
        copied[:, 0] = False
        outcome = np.where(copied, fresh[:, :1], fresh)
        cumulative = human_given.cumsum(axis=1)[outcome]
        human = HUMAN_SCORES[(rng.random(outcome.shape)[..., None] > cumulative).sum(axis=-1)]
        human = np.where(copied, human[:, :1], human)
        tasks.append(np.full(outcome.size, index))
        cases.append(np.repeat(np.arange(task.cases), REPEATS) + 1000 * index)
        outcomes.append(outcome.ravel())
        humans.append(human.ravel())
    task = np.concatenate(tasks)
    return Run(task, np.concatenate(cases), np.concatenate(outcomes), np.concatenate(humans),
               _stratified_order(rng, task))  # fmt: skip


def _stratified_order(rng: np.random.Generator, task: np.ndarray) -> np.ndarray:
    """Each task's pairs shuffled, then the tasks (in a shuffled order) taken in turn, as
    ``labels/queue.py`` orders a run."""
    queues = [list(rng.permutation(np.flatnonzero(task == t))) for t in rng.permutation(len(TASKS))]
    order = []
    while any(queues):
        order += [queue.pop() for queue in queues if queue]
    return np.array(order)


def active_scan(
    rng: np.random.Generator, run: Run, **knobs: float
) -> tuple[np.ndarray, np.ndarray]:
    """The pairs the active queue asks for, in the order it asks, and every pair's π
    (``knobs``: another floor or middle than the module's, for ``--tune``)."""
    pairs = run.task.size
    chances = [sampling_probability(s, f, pairs=pairs, **knobs) for s, f in OUTCOMES]
    probability = np.asarray(chances)[run.outcome]
    coins = rng.random(pairs)
    return run.order[coins[run.order] < probability[run.order]], probability


def corrected(run: Run, labelled: np.ndarray, probability: np.ndarray | None):
    """The corrected win-rate of ``run`` with the pairs ``labelled`` (indices) labelled,
    weighted by ``probability`` when given."""
    score = np.array([s for s, _ in OUTCOMES])[run.outcome]
    chosen = np.zeros(run.task.size, dtype=bool)
    chosen[labelled] = True
    strata = {}
    for index, task in enumerate(TASKS):
        mine = run.task == index
        lab, rest = mine & chosen, mine & ~chosen
        chances = None if probability is None else probability[lab].tolist()
        strata[task.name] = Stratum(
            run.human[lab],
            score[lab],
            score[rest],
            int(mine.sum()),
            run.case[rest].tolist(),
            run.case[lab].tolist(),
            chances,
        )
    return corrected_win_rate(strata)


@dataclass(frozen=True)
class Row:
    labels: int
    coverage: tuple[float, float]  # uniform, active
    width: tuple[float, float, float]  # mean: uniform, uniform weighted (all π 1), active
    active_labels: tuple[float | None, float | None]  # for uniform's two widths
    agreement: tuple[float, float]  # share of labelled pairs where judge and human agree
    error: tuple[float, float]  # mean estimate − truth: uniform, active


SCHEMES = ("uniform", "uniform weighted", "active")


def simulate(
    judge: str, *, runs: int, seed: int, labels: Sequence[int] = LABELS, **knobs: float
) -> list[Row]:
    """Per label count: both schemes' coverage of the truth, mean width, and the labels
    active sampling needs for uniform's width, over ``runs`` seeded runs. "uniform
    weighted" is uniform sampling read by the weighted estimator with every π 1: what the
    estimator alone changes."""
    human_given, target = JUDGES[judge], truth(JUDGES[judge])
    counts = sorted({round(n * g) for n in labels for g in GRID} | set(labels))
    hits = {scheme: dict.fromkeys(counts, 0) for scheme in SCHEMES}
    widths = {scheme: dict.fromkeys(counts, 0.0) for scheme in SCHEMES}
    agree = dict.fromkeys(SCHEMES, 0.0)
    error = {scheme: dict.fromkeys(counts, 0.0) for scheme in SCHEMES}
    for number in range(runs):
        rng = np.random.default_rng([seed, number])
        run = draw_run(rng, human_given)
        asked, probability = active_scan(rng, run, **knobs)
        if asked.size < max(counts):
            raise ValueError(f"the active queue holds {asked.size} pairs, not {max(counts)}")
        for n in counts:
            schemes = [("active", asked[:n], probability)]
            if n in labels:
                ones = np.ones(run.task.size)
                schemes += [("uniform", run.order[:n], None),
                            ("uniform weighted", run.order[:n], ones)]  # fmt: skip
            for scheme, labelled, weights in schemes:
                figure = corrected(run, labelled, weights)
                low, high = figure.ci
                hits[scheme][n] += low <= target <= high
                error[scheme][n] += (figure.win_rate - target) / runs
                widths[scheme][n] += (high - low) / runs
        middle = labels[len(labels) // 2]
        agree["uniform"] += _agreement(run, run.order[:middle]) / runs
        agree["active"] += _agreement(run, asked[:middle]) / runs
    return [
        Row(n, (hits["uniform"][n] / runs, hits["active"][n] / runs),
            (widths["uniform"][n], widths["uniform weighted"][n], widths["active"][n]),
            (_labels_for(widths["uniform"][n], widths["active"]),
             _labels_for(widths["uniform weighted"][n], widths["active"])),
            (agree["uniform"], agree["active"]), (error["uniform"][n], error["active"][n]))
        for n in labels
    ]  # fmt: skip


def _agreement(run: Run, labelled: np.ndarray) -> float:
    """The share of labelled pairs where the judge's category (above ½, ½, below ½) is the
    human's: what kappa's agreement counts."""
    score = np.array([s for s, _ in OUTCOMES])[run.outcome[labelled]]
    return float(np.mean(np.sign(score - 0.5) == np.sign(run.human[labelled] - 0.5)))


def _labels_for(width: float, active: dict[int, float]) -> float | None:
    """The labels at which active sampling's mean width is ``width``: width² is about
    a + b/labels, so interpolated linearly in 1/labels between the grid's two nearest
    counts; None outside the grid."""
    counts = sorted(active)
    for low, high in zip(counts, counts[1:], strict=False):
        if active[high] <= width <= active[low]:
            x0, x1, y0, y1 = 1 / low, 1 / high, active[low] ** 2, active[high] ** 2
            inverse = x0 + (width**2 - y0) * (x1 - x0) / (y1 - y0) if y1 != y0 else x0
            return 1 / inverse
    return None


def print_table(judge: str, rows: list[Row], out=print) -> list[str]:
    """The Markdown table for one judge; returns the verdicts (ok / MISS)."""
    out(f"\n{judge} (true human win-rate {truth(JUDGES[judge]):.3f})\n")
    out("| labels | coverage uniform | coverage active | width uniform | width uniform, "
        "weighted | width active | active labels for uniform's width | saving | saving by "
        "the sampling alone | targets |")  # fmt: skip
    out("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    verdicts = []
    for row in rows:
        covered = min(row.coverage) >= COVERAGE_TARGET
        needed, alone = row.active_labels
        saving = None if needed is None else 1 - needed / row.labels
        saved = saving is not None and saving >= SAVING_TARGET
        verdicts += ["ok" if covered else "MISS", "ok" if saved else "MISS"]
        out(
            f"| {row.labels} | {row.coverage[0]:.1%} | {row.coverage[1]:.1%} | "
            + " | ".join(f"{width:.3f}" for width in row.width)
            + f" | {_count(needed)} | {_share(saving)} | "
            f"{_share(None if alone is None else 1 - alone / row.labels)} | "
            f"coverage {verdicts[-2]}, saving ≥ {SAVING_TARGET:.0%} {verdicts[-1]} |"
        )
    errors = ", ".join(f"{row.error[0]:+.4f} / {row.error[1]:+.4f} at {row.labels}" for row in rows)
    out(f"\nmean error of the estimate (uniform / active): {errors}")
    uniform, active = rows[0].agreement
    out(f"judge-human agreement on the labels at {LABELS[len(LABELS) // 2]}: uniform "
        f"{uniform:.1%}, active {active:.1%} (unweighted; kappa weights them by 1/π)")  # fmt: skip
    return verdicts


def _count(value: float | None) -> str:
    return "outside the grid" if value is None else f"{value:.0f}"


def _share(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


@dataclass(frozen=True)
class KappaRow:
    labels: int
    mean: tuple[float, float, float]  # mean kappa: uniform, active unweighted, active weighted
    coverage: tuple[float, float, float]  # of the population kappa by their case intervals


CATEGORY = np.array(["baseline", "tie", "candidate"])  # by the side of ½ a score is on


def _categories(scores: np.ndarray) -> list[str]:
    return CATEGORY[(np.sign(scores - 0.5) + 1).astype(int)].tolist()


def population_kappa(human_given: np.ndarray) -> float:
    """Kappa of the expected human × judge table over every pair of a run: each (outcome,
    human score) weighted by its expected count."""
    judge = _categories(np.array([score for score, _ in OUTCOMES]))
    mass = sum(task.cases * np.asarray(task.shares)[:, None] * human_given for task in TASKS)
    cells = [(h, judge[o], mass[o, i]) for o in range(len(OUTCOMES))
             for i, h in enumerate(_categories(HUMAN_SCORES)) if mass[o, i] > 0]  # fmt: skip
    humans, judges, weights = zip(*cells, strict=True)
    return cast(float, cohen_kappa(humans, judges, weights=weights).kappa)


def simulate_kappa(
    judge: str, *, runs: int, seed: int, labels: Sequence[int] = LABELS
) -> list[KappaRow]:
    """Per label count, over the runs :func:`simulate` draws: each scheme's mean kappa of
    its labels and its case interval's coverage of :func:`population_kappa`."""
    human_given = JUDGES[judge]
    target, score = population_kappa(human_given), np.array([s for s, _ in OUTCOMES])
    means = {n: np.zeros(3) for n in labels}
    hits = {n: np.zeros(3) for n in labels}
    for number in range(runs):
        rng = np.random.default_rng([seed, number])
        run = draw_run(rng, human_given)
        asked, probability = active_scan(rng, run)
        humans, judges = np.array(_categories(run.human)), np.array(_categories(score[run.outcome]))
        for n in labels:
            schemes = ((run.order[:n], None), (asked[:n], None),
                       (asked[:n], (1 / probability[asked[:n]]).tolist()))  # fmt: skip
            for at, (labelled, weights) in enumerate(schemes):
                h, j = humans[labelled].tolist(), judges[labelled].tolist()
                means[n][at] += cast(float, cohen_kappa(h, j, weights=weights).kappa) / runs
                ci = case_interval(
                    h, j, run.case[labelled].astype(str).tolist(), weights=weights
                ).ci
                hits[n][at] += ci is not None and ci[0] <= target <= ci[1]
    return [KappaRow(n, _three(means[n]), _three(hits[n] / runs)) for n in labels]


def _three(values: np.ndarray) -> tuple[float, float, float]:
    first, second, third = (float(value) for value in values)
    return first, second, third


def print_kappa(judge: str, rows: list[KappaRow], out=print) -> None:
    """The kappa table for one judge."""
    out(f"\n{judge}: kappa (population {population_kappa(JUDGES[judge]):.3f})\n")
    out("| labels | mean uniform | mean active, unweighted | mean active, weighted 1/π | "
        "coverage uniform | coverage active, unweighted | coverage active, weighted |")  # fmt: skip
    out("|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        out(f"| {row.labels} | " + " | ".join(f"{m:.3f}" for m in row.mean) + " | "
            + " | ".join(f"{c:.1%}" for c in row.coverage) + " |")  # fmt: skip


def tune(runs: int, seed: int, labels: int = 120) -> None:
    """How many labels active sampling needs for uniform's width at ``labels``, per floor
    and middle: how FLOOR and MIDDLE were chosen."""
    print(f"\nlabels active sampling needs for uniform's width at {labels} ({runs} runs)\n")
    print("| judge | floor | middle 0 | middle 0.25 | middle 0.5 | middle 1 |\n|---|---:|"
          + "---:|" * 4)  # fmt: skip
    for judge in JUDGES:
        for floor in (0.1, 0.2, 0.3, 0.5, 0.7):
            cells = [simulate(judge, runs=runs, seed=seed, labels=(labels,), floor=floor,
                              middle=middle)[0].active_labels[0]
                     for middle in (0.0, 0.25, 0.5, 1.0)]  # fmt: skip
            print(f"| {judge} | {floor} | {' | '.join(_count(cell) for cell in cells)} |")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--seed", type=int, default=33)
    parser.add_argument("--strict", action="store_true", help="exit 1 on a MISS")
    parser.add_argument("--tune", action="store_true", help="the floor x middle grid only")
    args = parser.parse_args(argv)
    if args.tune:
        tune(args.runs, args.seed)
        return 0
    print(f"active vs uniform labels: {args.runs} runs, seed {args.seed}, 95% intervals")
    verdicts = []
    for judge in JUDGES:
        verdicts += print_table(judge, simulate(judge, runs=args.runs, seed=args.seed))
        print_kappa(judge, simulate_kappa(judge, runs=args.runs, seed=args.seed))
    return 1 if args.strict and "MISS" in verdicts else 0


if __name__ == "__main__":
    sys.exit(main())
