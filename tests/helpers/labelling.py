"""The judged run the labelling tests label, made from rows (no engine), and a member's
client on its queue: the suite `blind` of two tasks, its pairs' verdicts in a pattern."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from django.test import Client

from evalsite.core.judging import judge_config
from evalsite.core.suites import parse_suite
from runs.models import PriceTable, Run
from tests.helpers.factories import make_pair, make_run, make_suite_version

SUITE = """\
suite: blind
version: 1
models: [scripted/base, scripted/cand]
judge: {{model: scripted/judge, calibration: {{min_kappa: 0.4, min_labels: 4}}}}
tasks:
  - id: alpha
    prompt: "Question {{{{q}}}}"
    cases: [{cases}]
  - id: beta
    prompt: "Other question {{{{q}}}}"
    cases: [{cases}]
"""
VERDICTS = {  # the judge's sides in order 1 and order 2
    "candidate": ("candidate", "candidate"),
    "baseline": ("baseline", "baseline"),
    "flip": ("baseline", "candidate"),
}
EVERY_THIRD_A_FLIP = ("candidate", "baseline", "flip")


def blind_run(
    cases: int = 12,
    *,
    kinds: Sequence[str] = EVERY_THIRD_A_FLIP,
    edit: Callable[[str], str] = lambda text: text,
) -> Run:
    """A finished, judged run of the suite (its text through `edit`) with `cases` cases a
    task: in each task the cases' verdicts go through `kinds` in turn (VERDICTS' names)."""
    PriceTable.objects.ensure_default()
    ids = [f"c{i:02d}" for i in range(cases)]
    text = edit(SUITE.format(cases=", ".join(f"{{id: {c}, vars: {{q: '{c}'}}}}" for c in ids)))
    version = make_suite_version(text)
    loaded = parse_suite(text.encode(), filename="blind.yaml", origin="upload")
    run = make_run(
        suite_version=version, contestants=["scripted/base", "scripted/cand"],
        judge=judge_config(loaded, "scripted/judge"), status=Run.Status.DONE,
        report={"headline_eligible": False},
    )  # fmt: skip
    for task in ("alpha", "beta"):
        for i, case in enumerate(ids):
            texts = (f"base says {task} {case}", f"cand says {task} {case}")
            make_pair(run, task, case, texts=texts, sides=VERDICTS[kinds[i % len(kinds)]])
    return run


def member_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def page_token(html: str) -> str:
    """The signed token of the pair a labelling page shows."""
    found = re.search(r'name="token" value="([^"]+)"', html)
    assert found, "the page shows no pair"
    return found.group(1)
