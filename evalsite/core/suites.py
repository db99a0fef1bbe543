"""Suites: parse and validate a suite file into frozen values (SPEC §3).

:func:`parse_suite` and :func:`load_suite` either return a :class:`Suite` whose every prompt
renders for every case and contestant, or raise :class:`SuiteError` carrying every error
found (file, line, key path), never the first one only and never a traceback.

Steps: safe YAML (:mod:`~evalsite.core.yamlsafe`) → JSON Schema
(:mod:`~evalsite.core.suite_schema`) → referenced files inlined
(:mod:`~evalsite.core.suite_files`) → no key-shaped string anywhere → cross-references and
templates (:mod:`~evalsite.core.suite_rules`). Later steps still run when earlier ones found
errors, on whatever parts are well-formed, so one pass reports everything. The values are
built leniently from the document for that reason; a Suite is returned only without errors.

The version hash (``Suite.sha256``) is the sha256 of the suite bytes when the suite refers to
no file; otherwise the bytes are followed, for each referenced file in order of its path
relative to the suite folder, by ``b"\\0" + path + b"\\0" + str(len(data)) + b"\\0" + data``,
so a changed cases, schema or labels file is a new version. The replies file is runtime input
for the scripted adapter and is not hashed.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import os
import pathlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from evalsite.core.input_limits import value_problems
from evalsite.core.keys import any_looks_like_key, key_prefix, looks_like_key, redact
from evalsite.core.media import MEDIA_KEY, MediaFile
from evalsite.core.money import parse_cap
from evalsite.core.problems import (
    Problem,
    SourceMap,
    SuiteError,
    format_problems,
    strings_in,
    walk_strings,
)
from evalsite.core.prompts import (
    media_refusals,
    media_unknowns,
    render_messages,
    request_params,
)
from evalsite.core.schema_errors import schema_problems
from evalsite.core.scoring.scorecard import Criterion, criteria_from, scorecard_problems
from evalsite.core.suite_files import UnreadableFile, attach_files, read_bounded
from evalsite.core.suite_params import parameter_problems
from evalsite.core.suite_parts import (
    NUMBER,
    Case,
    Judge,
    SuiteLabel,
    Task,
    TaskVariant,
    Variant,
    as_type,
    dict_items,
    string_items,
)
from evalsite.core.suite_rules import rule_problems
from evalsite.core.suite_schema import IDENTIFIER, MODEL
from evalsite.core.yamlsafe import YamlDocument, load_yaml

__all__ = [
    "Case", "Contestant", "Judge", "Problem", "Suite", "SuiteError", "SuiteLabel", "Task",
    "TaskVariant", "Variant", "as_stored", "format_problems", "load_suite", "parse_contestant",
    "parse_document", "parse_suite", "parsed_part", "render_messages", "request_params",
    "select_contestants",
]  # fmt: skip

ORIGINS = ("file", "upload")
MAX_PROBLEMS = 200


@dataclass(frozen=True)
class Contestant:
    """A model string with an optional prompt variant; None means the tasks as written."""

    model: str
    variant: str | None = None

    def __str__(self) -> str:
        return self.model if self.variant is None else f"{self.model}@{self.variant}"


def parse_contestant(text: str) -> Contestant:
    """``"openai/gpt-4o-mini@concise"`` → Contestant; ``@base`` or no suffix → variant None.

    Raises ValueError with a message saying what a contestant looks like.
    """
    model, at, variant = text.partition("@")
    if not re.match(MODEL, model):
        raise ValueError(
            f"{redact(text)!r} is not a contestant: expected 'provider/model' with an optional "
            "'@variant', e.g. 'openai/gpt-4o-mini@concise'"
        )
    if at and not re.match(IDENTIFIER, variant):
        raise ValueError(
            f"{redact(variant)!r} in {redact(text)!r} is not a variant name: lowercase letters, "
            "digits and '-', e.g. 'concise'"
        )
    return Contestant(model, None if not at or variant == "base" else variant)


def select_contestants(texts: list[str], models: list[str], variants: list[str]) -> list[str]:
    """The contestants of ``texts`` (in their order) whose model is one of ``models`` (the
    model string, or its name after the provider: evaling's model id) and whose variant is
    one of ``variants`` (``base``: none); an empty filter keeps all. evaling's ``--model`` /
    ``--variant``: any sub-matrix. ValueError naming the filters when none is left."""
    kept = []
    for text in texts:
        contestant = parse_contestant(text)
        names = {contestant.model, contestant.model.partition("/")[2]}
        variant = contestant.variant or "base"
        if (not models or names & set(models)) and (not variants or variant in variants):
            kept.append(text)
    if not kept:
        given = [f"--model {m}" for m in models] + [f"--variant {v}" for v in variants]
        raise ValueError(f"{' '.join(given)} match none of the contestants: {', '.join(texts)}")
    return kept


@dataclass(frozen=True)
class Suite:
    """A validated suite. Mappings are read-only by convention; ``to_dict()`` gives a copy.

    ``variants`` holds the variant names; :meth:`variant` gives one's settings. ``models``
    are the default contestants (first = baseline). ``files`` lists the referenced files
    folded into ``sha256`` (paths relative to the suite folder).
    """

    name: str
    sha256: str
    tasks: tuple[Task, ...]
    filename: str = ""
    origin: str = "file"
    version: int = 1
    description: str = ""
    templating: str = "default"  # or "jinja2" (evalsite.core.jinja)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    max_cost_usd: float | None = None
    models: tuple[str, ...] = ()
    repeats: int = 1
    judge: Judge | None = None
    gate: Mapping[str, Any] = field(default_factory=dict)
    scorecard: tuple[Criterion, ...] = ()
    mover_threshold: float = 0.15
    frontier_points: float = 5.0  # report.frontier_points: the matrix's "within N points"
    variants: tuple[str, ...] = ()
    labels: tuple[SuiteLabel, ...] = ()
    replies: str | None = None
    replies_path: pathlib.Path | None = None
    files: tuple[str, ...] = ()
    media: Mapping[str, MediaFile] = field(default_factory=dict, repr=False)
    no_look: bool = False  # privacy.no_look: no case data is ever written (docs/no-look.md)
    guidelines: str = ""  # labelling.guidelines: read by members labelling its pairs
    warnings: tuple[Problem, ...] = ()
    variant_specs: Mapping[str, Variant] = field(default_factory=dict, repr=False)
    document: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def cap_usd(self) -> Decimal | None:
        """limits.max_cost_usd read as every cap is (money.parse_cap; checked on load)."""
        return None if self.max_cost_usd is None else parse_cap(self.max_cost_usd)

    @property
    def judge_model(self) -> str | None:
        """The judge's model string, or None when the suite has no judge block."""
        return self.judge.model if self.judge else None

    def task(self, task_id: str) -> Task:
        """The task with this id; ValueError if there is none."""
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise ValueError(f"suite {self.name!r} has no task {task_id!r}")

    def variant(self, name: str) -> Variant:
        """The settings of a suite variant; ValueError if the suite declares no such variant."""
        if name not in self.variant_specs:
            raise ValueError(f"suite {self.name!r} has no variant {name!r}")
        return self.variant_specs[name]

    def contestants(self) -> tuple[Contestant, ...]:
        """The default contestants (``models``), parsed; the first is the baseline."""
        return tuple(parse_contestant(text) for text in self.models)

    def model_strings(self) -> list[str]:
        """Sorted unique model strings the suite names: models, judge, label contestants."""
        named = [*self.models, *(self.judge_model or "",)]
        named += [side for label in self.labels for side in (label.baseline, label.candidate)]
        return sorted({text.partition("@")[0] for text in named if text})

    def graded_cases(self) -> frozenset[tuple[str, str]]:
        """(task, case) of every graded case: all cases of a task with ``grade:``, and each
        case with its own ``grade:``."""
        return frozenset(
            (task.id, case.id)
            for task in self.tasks
            for case in task.cases
            if task.case_grade(case) is not None
        )

    def case_count(self) -> int:
        """Cases over all tasks (one case answered by each contestant and repeat)."""
        return sum(len(task.cases) for task in self.tasks)

    def to_dict(self) -> dict[str, Any]:
        """The parsed document, JSON-serialisable, with referenced files inlined.

        ``schema_path``, ``cases_path`` and ``labels_path`` are replaced by the content they
        named (``schema``, ``cases``, ``labels``), so the result is itself a valid suite
        document that needs no file to load.
        """
        return copy.deepcopy(dict(self.document))

    def stored_dict(self) -> dict[str, Any]:
        """:meth:`to_dict` plus, under :data:`MEDIA_KEY`, what is known of each attached file
        (hash, type, size), so a stored version parses again without the suite's folder."""
        document = self.to_dict()
        if self.media:
            document[MEDIA_KEY] = {path: media.as_dict() for path, media in self.media.items()}
        return document


def _build(document: Mapping[str, Any], **fields: Any) -> Suite:
    """A Suite from a (possibly invalid) document, taking only the well-formed parts."""
    judge = as_type(document.get("judge"), dict, None)
    variants = {
        name: Variant.from_dict(name, spec)
        for name, spec in as_type(document.get("variants"), dict, {}).items()
        if isinstance(spec, dict)
    }
    return Suite(
        name=as_type(document.get("suite"), str, ""),
        tasks=tuple(Task.from_dict(task) for task in dict_items(document.get("tasks"))),
        version=as_type(document.get("version"), int, 1),
        description=as_type(document.get("description"), str, ""),
        templating=as_type(document.get("templating"), str, "default"),
        defaults=as_type(document.get("defaults"), dict, {}),
        max_cost_usd=as_type(
            as_type(document.get("limits"), dict, {}).get("max_cost_usd"), NUMBER, None
        ),
        models=string_items(document.get("models")),
        repeats=as_type(document.get("repeats"), int, 1),
        judge=Judge.from_dict(judge) if judge is not None else None,
        gate=as_type(document.get("gate"), dict, {}),
        scorecard=criteria_from(document.get("scorecard")),
        mover_threshold=as_type(
            as_type(document.get("report"), dict, {}).get("mover_threshold"), NUMBER, 0.15
        ),
        frontier_points=as_type(
            as_type(document.get("report"), dict, {}).get("frontier_points"), NUMBER, 5.0
        ),
        variants=tuple(variants),
        labels=tuple(SuiteLabel.from_dict(label) for label in dict_items(document.get("labels"))),
        replies=as_type(document.get("replies"), str, None),
        no_look=as_type(as_type(document.get("privacy"), dict, {}).get("no_look"), bool, False),
        guidelines=as_type(as_type(document.get("labelling"), dict, {}).get("guidelines"), str, ""),
        variant_specs=variants,
        document=document,
        **fields,
    )


def parse_suite(
    data: bytes,
    *,
    filename: str,
    base_dir: pathlib.Path | None = None,
    origin: str = "file",
    stored_media: Mapping[str, MediaFile] | None = None,
    stripped: bool = False,
) -> Suite:
    """Parse and validate suite bytes; raise SuiteError with every error found.

    ``origin`` is "file" (CLI, suites directory, MCP) or "upload" (browser). Referenced files
    are read only for origin "file" with a ``base_dir``; ``python:`` checks are refused for
    uploads. Warnings (unused vars, YAML coercions) end up in ``Suite.warnings``. A
    ``stripped`` document is a no-look suite as stored (:mod:`~evalsite.core.no_look`): its
    cases keep only ids and tags, so the checks that read case data are skipped.
    """
    if origin not in ORIGINS:
        raise ValueError(f"origin must be one of {ORIGINS}, not {origin!r}")
    loaded = load_yaml(data, filename=filename)
    return _validated(
        loaded, data, filename=filename, base_dir=base_dir, origin=origin,
        stored_media=stored_media, stripped=stripped,
    )  # fmt: skip


def parse_document(
    document: Mapping[str, Any],
    *,
    filename: str,
    base_dir: pathlib.Path | None = None,
    origin: str = "file",
    stored_media: Mapping[str, MediaFile] | None = None,
    stripped: bool = False,
    stored: bool = False,
) -> Suite:
    """:func:`parse_suite` for a document already read as JSON values: a stored version's
    (``stored``), or a suite with its datasources' cases inlined. Its values are taken as
    they are, never written out and read again as YAML (which reads ``1e-05`` as text), and
    problems name no line (there is no text). Its hash is that of its JSON.

    A ``stored`` document was validated when it was stored; what has a verdict at run time
    is not refused again: a task schema that cannot be applied scores ``schema_fail`` and a
    regex RE2 cannot compile fails its check (docs/checks.md), so a version edited in the
    database, or stored before a check was added, still shows and runs. It has no warnings:
    they were its file's, shown when the file was read.
    """
    if origin not in ORIGINS:
        raise ValueError(f"origin must be one of {ORIGINS}, not {origin!r}")
    data = json.dumps(document).encode()
    problems = value_problems(document, SourceMap(filename, {}))
    if problems:
        raise SuiteError(problems)
    loaded = YamlDocument(copy.deepcopy(dict(document)), {}, {})
    return _validated(
        loaded, data, filename=filename, base_dir=base_dir, origin=origin,
        stored_media=stored_media, stripped=stripped, stored=stored,
    )  # fmt: skip


def _validated(
    loaded: YamlDocument,
    data: bytes,
    *,
    filename: str,
    base_dir: pathlib.Path | None,
    origin: str,
    stored_media: Mapping[str, MediaFile] | None,
    stripped: bool,
    stored: bool = False,
) -> Suite:
    """The Suite of a loaded document, or SuiteError with every problem found."""
    sources = SourceMap(filename, loaded.lines)
    problems = schema_problems(loaded.data, sources)
    if not isinstance(loaded.data, dict):
        raise SuiteError(problems)
    attached = attach_files(
        loaded.data, sources, base_dir=base_dir, origin=origin, stored_media=stored_media
    )
    problems += attached.problems + _key_problems(attached.document, sources)
    suite = _build(
        attached.document,
        sha256=_hash(data, attached.files, attached.media),
        filename=filename,
        origin=origin,
        replies_path=attached.replies_path,
        files=tuple(sorted(attached.files)),
        media=attached.media,
    )
    errors, warnings = rule_problems(
        suite, sources, loaded.coerced, stripped=stripped, stored=stored
    )
    errors += scorecard_problems(suite, sources)
    errors += [sources.problem(path, text) for path, text in media_refusals(suite, suite.models)]
    if not problems:  # the parameter rules read values the schema let through
        params = parameter_problems(suite, suite.models, suite.judge_model)
        errors += [sources.problem(path, text) for path, text in params]
    warnings += [
        sources.problem(path, text, severity="warning")
        for path, text in media_unknowns(suite, suite.models)
    ]
    problems = _ordered(problems + errors, filename)
    if problems:
        raise SuiteError(problems, warnings)
    return dataclasses.replace(suite, warnings=() if stored else tuple(warnings))


def as_stored(suite: Suite, *, filename: str, media: Mapping[str, MediaFile]) -> Suite:
    """`suite` as :func:`parse_document` reads its stored form back (its
    :meth:`~Suite.stored_dict`, :func:`parsed_part` of it), named `filename`, its attached
    files those of `media` (the store's): the same values, with nothing of the folder it
    was read from (no replies file, no referenced file, no warnings) and the hash of that
    document's JSON, without parsing it again. The caller vouches that the stored form is
    `suite`'s own, read as `suite` was read (a file's as a file's)."""
    document = parsed_part(suite.document)
    return dataclasses.replace(
        suite,
        sha256=_hash(json.dumps(document).encode(), {}, media),
        filename=filename,
        replies=None,
        replies_path=None,
        files=(),
        media=media,
        warnings=(),
        document=document,
    )


def parsed_part(document: Mapping[str, Any]) -> dict[str, Any]:
    """What of a stored suite document is parsed: not the name of its replies file (beside
    the suite it was read from) or its table of attached files (:data:`MEDIA_KEY`)."""
    return {key: value for key, value in document.items() if key not in ("replies", MEDIA_KEY)}


def load_suite(path: str | os.PathLike[str], *, origin: str = "file") -> Suite:
    """Read and parse the suite at ``path`` (files it refers to are read beside it).

    A missing, unreadable or oversized file is a SuiteError too; the size is checked with
    ``stat`` before reading, and reading stops one byte past the limit.
    """
    display = os.fspath(path)
    try:
        data = read_bounded(pathlib.Path(path))
    except UnreadableFile as error:
        raise SuiteError([Problem(display, None, "", str(error))]) from None
    base_dir = pathlib.Path(path).parent
    return parse_suite(data, filename=display, base_dir=base_dir, origin=origin)


def _hash(data: bytes, files: Mapping[str, bytes], media: Mapping[str, MediaFile]) -> str:
    digest = hashlib.sha256(data)
    for relative in sorted(files):
        content = files[relative]
        digest.update(b"\0" + relative.encode() + b"\0" + str(len(content)).encode() + b"\0")
        digest.update(content)
    for relative in sorted(media):  # a file's hash stands for its bytes
        digest.update(b"\0media\0" + relative.encode() + b"\0" + media[relative].sha256.encode())
    return digest.hexdigest()


def _key_problems(document: Mapping[str, Any], sources: SourceMap) -> list[Problem]:
    """One error per string (value or key, any file) shaped like a provider key."""
    if not any_looks_like_key(strings_in(document)):
        return []  # the usual case, told without a path for each string
    return [
        sources.problem(
            path,
            f"this looks like a provider API key ({key_prefix(text)}…); remove it - keys are "
            "read from the environment, never from a suite",
        )
        for path, text in walk_strings(document)
        if looks_like_key(text)
    ]


def _ordered(problems: list[Problem], filename: str) -> list[Problem]:
    """Suite file first, then other files by name; by line inside a file; no repeats.

    Past :data:`MAX_PROBLEMS`, one last problem says that more were left out (a count would
    mislead: schema checking itself stops early on a badly broken file).
    """
    unique = list(dict.fromkeys(problems))
    ordered = sorted(unique, key=lambda p: (p.file != filename, p.file, p.line or 0))
    if len(ordered) <= MAX_PROBLEMS:
        return ordered
    summary = f"... and more problems not shown (the first {MAX_PROBLEMS} are listed)"
    return [*ordered[:MAX_PROBLEMS], Problem(filename, None, "", summary)]
