"""Starting a run from the browser: the new-run form to a plan, its estimate, and the launch.

The same planner as `evalsite run`, so the page refuses exactly what the command refuses,
with the same messages; the run is then executed by the workers, not the web process.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from evalsite.core.no_look import NO_WORKER
from evalsite.core.providers import RepliesFileError, ScriptedReplies
from evalsite.core.suites import parse_contestant
from runs.engine.tasks import enqueue_run
from runs.models import NoActivePriceTable, PriceTable, Run, SuiteVersion
from runs.planning.planner import Plan, PlanError, RunOptions, make_plan, store_plan

MAX_SHARDS = 2


def contestant_choices(version: SuiteVersion) -> list[str]:
    """The suite's own contestants first, then each of its models with each variant it
    defines (model@variant), the scripted contestants of its own replies file, then every
    priced model."""
    suite = version.core_suite()
    own = list(suite.models)
    models = dict.fromkeys(parse_contestant(text).model for text in own)
    variants = [f"{model}@{variant}" for model in models for variant in suite.variants]
    scripted = [f"scripted/{name}" for name in _scripted_names(version, judges=False)]
    return list(dict.fromkeys([*own, *variants, *scripted, *_priced()]))


def judge_choices(version: SuiteVersion) -> list[str]:
    """Models offered as the judge override: the scripted judges of the suite's own
    replies file, then every priced model (any other model string may be typed)."""
    scripted = [f"scripted/{name}" for name in _scripted_names(version, judges=True)]
    return list(dict.fromkeys([*scripted, *_priced()]))


def _priced() -> list[str]:
    try:
        return list(PriceTable.objects.current().prices.values_list("model", flat=True))
    except NoActivePriceTable:
        return []  # the planner says so when the form is submitted


def _scripted_names(version: SuiteVersion, *, judges: bool) -> list[str]:
    """The names in the suite's own replies file with replies (or, with `judges`, with
    judge verdicts); none when it has no file or the file cannot be read (the planner
    names the problem when a run needs it)."""
    path = _suite_replies_path(version)
    if path is None:
        return []
    try:
        replies = ScriptedReplies.load(path)
    except RepliesFileError:
        return []
    return [
        name
        for name, entries in replies.models.items()
        if any(key.startswith("judge/") == judges for key in entries)
    ]


def plan_from_form(version: SuiteVersion, data: dict) -> Plan:
    """The plan for a valid RunForm's cleaned data; PlanError for anything unusable.

    It is planned as a dry run, so that a key the server lacks is named on the page
    (:func:`missing_keys_message`) beside the estimate rather than refused inside the
    planner; with every key set a dry run's plan is the real one (the planner stands in
    only for keys that are not set), and :func:`launch` refuses a plan that lacks one.
    A no-look suite is refused: the workers would run it, and they never hold its cases."""
    if version.stripped:
        raise PlanError(f"refused: {NO_WORKER}")
    replies = _replies(version, data.get("replies"))
    options = RunOptions(
        models=data["contestants"],
        fake=bool(data.get("fake")),
        replies=replies,
        max_cost=data.get("max_cost"),
        repeats=data.get("repeats"),
        label=data.get("label") or "",
        judge=data.get("judge") or None,
        dry_run=True,
    )
    try:
        return make_plan(version, version.core_suite(), options)
    except PlanError as error:
        if replies is None:
            raise
        # The planner names the replies file by its path on this machine (under the data
        # dir, or beside a suite read from disk); the page names it as the member knows it.
        upload = data.get("replies")
        shown = upload.name if upload is not None else version.document.get("replies")
        raise PlanError(str(error).replace(replies, shown or "replies"), error.code) from None


def missing_keys_message(plan: Plan) -> str:
    """Each key the run needs that the server's environment lacks, by name; "" for none, or
    when the keys live on the workers (EVALSITE_KEYS_ON_WORKERS): a worker lacking one
    fails the run with the reason."""
    missing = plan.missing_keys
    if not missing or settings.EVALSITE_KEYS_ON_WORKERS:
        return ""
    lines = [
        f"{name} is not set in the server's environment (needed for {', '.join(plan.keys[name])})."
        for name in missing
    ]
    them = "it" if len(missing) == 1 else "them"
    return " ".join(lines) + (
        f" Set {them} where the server and its workers run and restart them, or tick Fake answers."
    )


def launch(
    plan: Plan, *, user, form_nonce: str = "", then: Callable[[Run], object] | None = None
) -> tuple[Run, bool]:
    """Store the run (refused when over its cap) and queue its shards after the commit; True
    when it was stored now; PlanError when the server lacks a key the run needs. With the
    nonce of the form's token (the new-run form's, the judge lab's), the same rendering of
    the form posted again with the same choices gets the run it launched: nothing is stored,
    queued or paid twice. It is kept in the run's options (no column to migrate). `then(run)`
    is called with a run stored now, in the same transaction (the lab links its pair set)."""
    refusal = missing_keys_message(plan)
    if refusal:
        raise PlanError(refusal)
    submission = _submission(form_nonce, plan) if form_nonce else ""
    with transaction.atomic():  # SQLite: IMMEDIATE; PostgreSQL: the lock on the version row
        if submission:
            version = plan.registered_version
            SuiteVersion.objects.select_for_update(no_key=True).filter(pk=version.pk).first()
            earlier = Run.objects.filter(
                suite_version=version, created_by=user, options__form_submission=submission
            ).first()
            if earlier is not None:
                return earlier, False
        run = store_plan(plan, user=user, form_submission=submission)
        if then is not None:
            then(run)
        if run.status != Run.Status.REFUSED:
            enqueue_run(run, shards=MAX_SHARDS)
    return run, True


def _submission(form_nonce: str, plan: Plan) -> str:
    """The token's nonce and a digest of the choices it was posted with: going back, changing
    the form and launching again is a new run."""
    options = plan.options
    choices = [options.models, options.fake, options.replies, str(options.max_cost),
               options.repeats, options.label, options.judge]  # fmt: skip
    return f"{form_nonce}:{hashlib.sha256(json.dumps(choices).encode()).hexdigest()[:16]}"


def _replies(version: SuiteVersion, upload: UploadedFile | None) -> str | None:
    """An uploaded replies file, checked and kept under the data dir by its hash; else the
    suite's own `replies:` file next to a suite loaded from disk."""
    if upload is None:
        path = _suite_replies_path(version)
        return str(path) if path else None
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


def _suite_replies_path(version: SuiteVersion) -> Path | None:
    """The suite's own `replies:` file, next to a suite loaded from disk."""
    named = version.document.get("replies")
    if named and version.source_path:
        return Path(version.source_path).parent / named
    return None
