"""The files a run's cases attach, as its pages show them and report.html embeds them.

A case's files are read from the run's suite version (``Case.files``: name -> path, and
``suite.media``: path -> :class:`~evalsite.core.media.MediaFile`); their bytes from the
run's blob store. A no-look run shows none: its suite is stored without its case data and
its files were never kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from evalsite.core.media import MEDIA_TYPES, MediaError, MediaFile, read_part
from evalsite.core.report.html import EMBED_MAX_BYTES, Attachment
from runs.models import Answer, Run
from runs.models.suites import blob_store

NO_LOOK_MEDIA = "A no-look run keeps no case data: its attached files are not shown."
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class CaseFile:
    """One file a case attaches, under the case's name for it, with the run that serves it
    (the media view's URL is ``run_media run_id sha256``)."""

    run_id: str
    name: str
    media: MediaFile

    @property
    def sha256(self) -> str:
        return self.media.sha256

    @property
    def shown_as(self) -> str:
        """How a page shows it: ``image``, ``audio``, ``video``, else ``link``."""
        family = self.media.media_type.split("/", 1)[0]
        return family if family in ("image", "audio", "video") else "link"


def case_files(run: Run, task_id: str, case_id: str) -> list[CaseFile]:
    """The files the case attaches, in the suite's order; none for a no-look run, a case
    the suite no longer names, or a file of a type evalsite never serves."""
    if run.no_look:
        return []
    suite = run.suite_version.core_suite()
    try:
        case = suite.task(task_id).case(case_id)
    except ValueError:
        return []
    shown = []
    for name, path in case.files.items():
        media = suite.media.get(path)
        if media is not None and media.media_type in MEDIA_TYPES:
            shown.append(CaseFile(run.id, name, media))
    return shown


def files_by_case(run: Run, keys) -> dict[tuple[str, str], list[CaseFile]]:
    """:func:`case_files` of each (task id, case id) in ``keys``, each looked up once."""
    return {key: case_files(run, *key) for key in set(keys)}


def served_file(run: Run, sha256: str) -> MediaFile | None:
    """The file with this hash if the run's suite version attaches it, it is of a type
    evalsite serves and the store holds it; else None. Never reads a path from outside."""
    if run.no_look:
        return None
    attached = [media for _, media in sorted(run.suite_version.media().items())]
    for media in attached:
        if media.sha256 == sha256 and media.media_type in MEDIA_TYPES:
            return media if blob_store().has(sha256) else None
    return None


def download_name(media: MediaFile) -> str:
    """The file's own name, reduced to ASCII letters, digits, ``.``, ``_`` and ``-``."""
    name = _UNSAFE_NAME.sub("_", PurePosixPath(media.path).name).strip("._")
    return name[:100] or media.sha256[:16]


def report_attachments(run: Run) -> list[Attachment]:
    """What report.html lists of each answered case's files, images small enough to embed
    with their bytes (checked against their hash); none for a no-look run."""
    if run.no_look:
        return []
    suite = run.suite_version.core_suite()
    attaching = [(task.id, case.id) for task in suite.tasks for case in task.cases if case.files]
    if not attaching:
        return []  # the answers are not read: of 100,000, for no file to list
    answers = Answer.objects.filter(run=run).order_by()  # no ordering: DISTINCT would read it
    answered = set(answers.values_list("task_id", "case_id").distinct())
    attachments = []
    for task_id, case_id in attaching:
        if (task_id, case_id) in answered:
            for file in case_files(run, task_id, case_id):
                attachments.append(_attachment(task_id, case_id, file))
    return attachments


def _attachment(task_id: str, case_id: str, file: CaseFile) -> Attachment:
    media = file.media
    data = None
    if file.shown_as == "image" and media.size <= EMBED_MAX_BYTES:
        try:
            data = read_part(media.part(media.kind, file.name), blob_store())
        except MediaError:
            data = None  # listed by name and hash, as a file too large to embed is
    return Attachment(
        task_id, case_id, file.name, media.path, media.media_type, media.size, media.sha256, data
    )
