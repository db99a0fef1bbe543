"""A finished run of a given size, written straight to the database, for page benchmarks.

    .venv/bin/python bench/generate_run.py [--pairs 10000] [--seed 0]

It makes no provider call and runs no worker: it writes the rows a finished fake run would
have, then builds the report the way the app does. In the data dir of ``EVALSITE_DATA_DIR``
(migrated first if needed), it creates:

1. a suite version (``bench-pages-<pairs>``, registered like an upload) with 20 tasks, each
   with a JSON schema, two contestants ``fake/a`` (the baseline) and ``fake/b``, a judge
   ``fake/judge`` and ``repeats:``; pairs = cases × repeats, with repeats the largest divisor
   of ``--pairs`` up to 10 (10,000 pairs: 20 tasks × 50 cases × 10 repeats);
2. the shipped price table, active (``PriceTable.objects.ensure_default``);
3. a Run in status "reporting" with ``options={"fake": True}``;
4. one Answer per (task, case, contestant, repeat), done and scored: a JSON text of a few
   hundred characters, about 3 % parse_fail and 3 % schema_fail, tokens, cost and latency;
5. one Pair per (task, case, repeat), excluded (``evalsite.core.judging.exclusion_reason``)
   when an answer failed, else scored from two judge verdicts with
   ``evalsite.core.stats.pairs.pair_score``;
6. two Judgements per included pair (order 1 and 2) with the judge's request (built by
   ``evalsite.core.judging.judge_messages``), verdict and rationale;
7. the report, with ``runs.results.reporting.write_report`` (stored on the run and written under
   ``REPORTS_DIR``), then ``run.finish("done")``.

Rows are written as they are made, in batches of 2,000 (each its own transaction), with the
engine's prepared-statement writer ``runs.models.rows.insert_each``; what the later rows need
of the earlier ones (the answers' texts, the ids) is kept in plain dicts, not model objects.
At 100,000 pairs that took 70 to 94 s, with a peak RSS of 363 MB before the report and 622
MB once ``write_report`` had read the run back (``bulk_create`` of model objects kept in
lists: 196 s, and 1.6 GB for the benchmark's process). The answers and verdicts are random
but seeded (``--seed``; the suite is the same for every seed, so runs of one size share a
suite version and each later run's report has a previous run to compare with; the same seed
gives the same run as before this writer), and each task leans its own way so the per-task
tables differ. Timings of each step and the peak RSS so far are printed.
``generate_run()`` is the same thing for a caller that has already set up Django.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import itertools
import json
import os
import random
import resource
import sys
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BATCH = 2000
TASKS = 20
MAX_REPEATS = 10
CONTESTANTS = ("fake/a", "fake/b")  # baseline first
JUDGE = "fake/judge"
PARSE_FAIL_RATE = 0.03
SCHEMA_FAIL_RATE = 0.03

TASK_KINDS = ("extract", "classify", "rewrite", "summarise", "explain")
TOPICS = (
    "invoice", "refund", "login", "sso", "export", "billing", "outage", "webhook", "quota",
    "api-key-rotation", "seat-count", "dark-mode", "search", "import", "mobile", "calendar",
    "permissions", "audit-log", "backup", "integrations",
)  # fmt: skip
CUSTOMERS = (
    "Ada Lovelace", "Grace Hopper", "Alan Turing", "Katherine Johnson", "Edsger Dijkstra",
    "Barbara Liskov", "Donald Knuth", "Frances Allen", "Ken Thompson", "Radia Perlman",
    "Margaret Hamilton", "John Backus", "Hedy Lamarr", "Tim Berners-Lee", "Annie Easley",
)  # fmt: skip
PLANS = ("Starter", "Team", "Business")
SENTENCES = (
    "The customer reports that the {topic} page stops loading after the last update.",
    "They were charged twice for the {plan} plan on the same day and want the extra charge back.",
    "Three people on the team cannot sign in since the identity provider changed its certificate.",
    "The export finishes but the file is missing every comment added after Monday.",
    "They ask whether the {plan} plan includes the audit log or only the Business plan does.",
    "A webhook to their ticketing system returns 410 and the retries fill the event log.",
    "The mobile app shows an empty list although the web app shows forty open tasks.",
    "Search results leave out documents that were moved between workspaces this week.",
    "The invoice lists a seat count of 18 but the admin console shows 14 active members.",
    "They want to know how to restore a page that a former colleague deleted last month.",
    "The calendar integration duplicates every recurring meeting into two tasks.",
    "Their quota warning appears at 60 % instead of 90 % as the documentation says.",
)
NEXT_STEPS = (
    "Ask for the workspace id and the time of the failure, then escalate to on-call.",
    "Refund the duplicate charge and confirm by email within one business day.",
    "Send the article on restoring deleted pages from the trash (kept for 90 days).",
    "Open a bug with the steps to reproduce and link the customer's ticket.",
    "Explain the plan difference plainly and offer a trial of the Business plan.",
    "Ask the admin to re-upload the identity provider metadata and retry the sign-in.",
)
RATIONALES = (
    "Answer {w} copies the amounts and the ticket number exactly and says what happens next; "
    "Answer {l} leaves out the date the customer gave.",
    "Both answers classify the ticket the same way, but Answer {w} states the severity with "
    "the reason from the ticket, while Answer {l} guesses.",
    "Answer {l} invents a refund policy that the task does not mention. Answer {w} sticks to "
    "the facts in the input and is shorter.",
    "Answer {w} is what a support lead would send without editing; Answer {l} uses internal "
    "jargon the customer would not understand.",
)
TIE_RATIONALE = (
    "Both answers extract the same fields with the same values and give the same next step; "
    "neither is clearly better."
)
# Per task: probabilities of the judge's side for one order, (baseline, tie, candidate).
SIDES = ("baseline", "tie", "candidate")
AGREE_RATE = 0.75  # how often the second order repeats the first order's side
LEANS = ((0.55, 0.15, 0.30), (0.35, 0.2, 0.45), (0.25, 0.15, 0.60), (0.40, 0.25, 0.35))


@dataclass
class Timings:
    steps: list[tuple[str, float]] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)

    def step(self, name: str) -> None:
        now = time.perf_counter()
        self.steps.append((name, now - self.started))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024  # KiB on Linux
        print(f"  {name}: {now - self.started:.2f}s (peak RSS so far {peak} MB)", flush=True)
        self.started = now


def shape(pairs: int) -> tuple[int, int]:
    """(cases in all, repeats) with cases × repeats == pairs: repeats is the largest divisor
    of `pairs` up to MAX_REPEATS."""
    if pairs < 1:
        raise ValueError("pairs must be >= 1")
    repeats = max(r for r in range(1, MAX_REPEATS + 1) if pairs % r == 0)
    return pairs // repeats, repeats


def case_counts(cases: int, tasks: int = TASKS) -> list[int]:
    """`cases` spread over at most `tasks` tasks, as evenly as possible."""
    tasks = min(tasks, cases)
    return [cases // tasks + (1 if n < cases % tasks else 0) for n in range(tasks)]


def task_id(n: int) -> str:
    return f"t{n + 1:02d}-{TOPICS[n % len(TOPICS)]}"


def suite_text(pairs: int) -> str:
    """The suite's YAML: 20 tasks with a schema each, fake/a vs fake/b, judged by fake/judge.
    The same for every seed, so runs of one size are runs of one suite version."""
    cases, repeats = shape(pairs)
    rng = random.Random(f"suite-{pairs}")
    lines = [
        f"suite: bench-pages-{pairs}",
        "version: 1",
        "description: >-",
        f"  A generated suite for the page benchmark (bench/pages.py): {pairs} pairs.",
        "defaults: {temperature: 0, max_tokens: 700, timeout_s: 60}",
        f"models: [{', '.join(CONTESTANTS)}]",
        f"repeats: {repeats}",
        "judge:",
        f"  model: {JUDGE}",
        "  rubric: Prefer the answer a support lead would send without editing.",
        "  calibration: {min_kappa: 0.40, min_labels: 10, on_below_floor: flag}",
        "tasks:",
    ]
    labels = []
    for n, count in enumerate(case_counts(cases)):
        tid, kind = task_id(n), TASK_KINDS[n % len(TASK_KINDS)]
        lines += [
            f"  - id: {tid}",
            f"    kind: {kind}",
            f"    tags: [{kind}, {'customer' if n % 2 else 'internal'}]",
            "    prompt: |",
            f"      Read this {TOPICS[n % len(TOPICS)]} ticket from {{{{customer}}}} on the",
            "      {{plan}} plan and return JSON only: a summary, a category and the next step.",
            "      Ticket: {{ticket}}",
            "    schema:",
            "      type: object",
            "      required: [summary, category, next_step]",
            "      properties:",
            "        summary: {type: string}",
            "        category: {enum: [billing, bug, account-access, feature-request, how-to]}",
            "        next_step: {type: string}",
            "        confidence: {type: number}",
        ]
        if n % 2:
            lines += ["    checks:", "      - {max_chars: 2000}"]
        lines.append("    cases:")
        for c in range(count):
            ticket = rng.choice(SENTENCES).format(topic=TOPICS[n % len(TOPICS)], plan="Team")
            customer, plan = rng.choice(CUSTOMERS), rng.choice(PLANS)
            tags = "[hard]" if c % 5 == 0 else "[easy]"
            names = f"customer: {json.dumps(customer)}, plan: {plan}"
            lines.append(
                f"      - {{id: c{c + 1:04d}, tags: {tags}, "
                f"vars: {{{names}, ticket: {json.dumps(ticket)}}}}}"
            )
            if c < 2:
                prefer = rng.choice(("baseline", "candidate", "tie"))
                labels.append(
                    f"  - {{task: {tid}, case: c{c + 1:04d}, baseline: {CONTESTANTS[0]}, "
                    f"candidate: {CONTESTANTS[1]}, prefer: {prefer}, labeller: bench}}"
                )
    return "\n".join(lines + ["labels:", *labels]) + "\n"


def _hash(*parts) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _answer_text(rng: random.Random, verdict: str, topic: str, plan: str) -> str:
    summary = " ".join(
        rng.choice(SENTENCES).format(topic=topic, plan=plan) for _ in range(rng.randint(2, 4))
    )
    category = rng.choice(("billing", "bug", "account-access", "feature-request", "how-to"))
    step = rng.choice(NEXT_STEPS)
    if verdict == "parse_fail":
        return f"Sure! Here is the summary you asked for.\n\n{summary}\n\nNext: {step}"
    body = {"summary": summary, "category": category, "next_step": step}
    if verdict == "schema_fail":
        body.pop("next_step")
        body["category"] = "other"
    else:
        body["confidence"] = round(rng.uniform(0.5, 0.99), 2)
    return json.dumps(body, indent=2, ensure_ascii=False)


def generate_run(pairs: int = 10_000, *, seed: int = 0) -> str:
    """Write a finished run of `pairs` pairs (fake/b against fake/a) and its report; return
    the run id. Django must be set up."""
    from django.utils import timezone

    from evalsite.core.suites import parse_suite
    from runs.models import PriceTable, Run, SuiteVersion
    from runs.planning.planner import new_run_id
    from runs.results.reporting import write_report

    timings = Timings()
    rng = random.Random(seed)
    text = suite_text(pairs)
    loaded = parse_suite(text.encode(), filename=f"bench-pages-{pairs}.yaml", origin="upload")
    version, _ = SuiteVersion.objects.register(loaded, text, origin="upload")
    PriceTable.objects.ensure_default()
    table = PriceTable.objects.active() or PriceTable.objects.order_by("-pk").first()
    timings.step(f"suite {loaded.name} ({len(loaded.tasks)} tasks, {len(text):,} bytes)")

    started = timezone.now() - dt.timedelta(minutes=30)
    run = Run.objects.create(
        id=new_run_id(version.sha256, list(CONTESTANTS)),
        suite_version=version,
        contestants=list(CONTESTANTS),
        judge={"model": JUDGE},
        repeats=loaded.repeats,
        price_table=table,
        options={"fake": True, "no_cache": False, "replies": "", "only": "", "concurrency": 8},
        label=f"bench-pages-{pairs}",
        status=Run.Status.REPORTING,
        cap_usd=Decimal("100"),
        started_at=started,
        phase_at=timezone.now(),
    )
    timings.step(f"run {run.id}")

    answers = _store_answers(run, loaded, rng, started)
    timings.step(f"{len(answers.texts):,} answers built and stored")
    sides_of = _store_pairs(run, loaded, rng, answers)
    timings.step(f"{len(sides_of):,} pairs built and stored")
    spent_judge, stored = _store_judgements(run, loaded, rng, answers, sides_of)
    Run.objects.filter(pk=run.pk).update(
        spent_answers_usd=answers.spent, spent_judge_usd=spent_judge, uncached_usd=0
    )
    run.refresh_from_db()
    timings.step(f"{stored:,} judgements built and stored")
    del answers, sides_of  # the texts and ids: the report reads the rows again

    report = write_report(run)
    timings.step("report written (runs.results.reporting.write_report)")
    run.finish(Run.Status.DONE)
    timings.step("run finished")
    total = sum(seconds for _, seconds in timings.steps)
    totals = report.get("totals", {})
    print(
        f"run {run.id}: {totals.get('answers')} answers, {totals.get('pairs')} pairs, "
        f"{totals.get('judge_calls')} judge calls, cost ${totals.get('cost_usd', 0):.4f} "
        f"(simulated {totals.get('simulated')}); {total:.1f}s in all",
        flush=True,
    )
    return run.id


@dataclass
class StoredAnswers:
    """What the pairs and judgements need of the stored answers: by (task, case, repeat,
    contestant) each answer's text and schema verdict, and its id; by (task, case) the
    baseline's last prompt message (what the judge is shown of the task)."""

    texts: dict[tuple, tuple[str, str]] = field(default_factory=dict)
    ids: dict[tuple, int] = field(default_factory=dict)
    prompts: dict[tuple[str, str], str] = field(default_factory=dict)
    spent: Decimal = Decimal(0)


def _store(model, rows) -> int:
    """Insert `rows` (dicts of field values) in batches of BATCH, each batch in its own
    transaction, with the engine's prepared-statement writer: bulk_create spent most of its
    time building SQL, and a list of every row of a 100,000-pair run took gigabytes."""
    from django.db import transaction

    from runs.models.rows import insert_each

    count = 0
    for batch in itertools.batched(rows, BATCH):
        with transaction.atomic():
            count += insert_each(model, batch)
    return count


def _store_answers(run, loaded, rng: random.Random, started: dt.datetime) -> StoredAnswers:
    """One Answer per (task, case, repeat, contestant), done and scored."""
    from evalsite.core.suites import render_messages
    from runs.models import Answer

    stored = StoredAnswers()

    def rows():
        for task in loaded.tasks:
            for case in task.cases:
                prompts = {
                    c: render_messages(loaded, task.id, case.id, _contestant(c))
                    for c in CONTESTANTS
                }
                stored.prompts[task.id, case.id] = prompts[CONTESTANTS[0]][-1]["content"]
                for repeat in range(loaded.repeats):
                    for contestant in CONTESTANTS:
                        row = _answer_row(run, task, case, repeat, contestant, prompts, rng)
                        row["finished_at"] = started + dt.timedelta(
                            milliseconds=len(stored.texts) * 50
                        )
                        stored.spent += row["cost_usd"]
                        key = (task.id, case.id, repeat, contestant)
                        stored.texts[key] = (row["text"], row["schema_verdict"])
                        yield row

    _store(Answer, rows())
    fields = ("task_id", "case_id", "repeat", "contestant", "pk")
    for *key, pk in Answer.objects.filter(run=run).values_list(*fields).iterator(BATCH):
        stored.ids[tuple(key)] = pk
    return stored


def _answer_row(run, task, case, repeat: int, contestant: str, prompts, rng) -> dict:
    from django.utils import timezone

    from runs.models import Answer

    topic = task.id.split("-", 1)[1]
    plan = str(case.vars.get("plan", "Team"))
    roll = rng.random()
    verdict = (
        "parse_fail"
        if roll < PARSE_FAIL_RATE
        else "schema_fail"
        if roll < PARSE_FAIL_RATE + SCHEMA_FAIL_RATE
        else "pass"
    )
    answer_text = _answer_text(rng, verdict, topic, plan)
    messages = prompts[contestant]
    request = {
        "model": contestant,
        "messages": messages,
        "temperature": 0,
        "max_tokens": 700,
        "schema": task.schema,
        "task_id": task.id,
        "case_id": case.id,
        "repeat": repeat,
    }
    tokens_in = sum(len(m["content"]) for m in messages) // 4
    tokens_out = len(answer_text) // 4
    cost = Decimal(tokens_in * 150 + tokens_out * 600) / Decimal(10**9)
    checks = [{"kind": "max_chars", "passed": True, "note": None}] if task.checks else []
    return {
        "run_id": run.pk,
        "task_id": task.id,
        "case_id": case.id,
        "repeat": repeat,
        "contestant": contestant,
        "status": Answer.Status.DONE,
        "attempts": 1,
        "request": request,
        "request_hash": _hash("answer", run.id, request),
        "text": answer_text,
        "finish_reason": "stop",
        "schema_mode": "native" if contestant == CONTESTANTS[0] else "prompted",
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "cached_input_tokens": 0,
        "cost_usd": cost,
        "cost_if_uncached_usd": cost,
        "latency_ms": int(rng.lognormvariate(6.5, 0.4)),
        "cached": False,
        "schema_verdict": verdict,
        "schema_error": (
            ""
            if verdict == "pass"
            else "$: 'next_step' is a required property"
            if verdict == "schema_fail"
            else "not JSON: Expecting value: line 1 column 1 (char 0)"
        ),
        "parsed_json": json.loads(answer_text) if verdict == "pass" else None,
        "checks": {"passed": True, "results": checks, "note": None},
        "checks_passed": True,
        "exec_verdict": "",
        "passed": verdict == "pass",
        "scored_at": timezone.now(),
    }


def _store_pairs(run, loaded, rng: random.Random, answers: StoredAnswers) -> dict[tuple, tuple]:
    """One Pair per (task, case, repeat): excluded when an answer failed, else scored from
    two judge sides. Returns the sides of each included pair by its id."""
    from evalsite.core.judging import exclusion_reason
    from evalsite.core.stats.pairs import pair_score
    from runs.models import Answer, Pair, text_sha

    sides_at: dict[tuple, tuple[str, str] | None] = {}

    def rows():
        for task_n, task in enumerate(loaded.tasks):
            lean = LEANS[task_n % len(LEANS)]
            for case in task.cases:
                for repeat in range(loaded.repeats):
                    keys = [(task.id, case.id, repeat, c) for c in CONTESTANTS]
                    (base, base_verdict), (cand, cand_verdict) = (answers.texts[k] for k in keys)
                    done = Answer.Status.DONE
                    excluded = exclusion_reason(
                        {"status": done, "schema_verdict": base_verdict},
                        {"status": done, "schema_verdict": cand_verdict},
                    )
                    row = {
                        "run_id": run.pk,
                        "task_id": task.id,
                        "case_id": case.id,
                        "repeat": repeat,
                        "baseline_id": answers.ids[keys[0]],
                        "candidate_id": answers.ids[keys[1]],
                        "baseline_contestant": CONTESTANTS[0],
                        "candidate_contestant": CONTESTANTS[1],
                        "baseline_sha": text_sha(base),
                        "candidate_sha": text_sha(cand),
                    }
                    sides = None
                    if excluded:
                        row["excluded_reason"], row["excluded_side"] = excluded
                    else:
                        first = rng.choices(SIDES, weights=lean)[0]
                        again = rng.random() < AGREE_RATE
                        sides = (first, first if again else rng.choices(SIDES, weights=lean)[0])
                        combined = pair_score(*sides)
                        row["score"], row["flip"] = combined.score, combined.flip
                        row["category"] = combined.category
                    sides_at[task.id, case.id, repeat] = sides
                    yield row

    _store(Pair, rows())
    ids = Pair.objects.filter(run=run).values_list("task_id", "case_id", "repeat", "pk")
    pair_of = {(t, c, r): pk for t, c, r, pk in ids.iterator(BATCH)}
    # in the order the pairs were made: the judgements draw from `rng` in that order
    return {(*key, pair_of[key]): sides for key, sides in sides_at.items()}


def _store_judgements(
    run, loaded, rng: random.Random, answers: StoredAnswers, sides_of: dict[tuple, tuple]
) -> tuple[Decimal, int]:
    """Two Judgements per included pair (order 1 and 2); (their cost, how many)."""
    from runs.models import Judgement

    spent = Decimal(0)

    def rows():
        nonlocal spent
        for (task_id, case_id, repeat, pair_id), sides in sides_of.items():
            if sides is None:
                continue
            texts = [answers.texts[task_id, case_id, repeat, c][0] for c in CONTESTANTS]
            prompt = answers.prompts[task_id, case_id]
            where = (task_id, case_id, repeat)
            for order, side in ((1, sides[0]), (2, sides[1])):
                row = _judgement_row(run, loaded, where, pair_id, texts, prompt, order, side, rng)
                spent += row["cost_usd"]
                yield row

    stored = _store(Judgement, rows())
    return spent, stored


def _judgement_row(run, loaded, where, pair_id, texts, prompt, order, side, rng) -> dict:
    from django.utils import timezone

    from evalsite.core.judging import PairSide, judge_messages
    from runs.models import Judgement

    task_id, case_id, repeat = where
    base, cand = PairSide(texts[0]), PairSide(texts[1])
    first, second = (base, cand) if order == 1 else (cand, base)
    messages = judge_messages(prompt, loaded.judge.rubric, first, second)
    winner = _shown(side, order)
    rationale = (
        TIE_RATIONALE
        if winner == "tie"
        else rng.choice(RATIONALES).format(w=winner, l="1" if winner == "2" else "2")
    )
    reply = json.dumps({"reason": rationale, "winner": winner})
    request = {
        "model": JUDGE, "messages": messages, "temperature": 0, "max_tokens": 400,
        "purpose": "judge", "task_id": task_id, "case_id": case_id, "repeat": repeat,
        "order": order,
    }  # fmt: skip
    tokens_in = sum(len(m["content"]) for m in messages) // 4
    cost = Decimal(tokens_in * 300 + len(reply) // 4 * 1200) / Decimal(10**9)
    return {
        "run_id": run.pk, "task_id": task_id, "case_id": case_id, "repeat": repeat,
        "status": Judgement.Status.DONE, "attempts": 1, "request": request,
        "request_hash": _hash("judge", run.id, pair_id, order), "text": reply,
        "finish_reason": "stop", "input_tokens": tokens_in, "output_tokens": len(reply) // 4,
        "cached_input_tokens": 0, "cost_usd": cost, "cost_if_uncached_usd": cost,
        "latency_ms": int(rng.lognormvariate(6.8, 0.3)), "finished_at": timezone.now(),
        "kind": Judgement.Kind.PAIR, "judge_model": JUDGE, "pair_id": pair_id,
        "order": order, "parse_status": Judgement.Parse.OK, "winner": winner, "side": side,
        "rationale": rationale,
    }  # fmt: skip


def _contestant(text: str):
    from evalsite.core.suites import parse_contestant

    return parse_contestant(text)


def _shown(side: str, order: int) -> str:
    """The inverse of evalsite.core.judging.shown_to_side: which answer number won."""
    if side == "tie":
        return "tie"
    baseline_shown = "1" if order == 1 else "2"
    return baseline_shown if side == "baseline" else ("2" if baseline_shown == "1" else "1")


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write a finished run of N pairs.")
    parser.add_argument("--pairs", type=int, default=10_000, help="pairs (cases × repeats)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.pairs < 1:
        parser.error("--pairs must be >= 1")
    if not os.environ.get("EVALSITE_DATA_DIR"):
        print("note: EVALSITE_DATA_DIR is not set; using the default data dir", file=sys.stderr)
    started = time.perf_counter()
    setup_django()
    from django.conf import settings

    from runs.setup import prepare_database

    prepare_database()
    cases, repeats = shape(args.pairs)
    print(
        f"generating {args.pairs:,} pairs ({cases:,} cases x {repeats} repeats) in "
        f"{settings.DATA_DIR} (set-up {time.perf_counter() - started:.2f}s)",
        flush=True,
    )
    run_id = generate_run(args.pairs, seed=args.seed)
    print(run_id)
    return 0


if __name__ == "__main__":
    sys.exit(main())
