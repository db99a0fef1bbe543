"""What the engine benchmark measured, each figure against its target (SPEC §17, issue 14)."""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field

from fanout import FanOutResult, ProcessFanOut
from paths import EngineResult
from startup import StartupResult

ANSWER_TARGETS = {8: 1.05, 64: 1.15, 256: 1.5}  # SPEC §17, wall ÷ ideal
PIPELINE_TARGET = 1.25
MEMORY_TARGET_MB = 400.0
# Issue 31: the whole `evalsite run` process, spawn to exit, for 4,000 answers of 200 ms.
PROCESS_ANSWERS = 4000
PROCESS_TARGETS = {("answers", 64): 1.15, ("answers", 256): 1.5, ("pipeline", 64): 1.25}
FAKE_TARGET_S = 2.0  # `evalsite run --fake` of 4,000 answers, no judge, end to end
PHASE_TARGET_S = 5.0  # issue 31, evalsite run of the memory run: planned and stored, and
# scored and reported, each in 5 s


@dataclass
class Measurement:
    """One engine run measured against its ideal: ``calls × latency ÷ C``."""

    part: str  # answers / pipeline
    concurrency: int
    latency_s: float
    engine: EngineResult
    target: float | None = None

    @property
    def calls(self) -> int:
        return self.engine.answers + (self.engine.judge_calls if self.part == "pipeline" else 0)

    @property
    def ideal_s(self) -> float:
        return self.calls * self.latency_s / self.concurrency

    @property
    def wall_s(self) -> float | None:
        return self.engine.answers_s if self.part == "answers" else self.engine.done_s

    @property
    def ratio(self) -> float | None:
        wall = self.wall_s
        return None if wall is None or not self.ideal_s else wall / self.ideal_s

    @property
    def failed(self) -> bool:
        e = self.engine
        return e.errors > 0 or e.timed_out or e.status != "done" or bool(e.returncode)

    @property
    def verdict(self) -> str:
        if self.failed:
            return "FAIL"
        return mark(self.ratio, self.target)

    @property
    def process_ratio(self) -> float | None:
        """`evalsite run` from spawn to exit ÷ ideal: the figure a user waits for."""
        wall = self.engine.process_wall_s
        return None if wall is None or not self.ideal_s else wall / self.ideal_s

    @property
    def process_target(self) -> float | None:
        if self.engine.path != "cli" or self.engine.answers != PROCESS_ANSWERS:
            return None
        return PROCESS_TARGETS.get((self.part, self.concurrency))

    @property
    def process_verdict(self) -> str:
        return "FAIL" if self.failed else mark(self.process_ratio, self.process_target)

    @property
    def cpu_ms_per_call(self) -> float | None:
        """CPU of the engine processes per call: the answer phase's for answers, the whole
        run's (scoring, judging, reporting included) for the pipeline."""
        cpu = self.engine.cpu_answers_s if self.part == "answers" else self.engine.cpu_run_s
        return cpu / self.calls * 1000 if self.calls else None


@dataclass
class MemoryResult:
    path: str
    engine: EngineResult
    planner_rss_mb: float | None = None  # worker path: this process planned and stored it

    @property
    def processes(self) -> dict[str, float]:
        found = dict(self.engine.peak_rss_mb)
        if self.planner_rss_mb is not None:
            found["planner (this bench)"] = self.planner_rss_mb
        return found

    @property
    def verdict(self) -> str:
        if self.engine.errors or self.engine.timed_out or self.engine.status != "done":
            return "FAIL"
        return mark(max(self.processes.values(), default=math.inf), MEMORY_TARGET_MB)

    @property
    def planned_and_stored_s(self) -> float | None:
        """evalsite run: from its spawn to the run's started_at or its last answer row
        stored, whichever is later (start-up, the suite read, planned and its rows stored:
        the rest of them beside the first calls); None on the worker path, which plans in
        the bench."""
        e = self.engine
        if e.path != "cli" or e.plan_s is None or e.store_s is None:
            return None
        return e.plan_s + e.store_s

    @property
    def scored_and_reported_s(self) -> float | None:
        """evalsite run: from the last answer stored to the run's finished_at (the answers
        scored, the report written); None on the worker path."""
        e = self.engine
        if e.path != "cli" or e.answers_s is None or e.done_s is None:
            return None
        return e.done_s - e.answers_s

    def phase_verdicts(self) -> dict[str, str]:
        """The two phase targets of evalsite run's memory run, by name (none for workers)."""
        if self.engine.path != "cli":
            return {}
        return {
            "memory cli planned and stored": mark(self.planned_and_stored_s, PHASE_TARGET_S),
            "memory cli scored and reported": mark(self.scored_and_reported_s, PHASE_TARGET_S),
        }


@dataclass
class FakeRuns:
    """`evalsite run SUITE --fake --no-cache` of the bench's suite, spawn to exit, n times."""

    answers: int
    walls_s: list[float] = field(default_factory=list)
    cpus_s: list[float] = field(default_factory=list)
    max_rss_mb: float = 0.0
    failures: list[str] = field(default_factory=list)

    @property
    def median_s(self) -> float | None:
        return statistics.median(self.walls_s) if self.walls_s else None

    @property
    def target_s(self) -> float | None:
        return FAKE_TARGET_S if self.answers == PROCESS_ANSWERS else None

    @property
    def verdict(self) -> str:
        return "FAIL" if self.failures else mark(self.median_s, self.target_s)


@dataclass
class Results:
    config: dict
    answers: list[Measurement] = field(default_factory=list)
    pipeline: list[Measurement] = field(default_factory=list)
    fan_outs: dict[int, dict[str, FanOutResult]] = field(default_factory=dict)
    process_fan_outs: dict[int, ProcessFanOut] = field(default_factory=dict)
    fake: FakeRuns | None = None
    startup: list[StartupResult] = field(default_factory=list)
    memory: list[MemoryResult] = field(default_factory=list)
    worker_rss_mb: dict[str, float] = field(default_factory=dict)

    def verdicts(self) -> dict[str, str]:
        """Each target's verdict (ok, MISS, FAIL for a run that did not end well) by name."""
        found = {
            f"{m.part} {m.engine.path} C={m.concurrency}": m.verdict
            for m in (*self.answers, *self.pipeline)
        }
        found |= {
            f"whole process {m.part} cli C={m.concurrency}": m.process_verdict
            for m in (*self.answers, *self.pipeline)
            if m.process_target is not None
        }
        if self.fake is not None:
            found[f"run --fake of {self.fake.answers} answers"] = self.fake.verdict
        found |= {s.command: mark(s.median_s, s.target_s) for s in self.startup}
        found |= {f"memory {m.path}": m.verdict for m in self.memory}
        return found | {name: v for m in self.memory for name, v in m.phase_verdicts().items()}

    def as_json(self) -> dict:
        """Every figure: the measured fields and what the tables compute from them."""
        data = asdict(self)
        for key in ("answers", "pipeline"):
            for item, m in zip(data[key], getattr(self, key), strict=True):
                item |= {"calls": m.calls, "ideal_s": m.ideal_s, "wall_s": m.wall_s,
                         "ratio": m.ratio, "verdict": m.verdict,
                         "process_ratio": m.process_ratio,
                         "process_verdict": m.process_verdict,
                         "cpu_ms_per_call": m.cpu_ms_per_call}  # fmt: skip
        latency_s = self.config["latency_ms"] / 1000
        for level, clients in data["fan_outs"].items():
            for item in clients.values():
                item["ratio"] = item["wall_s"] / (item["requests"] * latency_s / level)
        for level, item in data["process_fan_outs"].items():
            item["ratio"] = item["process_wall_s"] / (item["requests"] * latency_s / level)
        if self.fake is not None:
            data["fake"] |= {"median_s": self.fake.median_s, "verdict": self.fake.verdict}
        for item, s in zip(data["startup"], self.startup, strict=True):
            item |= {"median_s": s.median_s, "median_cpu_s": s.median_cpu_s,
                     "verdict": mark(s.median_s, s.target_s)}  # fmt: skip
        for item, m in zip(data["memory"], self.memory, strict=True):
            item |= {"processes_rss_mb": m.processes, "verdict": m.verdict,
                     "planned_and_stored_s": m.planned_and_stored_s,
                     "scored_and_reported_s": m.scored_and_reported_s}  # fmt: skip
        return data | {"verdicts": self.verdicts()}


def mark(value: float | None, target: float | None) -> str:
    if target is None or value is None:
        return ""
    return "ok" if value <= target else "MISS"
