"""Plain factory functions for database tests: make_x(**overrides)."""

from __future__ import annotations

import datetime as dt
import io
import itertools
from decimal import Decimal
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management import call_command

from evalsite.core.judging import judge_config
from evalsite.core.stats.pairs import pair_score, score_category
from evalsite.core.suites import parse_suite
from runs.models import (
    Answer,
    Judgement,
    Label,
    Pair,
    Price,
    PriceTable,
    Run,
    SuiteVersion,
    text_sha,
)

_seq = itertools.count(1)

SMALL_SUITE = """\
suite: {name}
version: 1
models: [fake/small, fake/large]
judge: {{model: fake/large}}
tasks:
  - id: greet
    kind: rewrite
    prompt: "Say hello to {{{{who}}}}."
    cases:
      - {{id: one, vars: {{who: Ada}}}}
      - {{id: two, vars: {{who: Grace}}}}
"""


def make_user(**overrides):
    n = next(_seq)
    fields = {"username": f"user{n}", "password": "a-long-test-password"}
    fields.update(overrides)
    password = fields.pop("password")
    user = get_user_model().objects.create_user(**fields)
    user.set_password(password)
    user.save()
    return user


def make_price_table(rows: dict[str, tuple] | None = None, **overrides) -> PriceTable:
    n = next(_seq)
    fields = {"name": f"prices-test-{n}", "pinned": dt.date(2026, 11, 30), "active": False}
    fields.update(overrides)
    table = PriceTable.objects.create(**fields)
    rows = rows if rows is not None else {"fake/small": ("0.10", "0.40"), "fake/large": ("1", "4")}
    for model, (inp, out) in rows.items():
        Price.objects.create(
            table=table, model=model, input_per_mtok=Decimal(inp), output_per_mtok=Decimal(out)
        )
    return table


def small_suite_text(name: str = "tiny") -> str:
    return SMALL_SUITE.format(name=name)


def make_suite_version(text: str | None = None, **overrides) -> SuiteVersion:
    text = text or small_suite_text()
    loaded = parse_suite(text.encode(), filename="tiny.yaml", origin="upload")
    version, _ = SuiteVersion.objects.register(
        loaded, text, origin=overrides.pop("origin", SuiteVersion.Origin.UPLOAD), **overrides
    )
    return version


def make_run(**overrides) -> Run:
    n = next(_seq)
    fields = {
        "id": f"20261130T000000Z_test{n:04d}",
        "contestants": ["fake/small", "fake/large"],
        "cap_usd": Decimal("2.00"),
    }
    fields.update(overrides)
    fields.setdefault("suite_version", make_suite_version())
    fields.setdefault("price_table", make_price_table())
    return Run.objects.create(**fields)


def make_judged_run(
    scores: dict[tuple[str, str], float | list[float]] | None = None,
    *,
    sides: dict[tuple[str, str], tuple[str, str]] | None = None,
    **overrides,
) -> Run:
    """A finished run with one judged pair per (task, case) and repeat, without the engine.

    ``scores`` maps (task, case) to the judge's combined score of the candidate, or to a
    list of scores, one per repeat (default: the small suite's two cases, candidate wins);
    or ``sides`` maps (task, case) to the judge's two verdicts (order 1, order 2), stored
    as Judgement rows. The run's judge configuration is the suite's; a `report` is stored
    so it counts as a finished run with a report."""
    if sides is not None:
        scores = {key: pair_score(*verdicts).score for key, verdicts in sides.items()}
    scores = scores if scores is not None else {("greet", "one"): 1.0, ("greet", "two"): 1.0}
    version = overrides.pop("suite_version", None) or make_suite_version()
    suite = parse_suite(version.yaml_text.encode(), filename="x.yaml", origin="upload")
    repeats = max(len(v) if isinstance(v, list) else 1 for v in scores.values()) if scores else 1
    fields = {
        "status": Run.Status.DONE,
        "judge": judge_config(suite, suite.judge_model) if suite.judge_model else {},
        "repeats": repeats,
        "report": {"headline_eligible": False},
        "contestants": list(suite.models),
    }
    fields |= overrides
    run = make_run(suite_version=version, **fields)
    for (task, case), values in scores.items():
        for repeat, score in enumerate(values if isinstance(values, list) else [values]):
            verdicts = sides.get((task, case)) if sides else None
            make_pair(run, task, case, repeat=repeat, score=score, sides=verdicts)
    return run


def make_answer(run: Run, task: str, case: str, contestant: str, **overrides) -> Answer:
    fields = {
        "repeat": 0,
        "status": Answer.Status.DONE,
        "text": f"{contestant} answers {task}/{case}",
        "request": {},
        "request_hash": f"hash-{next(_seq)}",
        "schema_verdict": "not_applicable",
    }
    fields |= overrides
    return Answer.objects.create(
        run=run, task_id=task, case_id=case, contestant=contestant, **fields
    )


def make_pair(run: Run, task: str, case: str, *, repeat: int = 0, score: float | None = 1.0,
              texts: tuple[str, str] | None = None, sides: tuple[str, str] | None = None,
              **overrides) -> Pair:  # fmt: skip
    """A judged pair of the run's first two contestants (score None: excluded); `texts` are
    the two answers' texts (default: distinct per repeat); `sides`, the judge's verdicts in
    order 1 and 2, stored as its two Judgement rows (and its score, category and flip)."""
    if sides is not None:
        combined = pair_score(*sides)
        score = combined.score
        overrides = {"flip": combined.flip} | overrides
    baseline_model, candidate_model = run.contestants[:2]
    texts = texts or (f"base {task}/{case} #{repeat}", f"cand {task}/{case} #{repeat}")
    baseline = make_answer(run, task, case, baseline_model, repeat=repeat, text=texts[0])
    candidate = make_answer(run, task, case, candidate_model, repeat=repeat, text=texts[1])
    fields = {
        "baseline_sha": text_sha(texts[0]),
        "candidate_sha": text_sha(texts[1]),
        "score": score,
        "category": score_category(score) if score is not None else "",
        "flip": False if score is not None else None,
        "excluded_reason": "" if score is not None else "schema_fail",
    }
    fields |= overrides
    pair = Pair.objects.create(
        run=run, task_id=task, case_id=case, repeat=repeat, baseline=baseline,
        candidate=candidate, baseline_contestant=baseline_model,
        candidate_contestant=candidate_model, **fields,
    )  # fmt: skip
    for order, side in enumerate(sides or (), start=1):
        Judgement.objects.create(
            run=run, task_id=task, case_id=case, repeat=repeat, pair=pair, order=order,
            kind=Judgement.Kind.PAIR, judge_model=run.judge.get("model", "fake/judge"),
            status=Judgement.Status.DONE, request={}, request_hash=f"judge-{next(_seq)}",
            parse_status=Judgement.Parse.OK, side=side, winner=_shown(side, order), text="{}",
        )  # fmt: skip
    return pair


def _shown(side: str, order: int) -> str:
    """The winner as the judge saw it: order 1 shows the baseline as "1", order 2 swaps."""
    if side == "tie":
        return "tie"
    return "1" if (side == "baseline") == (order == 1) else "2"


def make_label(pair: Pair, prefer: str = "candidate", *, labeller=None, **overrides) -> Label:
    """A browser label of `pair`'s content by `labeller` (a user; default a new one)."""
    labeller = labeller or make_user()
    fields = {
        "labeller": labeller,
        "labeller_name": labeller.get_username(),
        "prefer": prefer,
        "source": Label.Source.BROWSER,
    }
    fields |= overrides
    return Label.objects.create(
        suite=pair.run.suite, task_id=pair.task_id, case_id=pair.case_id,
        baseline=pair.baseline_contestant, candidate=pair.candidate_contestant,
        baseline_sha=pair.baseline_sha, candidate_sha=pair.candidate_sha, **fields,
    )  # fmt: skip


def write_scripted_suite(folder: Path, suite: str, replies: str) -> Path:
    """`suite` as folder/suite.yaml beside its replies file (replies.yaml, as the suite's
    `replies:` names it), with the default price table loaded; the suite's path."""
    PriceTable.objects.ensure_default()
    (folder / "suite.yaml").write_text(suite)
    (folder / "replies.yaml").write_text(replies)
    return folder / "suite.yaml"


def write_no_look_suite(folder: Path) -> Path:
    """A one-case no-look suite of one scripted model that passes, written by
    :func:`write_scripted_suite`; its path."""
    suite = (
        "suite: sealed\nversion: 1\nprivacy: {no_look: true}\nmodels: [scripted/a]\n"
        "replies: replies.yaml\ntasks:\n  - id: greet\n    judge: false\n"
        '    prompt: "Greet {{who}}."\n'
        "    cases: [{id: ada, vars: {who: Ada}, checks: [{contains: Ada}]}]\n"
    )
    return write_scripted_suite(folder, suite, "a:\n  greet/ada: [Hello Ada.]\n")


def run_command(*args: str) -> tuple[int, str, str]:
    """A management command's exit code, stdout and stderr (0 when it returns)."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command(*args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exited:
        code = exited.code
    return code, out.getvalue(), err.getvalue()
