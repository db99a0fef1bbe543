"""Suites and their versions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models, transaction

from evalsite.core.media import MEDIA_KEY, BlobStore, MediaFile, from_stored
from evalsite.core.no_look import strip_document, stripped_text
from evalsite.core.suites import Suite as CoreSuite
from evalsite.core.suites import as_stored, parse_document, parsed_part
from runs import sealed
from runs.kept import Kept

identifier = RegexValidator(
    r"^[a-z0-9][a-z0-9-]{0,63}$", "Use lowercase letters, digits and hyphens (max 64)."
)


def blob_store() -> BlobStore:
    """Where runs keep the files cases attach, once each, by content."""
    return BlobStore(settings.DATA_DIR / "blobs")


class SuiteQuerySet(models.QuerySet["Suite"]):
    def team(self) -> SuiteQuerySet:
        """The team's suites: a judge-lab pair set's suite lives under the judge lab only."""
        return self.exclude(versions__origin=SuiteVersion.Origin.LAB)


class Suite(models.Model):
    name = models.CharField(max_length=64, unique=True, validators=[identifier])
    created_at = models.DateTimeField(auto_now_add=True)
    baseline_run = models.ForeignKey(
        "runs.Run",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The pinned run that `max_regression_points` gates compare against.",
    )

    objects = SuiteQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def pin_baseline(self, run) -> None:
        """Pin `run` (a finished run of this suite with a report) as the regression baseline."""
        if run.suite_version.suite_id != self.pk:
            raise ValueError(f"run {run.id} is not a run of suite {self.name}")
        if run.report is None:
            raise ValueError(f"run {run.id} has no report to compare against ({run.status})")
        Suite.objects.filter(pk=self.pk).update(baseline_run=run)
        self.baseline_run = run

    def clear_baseline(self) -> None:
        """Unpin the regression baseline: the gate then has nothing to compare against."""
        Suite.objects.filter(pk=self.pk).update(baseline_run=None)
        self.baseline_run = None

    def latest_version(self) -> SuiteVersion | None:
        """The newest version, its text and document left unread until asked for (its
        parse is kept by :meth:`SuiteVersion.core_suite`)."""
        return self.versions.defer(*SuiteVersion.DOCUMENT).order_by("-created_at", "-pk").first()


class SuiteVersionQuerySet(models.QuerySet["SuiteVersion"]):
    @transaction.atomic
    def register(
        self,
        loaded: CoreSuite,
        yaml_text: str,
        *,
        origin: str,
        source_path: str = "",
        user=None,
        no_look: bool = False,
    ) -> tuple[SuiteVersion, bool]:
        """Store a validated suite (`loaded` as parsed, e.g. by :func:`load_suite`); identical
        content reuses its version, and keeps `loaded` as its parse in this process where
        it is the same (:meth:`SuiteVersion.keep_parse`).

        A no-look suite (`no_look`, or its own ``privacy: {no_look: true}``) is stored
        stripped of its case data (:func:`~evalsite.core.no_look.strip_document`), its hash
        still that of the full suite; a normal run of the same content later stores it whole.

        Returns (version, created).
        """
        no_look = no_look or loaded.no_look
        parsed = loaded.stored_dict()
        if not no_look:  # a no-look run archives no attachment: they are read in place
            for media in loaded.media.values():
                blob_store().keep(media)
        if no_look:
            parsed = strip_document(parsed)
            yaml_text = stripped_text(parsed)
        suite, _ = Suite.objects.get_or_create(name=loaded.name)
        version, created = self.get_or_create(
            suite=suite,
            sha256=loaded.sha256,
            defaults={
                "yaml_text": yaml_text,
                "parsed": parsed,
                "stripped": no_look,
                "origin": origin,
                "source_path": source_path,
                "created_by": user if user is not None and user.is_authenticated else None,
            },
        )
        if not created and version.stripped and not no_look:
            version.store_whole(yaml_text, parsed)
        version.keep_parse(loaded, parsed)
        return version, created

    def register_file(
        self,
        path: str | Path,
        loaded: CoreSuite,
        *,
        origin: str = "path",
        user=None,
        no_look: bool = False,
    ) -> tuple[SuiteVersion, bool]:
        """Store a suite loaded from `path` (its text read from the same file), by its
        absolute path: a worker or the MCP server in another folder finds its files there."""
        text = Path(path).read_text("utf-8", errors="replace")
        where = str(Path(path).resolve())
        return self.register(
            loaded, text, origin=origin, source_path=where, user=user, no_look=no_look
        )


class SuiteVersion(models.Model):
    # The version's text and parsed document: megabytes for a suite of thousands of cases,
    # which a page that only needs its parse (core_suite, kept per process) leaves unread.
    DOCUMENT = ("yaml_text", "parsed")

    class Origin(models.TextChoices):
        UPLOAD = "upload", "Uploaded in the browser"
        PATH = "path", "Loaded from a file"
        MCP = "mcp", "Registered over MCP"
        DEMO = "demo", "Demo suite"
        LAB = "lab", "A judge-lab pair set"

    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="versions")
    sha256 = models.CharField(max_length=64)
    yaml_text = models.TextField()
    parsed = models.JSONField()
    stripped = models.BooleanField(
        default=False, help_text="A no-look suite: its cases keep their ids and tags only."
    )
    origin = models.CharField(max_length=10, choices=Origin.choices)
    source_path = models.CharField(max_length=1024, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = SuiteVersionQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["suite", "sha256"], name="suite_version_unique_hash")
        ]

    def __str__(self) -> str:
        return f"{self.suite.name}@{self.short_hash}"

    def store_whole(self, yaml_text: str, parsed: dict) -> None:
        """Keep the full suite in place of its stripped form: a normal run of the same
        content stores its case data as any run does."""
        SuiteVersion.objects.filter(pk=self.pk).update(
            yaml_text=yaml_text, parsed=parsed, stripped=False
        )
        self.yaml_text, self.parsed, self.stripped = yaml_text, parsed, False

    @property
    def short_hash(self) -> str:
        return self.sha256[:8]

    def core_suite(self) -> CoreSuite:
        """The suite as stored: its parsed form, with referenced files already inlined.

        A version never changes (its content is its hash), and the parsed suite is a frozen
        value, so each process parses a version once. A no-look version is stored stripped of
        its case data: the process running one of its runs sees the full suite it holds
        (:mod:`runs.sealed`), every other process the stripped one."""
        full = sealed.suite_for(self.pk) if self.stripped else None
        if full is not None:
            return full
        return _PARSED.get(self._key, self._parse)

    @property
    def document(self) -> dict[str, Any]:
        """The stored document (``parsed``), read once a process for the same reason as
        :meth:`core_suite`: a suite of 10,000 cases is megabytes of JSON. Shared: read it,
        never change it."""
        return _DOCUMENTS.get(self._key, lambda: self.parsed)

    @property
    def _key(self) -> tuple[int, str, str, str, bool]:
        return (self.pk, self.sha256, self.origin, self.source_path, self.stripped)

    def keep_parse(self, loaded: CoreSuite, document: dict[str, Any]) -> None:
        """Keep `loaded`, the suite this process registered this version from, as its parse
        (:meth:`core_suite`) rather than parse the stored document again (3.5 s for 50,000
        cases), where that parse would give the same suite: the version is whole (a stripped
        one's suite is held by :mod:`runs.sealed`), is read as `loaded` was (a file's as a
        file's, an upload's as an upload's), and its stored document is `document`, made
        from `loaded` (:meth:`~CoreSuite.stored_dict`), to the last value, type and key
        order. A found version's document read back from PostgreSQL (jsonb orders keys its
        own way) or stored by other code is parsed again. tests/planning/test_kept_parse.py
        proves the two parses equal for every example suite."""
        if self.stripped or self._key in _PARSED or loaded.origin != self._read_as:
            return
        stored = self.document
        if stored is not document and not _same_json(stored, document):
            return
        _PARSED.get(
            self._key, lambda: as_stored(loaded, filename=self._filename, media=self.media())
        )

    def _parse(self) -> CoreSuite:
        """The version's document as the JSON values it is stored as (never as YAML text)."""
        return parse_document(
            parsed_part(self.document),
            filename=self._filename,
            origin=self._read_as,
            stripped=self.stripped,
            stored_media=self.media(),
            stored=True,
        )

    @property
    def _read_as(self) -> str:
        """The origin its document is parsed with (python checks: only from a file)."""
        return "file" if self.origin in FILESYSTEM_ORIGINS else "upload"

    @property
    def _filename(self) -> str:
        return f"{self.suite.name}@{self.short_hash}"

    def media(self) -> dict[str, MediaFile]:
        """The files this version's cases attach, by path, each read from the store."""
        table = self.document.get(MEDIA_KEY) or {}
        store = blob_store()
        return {
            path: from_stored(path, stored, str(store.path(stored["sha256"])))
            for path, stored in table.items()
        }

    @property
    def tasks(self) -> list[dict]:
        return self.document.get("tasks", [])

    @property
    def labels(self) -> list[dict]:
        return self.document.get("labels", [])

    @property
    def case_count(self) -> int:
        return sum(len(task.get("cases", [])) for task in self.tasks)


# Suites read from a file on this machine (SPEC §7.2: python checks allowed): the CLI's and
# the suites directory's (path), the demo's, and MCP's, which come from files under
# EVALSITE_MCP_SUITE_ROOT. Identical bytes are one version whichever registered them first,
# so a file run over MCP and by the CLI must be scored alike. Never upload or lab.
FILESYSTEM_ORIGINS = (SuiteVersion.Origin.PATH, SuiteVersion.Origin.MCP, SuiteVersion.Origin.DEMO)

# The parsed suites of this process (SuiteVersion.core_suite), by what a version's parse reads.
_PARSED: Kept[tuple[int, str, str, str, bool], CoreSuite] = Kept(64)
# Their stored documents (SuiteVersion.document), by the same key.
_DOCUMENTS: Kept[tuple[int, str, str, str, bool], dict[str, Any]] = Kept(64)


def _same_json(stored: Any, made: Any) -> bool:
    """Whether a document read back is the one made: equal values of the same types (a JSON
    round trip makes a tuple a list, a number key text), and the same text (key order)."""
    return stored == made and json.dumps(stored) == json.dumps(made)


def forget_read_versions() -> None:
    """Forget every version this process has read (for a test that edits one's stored row
    under it: a version never changes otherwise)."""
    _PARSED.clear()
    _DOCUMENTS.clear()
