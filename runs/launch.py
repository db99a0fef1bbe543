"""Starting a run from the browser: the new-run form to a plan, its estimate, and the launch.

The same planner as `evalsite run`, so the page refuses exactly what the command refuses,
with the same messages; the run is then executed by the workers, not the web process.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from evalsite.core.providers import RepliesFileError, ScriptedReplies
from runs.models import Run, SuiteVersion
from runs.planner import Plan, PlanError, RunOptions, make_plan, store_plan
from runs.prices import NoActivePriceTable, active_table
from runs.scoring import stored_suite
from runs.tasks import enqueue_run

MAX_SHARDS = 2


def contestant_choices(version: SuiteVersion) -> list[str]:
    """The suite's own contestants (variants included) first, then every priced model."""
    own = list(version.parsed.get("models") or [])
    try:
        priced = list(active_table().prices.values_list("model", flat=True))
    except NoActivePriceTable:
        priced = []  # the planner says so when the form is submitted
    return list(dict.fromkeys([*own, *priced]))


def plan_from_form(version: SuiteVersion, data: dict) -> Plan:
    """The plan for a valid RunForm's cleaned data; PlanError for anything unusable."""
    options = RunOptions(
        models=data["contestants"],
        fake=bool(data.get("fake")),
        replies=_replies(version, data.get("replies")),
        max_cost=data.get("max_cost"),
        repeats=data.get("repeats"),
        label=data.get("label") or "",
    )
    return make_plan(version, stored_suite(version), options)


def launch(plan: Plan, *, user, form_nonce: str = "") -> tuple[Run, bool]:
    """Store the run (refused when over its cap) and queue its shards after the commit; True
    when it was stored now. With the nonce of the new-run form's token, the same rendering
    of the form posted again with the same choices gets the run it launched: nothing is
    stored, queued or paid twice. It is kept in the run's options (no column to migrate)."""
    submission = _submission(form_nonce, plan) if form_nonce else ""
    with transaction.atomic():  # SQLite: IMMEDIATE; PostgreSQL: the lock on the version row
        if submission:
            SuiteVersion.objects.select_for_update(no_key=True).filter(pk=plan.version.pk).first()
            earlier = Run.objects.filter(
                suite_version=plan.version, created_by=user, options__form_submission=submission
            ).first()
            if earlier is not None:
                return earlier, False
        run = store_plan(plan, user=user, form_submission=submission)
        if run.status != Run.Status.REFUSED:
            enqueue_run(run, shards=MAX_SHARDS)
    return run, True


def _submission(form_nonce: str, plan: Plan) -> str:
    """The token's nonce and a digest of the choices it was posted with: going back, changing
    the form and launching again is a new run."""
    options = plan.options
    choices = [options.models, options.fake, options.replies, str(options.max_cost),
               options.repeats, options.label]  # fmt: skip
    return f"{form_nonce}:{hashlib.sha256(json.dumps(choices).encode()).hexdigest()[:16]}"


def _replies(version: SuiteVersion, upload: UploadedFile | None) -> str | None:
    """An uploaded replies file, checked and kept under the data dir by its hash; else the
    suite's own `replies:` file next to a suite loaded from disk."""
    if upload is None:
        named = version.parsed.get("replies")
        if named and version.source_path:
            return str(Path(version.source_path).parent / named)
        return None
    data = upload.read()
    try:
        ScriptedReplies.parse(data.decode("utf-8", "surrogateescape"), upload.name or "replies")
    except RepliesFileError as error:
        raise PlanError(f"the replies file cannot be used: {error}") from None
    folder = Path(settings.DATA_DIR) / "replies"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{hashlib.sha256(data).hexdigest()[:16]}.yaml"
    if not path.exists():
        path.write_bytes(data)
    return str(path)
