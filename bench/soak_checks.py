"""The soak's invariants, checked from the database, the report files and the mock's log of
the calls it answered 200 (what a provider bills). Each check returns the lines of what it
found wrong; an empty list is a check held.

The mock numbers every reply (``mock answer N``, ``… (mock verdict N)``), so a stored call
is traced to the one request that produced it, and the log's ``sha`` (the request body)
shows a call paid more than once.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from database import PRICES

NUMBER = re.compile(r"mock (?:answer|verdict) (\d+)")
NANO = Decimal("0.000000001")
OK_FINAL = {"done", "aborted_over_budget"}


@dataclass
class Paid:
    """The mock's log: each 200 reply by number, and how many times each request was paid."""

    by_number: dict[int, dict] = field(default_factory=dict)
    by_sha: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))

    @classmethod
    def read(cls, path: Path) -> Paid:
        paid = cls()
        if path.exists():
            for line in path.read_text("utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    paid.by_number[row["n"]] = row
                    paid.by_sha[row["sha"]].append(row["n"])
        return paid

    @property
    def twice(self) -> int:
        """Calls paid again for a request already paid for."""
        return sum(len(ns) - 1 for ns in self.by_sha.values())

    def cost(self, n: int) -> Decimal:
        row = self.by_number[n]
        price_in, price_out = (Decimal(p) for p in PRICES[f"mock/{row['model']}"])
        cost = row["prompt_tokens"] * price_in + row["completion_tokens"] * price_out
        return (cost / Decimal(1_000_000)).quantize(NANO)


@dataclass
class Checked:
    failures: dict[str, list[str]] = field(default_factory=dict)
    figures: dict[str, object] = field(default_factory=dict)

    def add(self, name: str, problems: list[str]) -> None:
        self.failures[name] = problems


def check_all(run_ids, paid: Paid, over_cap: dict, bound: int, reports: Path) -> Checked:
    from runs.models import Answer, Judgement, Pair, Run

    runs = {r.pk: r for r in Run.objects.filter(pk__in=run_ids).select_related("suite_version")}
    checked = Checked()
    checked.add("every run reaches a final status", _final(run_ids, runs))
    rows = {
        "answers": list(Answer.objects.filter(run_id__in=run_ids).values(*_ROW)),
        "judge calls": list(
            Judgement.objects.filter(run_id__in=run_ids).values(*_ROW, "pair_id", "order")
        ),
    }
    checked.add(
        "every answer and judge call exists once and finished once", _once(runs, rows, paid, Pair)
    )
    checked.add("spent equals the calls' costs", _spent(runs, rows, paid))
    checked.add("spent + reserved never passed the cap (sampled)", _cap(runs, over_cap))
    checked.add(
        "reserved returns to 0",
        [
            f"{pk}: reserved_usd {r.reserved_usd} at the end"
            for pk, r in runs.items()
            if r.reserved_usd
        ],
    )
    twice = paid.twice
    checked.add(
        "no call paid twice beyond the documented bound",
        []
        if twice <= bound
        else [f"{twice} calls paid twice by the mock's log; the bound for these faults is {bound}"],
    )
    checked.add("report files are whole and agree with the rows", _reports(runs, rows, reports))
    checked.figures = {
        "runs": len(run_ids),
        "statuses": dict(Counter(r.status for r in runs.values())),
        "answers": len(rows["answers"]),
        "judge_calls": len(rows["judge calls"]),
        "paid_calls": len(paid.by_number),
        "paid_twice": twice,
        "paid_twice_bound": bound,
        "errors": sum(r["status"] == "error" for kind in rows.values() for r in kind),
    }
    return checked


_ROW = ("pk", "run_id", "status", "text", "cost_usd", "task_id", "case_id", "repeat")


def _final(run_ids, runs) -> list[str]:
    problems = [f"{pk}: missing" for pk in run_ids if pk not in runs]
    for pk, run in runs.items():
        if run.status not in OK_FINAL:
            problems.append(f"{pk}: {run.status} {run.detail[:300]!r}")
    return problems


def _once(runs, rows, paid: Paid, Pair) -> list[str]:
    problems = []
    seen: dict[int, tuple] = {}
    for kind, found in rows.items():
        for row in found:
            if row["status"] not in ("done", "error") and runs[row["run_id"]].status == "done":
                problems.append(
                    f"{kind[:-1]} {row['pk']} of done run {row['run_id']} is {row['status']}"
                )
            if row["status"] != "done":
                continue
            match = NUMBER.search(row["text"] or "")
            if match is None:
                problems.append(
                    f"{kind[:-1]} {row['pk']}: done with no mock reply ({row['text'][:60]!r})"
                )
                continue
            n = int(match.group(1))
            if n in seen:
                problems.append(f"{kind[:-1]} {row['pk']} holds reply {n}, also held by {seen[n]}")
            seen[n] = (kind, row["pk"])
            if n not in paid.by_number:
                problems.append(f"{kind[:-1]} {row['pk']}: reply {n} is not in the mock's log")
    for pk, run in runs.items():
        if run.status != "done":
            continue
        answers = sum(r["run_id"] == pk for r in rows["answers"])
        expected = run.suite_version.parsed["tasks"][0]["cases"].__len__() * len(run.contestants)
        if answers != expected:
            problems.append(f"{pk}: {answers} answers, expected {expected}")
        # Judged pairs: those not excluded for an answer (judge_error and judge_unparseable
        # are set after both orders were asked).
        included = Pair.objects.filter(
            run_id=pk, excluded_reason__in=["", "judge_error", "judge_unparseable"]
        ).count()
        per_pair = Counter(
            (r["pair_id"], r["order"]) for r in rows["judge calls"] if r["run_id"] == pk
        )
        if len(per_pair) != 2 * included or any(c != 1 for c in per_pair.values()):
            problems.append(
                f"{pk}: {len(per_pair)} judge calls for {included} included pairs: "
                + _pairs_detail(pk, per_pair, Pair)
            )
    return problems


def _pairs_detail(run_id: str, per_pair: Counter, Pair) -> str:
    pairs = {p["pk"]: p for p in Pair.objects.filter(run_id=run_id).values()}
    odd = [
        (pk, order, n)
        for (pk, order), n in per_pair.items()
        if n != 1 or pk not in pairs or pairs[pk]["excluded_reason"]
    ]
    shown = [
        f"pair {pk} order {order} x{n} {pairs.get(pk, {}).get('excluded_reason', 'no pair')!r}"
        for pk, order, n in odd[:5]
    ]
    return f"{len(pairs)} pairs in all; " + "; ".join(shown)


def _spent(runs, rows, paid: Paid) -> list[str]:
    """spent − Σ row costs is what calls cost whose claim was lost before they were written
    (paid, settled, their row redone by another shard): never negative, never more than
    the mock's unrecorded paid calls of that run cost."""
    recorded = {
        int(m.group(1))
        for kind in rows.values()
        for r in kind
        if r["status"] == "done" and (m := NUMBER.search(r["text"] or ""))
    }
    run_of = {}
    for kind in rows.values():
        for r in kind:
            if r["status"] == "done" and (m := NUMBER.search(r["text"] or "")):
                run_of[paid.by_number.get(int(m.group(1)), {}).get("sha")] = r["run_id"]
    unrecorded: dict[str, Decimal] = defaultdict(Decimal)
    for sha, numbers in paid.by_sha.items():
        for n in numbers:
            if n not in recorded:
                unrecorded[run_of.get(sha, "?")] += paid.cost(n)
    problems = []
    for pk, run in runs.items():
        answers = sum(
            (r["cost_usd"] or 0 for r in rows["answers"] if r["run_id"] == pk), Decimal(0)
        )
        judged = sum(
            (r["cost_usd"] or 0 for r in rows["judge calls"] if r["run_id"] == pk), Decimal(0)
        )
        extra = run.spent_answers_usd + run.spent_judge_usd - answers - judged
        if extra < 0:
            problems.append(
                f"{pk}: spent ${run.spent_usd} is less than its calls' ${answers + judged}"
            )
        elif extra > unrecorded.get(pk, Decimal(0)) + NANO * 10:
            problems.append(
                f"{pk}: spent ${run.spent_usd} is ${extra} over its calls' costs, more "
                f"than its paid but unrecorded calls (${unrecorded.get(pk, 0)})"
            )
    return problems


def _cap(runs, over_cap: dict) -> list[str]:
    problems = [f"{pk}: spent + reserved was ${over} over its cap" for pk, over in over_cap.items()]
    for pk, run in runs.items():
        if run.spent_usd > run.cap_usd:
            problems.append(f"{pk}: spent ${run.spent_usd} > cap ${run.cap_usd}")
    return problems


def _reports(runs, rows, reports: Path) -> list[str]:
    problems = []
    for pk, run in runs.items():
        if run.status != "done":
            continue
        folder = reports / run.suite_version.suite.name / pk
        try:
            stored = json.loads((folder / "report.json").read_text("utf-8"))
            answers = (folder / "answers.jsonl").read_text("utf-8").splitlines()
            pairs = (folder / "pairs.jsonl").read_text("utf-8").splitlines()
            html = (folder / "report.html").read_text("utf-8")
            markdown = (folder / "report.md").read_text("utf-8")
        except (OSError, ValueError) as error:
            problems.append(f"{pk}: report files unreadable: {error}")
            continue
        problems += [
            f"{pk}: {p}" for p in _figures(run, stored, answers, pairs, html, markdown, rows)
        ]
    return problems


def _figures(run, stored, answers, pairs, html, markdown, rows) -> list[str]:
    """The report's figures against a count and a sum over the rows."""
    from runs.models import Pair

    mine = [r for r in rows["answers"] if r["run_id"] == run.pk]
    judged = [r for r in rows["judge calls"] if r["run_id"] == run.pk]
    problems = []
    if not html.rstrip().endswith("</html>"):
        problems.append("report.html is cut short")
    if not markdown.strip():
        problems.append("report.md is empty")
    if len(answers) != len(mine) or any(not line.startswith("{") for line in answers):
        problems.append(f"answers.jsonl has {len(answers)} lines for {len(mine)} answers")
    if len(pairs) != Pair.objects.filter(run=run).count():
        problems.append(f"pairs.jsonl has {len(pairs)} lines")
    if stored != run.report:
        problems.append("report.json differs from the report stored on the run")
    answers_usd = sum((r["cost_usd"] or 0 for r in mine), Decimal(0))
    judge_usd = sum((r["cost_usd"] or 0 for r in judged), Decimal(0))
    recomputed = {
        "answers": len(mine),
        "judge_calls": len(judged),
        "pairs": len(pairs),
        "cost_answers_usd": answers_usd,
        "cost_judge_usd": judge_usd,
        "cost_usd": answers_usd + judge_usd,
    }
    totals = stored.get("totals") or {}
    for key, value in recomputed.items():
        if key not in totals:
            problems.append(f"report.json totals has no {key}")
        elif isinstance(value, Decimal):
            if abs(Decimal(str(totals[key])) - value) > Decimal("0.000001"):
                problems.append(f"report {key} {totals[key]} != {value} from the rows")
        elif totals[key] != value:
            problems.append(f"report {key} {totals[key]} != {value} rows")
    return problems
