"""Files a suite refers to: ``schema_path``, ``cases_path``, ``labels_path``, ``replies``
and the media its cases attach (``files:``).

Contract:

- References are allowed only when the suite was loaded from a file (``base_dir`` given and
  origin "file"); otherwise each one is an error at the key that names it, so an uploaded
  suite never reads the server's filesystem.
- A reference is relative to the suite's folder and must stay inside it once resolved
  (no absolute paths, no ``..`` or symlink leaving the folder), whatever the origin.
- Each file is bounded like the suite (:data:`~evalsite.core.yamlsafe.MAX_BYTES`), parsed by
  its extension, checked against its part of the suite schema, and inlined into the suite
  document; its errors name *that* file and its line.
- Formats (:mod:`~evalsite.core.file_formats`): schema and labels files are JSON or YAML,
  labels holding a list or ``{labels: [...]}``; cases are JSONL or CSV.
- The replies file (SPEC §4) is only checked to exist; the scripted adapter reads it.
- A case's ``files:`` (and a cases file's ``file://`` values) are media the prompt sends
  (:mod:`~evalsite.core.media`): read within :data:`MAX_MEDIA_BYTES`, typed by their bytes
  and hashed; each written path becomes its normalised relative path, and the suite's hash
  covers every file's hash.
"""

from __future__ import annotations

import copy
import os
import posixpath
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import Any

from evalsite.core.file_formats import load_cases, load_document
from evalsite.core.input_limits import MAX_BYTES, size_message
from evalsite.core.media import MAX_MEDIA_BYTES, MediaError, MediaFile, describe
from evalsite.core.problems import Path, Problem, SourceMap, SuiteError
from evalsite.core.schema_errors import schema_problems

_TARGETS = {"schema_path": "schema", "cases_path": "cases", "labels_path": "labels"}
_DEFINITIONS = {"schema_path": "task_schema", "cases_path": "cases"}


class UnreadableFile(Exception):
    """A file could not be read within bounds; the message says why (no path repeated)."""


@dataclass
class Attachments:
    """The suite document with references inlined, and what reading them found."""

    document: dict[str, Any]
    files: dict[str, bytes] = field(default_factory=dict)  # relative posix path -> bytes
    replies_path: FsPath | None = None
    problems: list[Problem] = field(default_factory=list)
    media: dict[str, MediaFile] = field(default_factory=dict)  # relative posix path -> file
    # The containers of `document` that are its own, copied on their first write: the rest
    # it shares with the document read (a copy of all of it took longer than reading it).
    # Kept in a list as well as by id, so no id of theirs is reused while this is alive.
    owned: list[Any] = field(default_factory=list, repr=False)
    owned_ids: set[int] = field(default_factory=set, repr=False)

    def container(self, path: Path) -> Any:
        """The container at `path` in :attr:`document`, the containers on the way made its
        own, so writing into it leaves the document read alone."""
        node: Any = self.document
        for part in path:
            child = node[part]
            if id(child) not in self.owned_ids and isinstance(child, dict | list):
                child = node[part] = copy.copy(child)
                self.owned.append(child)
                self.owned_ids.add(id(child))
            node = child
        return node


def read_bounded(path: FsPath, *, limit: int = MAX_BYTES) -> bytes:
    """The bytes of a regular file, refusing one over ``limit`` before reading it all."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile("not a regular file")
        if info.st_size > limit:
            raise UnreadableFile(
                size_message(info.st_size)
                if limit == MAX_BYTES
                else f"{info.st_size:,} bytes is over the limit of {limit:,} for this file"
            )
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except FileNotFoundError:
        raise UnreadableFile("file not found") from None
    except OSError as error:
        raise UnreadableFile(f"cannot read the file: {error.strerror or error}") from None
    if len(data) > limit:  # it grew, or stat lied (a device or /proc file)
        raise UnreadableFile(f"file holds more than the limit of {limit:,} bytes")
    return data


def attach_files(
    document: dict[str, Any],
    sources: SourceMap,
    *,
    base_dir: FsPath | None,
    origin: str,
    stored_media: Mapping[str, MediaFile] | None = None,
) -> Attachments:
    """Read, check and inline every file ``document`` refers to (see the module contract),
    then describe every file a case attaches (``files:``); ``stored_media`` stands in for
    the suite's folder when a stored version is parsed again."""
    result = Attachments(dict(document))
    _attach_references(result, document, sources, base_dir=base_dir, origin=origin)
    for path, written in _case_files(result.document):
        if stored_media is not None:
            _stored_media(result, path, written, stored_media, sources)
        else:
            _read_media(result, path, written, sources, base_dir=base_dir, origin=origin)
    return result


def _attach_references(
    result: Attachments,
    document: dict[str, Any],
    sources: SourceMap,
    *,
    base_dir: FsPath | None,
    origin: str,
) -> None:
    for path, written in _references(document):
        key = str(path[-1])
        if base_dir is None or origin != "file":
            inline = f"; write it inline as '{_TARGETS[key]}:'" if key in _TARGETS else ""
            message = f"{key} is allowed only for suites loaded from a file{inline}"
            result.problems.append(sources.problem(path, message))
            continue
        try:
            target, relative = resolve_inside(base_dir, written)
            data = read_bounded(target)
        except UnreadableFile as error:
            result.problems.append(sources.problem(path, f"{written}: {error}"))
            continue
        if key == "replies":
            result.replies_path = target
            continue
        result.files[relative] = data
        display = posixpath.normpath(posixpath.join(posixpath.dirname(sources.file), relative))
        _inline(result, path, data, display=display, sources=sources)


def _case_files(document: dict[str, Any]) -> list[tuple[Path, str]]:
    """(key path, written path) of every file every case attaches, in document order."""
    found: list[tuple[Path, str]] = []
    tasks = document.get("tasks")
    for t, task in enumerate(tasks if isinstance(tasks, list) else []):
        cases = task.get("cases") if isinstance(task, dict) else None
        for c, case in enumerate(cases if isinstance(cases, list) else []):
            files = case.get("files") if isinstance(case, dict) else None
            for name, written in (files if isinstance(files, dict) else {}).items():
                if isinstance(written, str) and written:
                    found.append((("tasks", t, "cases", c, "files", name), written))
    return found


def _read_media(
    result: Attachments,
    path: Path,
    written: str,
    sources: SourceMap,
    *,
    base_dir: FsPath | None,
    origin: str,
) -> None:
    """Hash and type one attached file, read from the suite's folder (files only)."""
    if base_dir is None or origin != "file":
        message = "files: is allowed only for suites loaded from a file (paths in its folder)"
        result.problems.append(sources.problem(path, message))
        return
    try:
        target, relative = resolve_inside(base_dir, written)
        if relative in result.media:
            return
        data = read_bounded(target, limit=MAX_MEDIA_BYTES)
        result.media[relative] = describe(data, relative, str(target))
    except (UnreadableFile, MediaError) as error:
        result.problems.append(sources.problem(path, f"{written}: {error}"))
        return
    result.container(path[:-1])[path[-1]] = relative


def _stored_media(
    result: Attachments,
    path: Path,
    written: str,
    stored: Mapping[str, MediaFile],
    sources: SourceMap,
) -> None:
    if written in stored:
        result.media[written] = stored[written]
    else:
        result.problems.append(sources.problem(path, f"{written}: not kept with this version"))


def _references(document: dict[str, Any]) -> list[tuple[Path, str]]:
    found: list[tuple[Path, str]] = []
    tasks = document.get("tasks")
    for index, task in enumerate(tasks if isinstance(tasks, list) else []):
        if isinstance(task, dict):
            found += [
                (("tasks", index, k), task[k]) for k in ("schema_path", "cases_path") if k in task
            ]
    found += [((key,), document[key]) for key in ("labels_path", "replies") if key in document]
    return [(path, written) for path, written in found if isinstance(written, str) and written]


def resolve_inside(
    base_dir: FsPath, written: str, *, folder: str = "the suite's folder"
) -> tuple[FsPath, str]:
    """The file a reference names and its path relative to ``base_dir`` (posix), decided
    by name before anything is read: an absolute path, or one that leaves ``base_dir``
    through ``..`` or a symbolic link, is UnreadableFile with the same words whether or not
    what it names exists. ``folder`` names ``base_dir`` in the message."""
    if FsPath(written).is_absolute() or re.match(r"^[A-Za-z]:|^[\\/]", written):
        raise UnreadableFile(f"must be a path relative to {folder}")
    base = FsPath(os.path.realpath(base_dir))
    try:  # realpath, not resolve(): it reports no link loop, so nothing outside shows
        target = FsPath(os.path.realpath(base / written))
    except ValueError:  # a NUL in the name
        raise UnreadableFile(f"must be a path relative to {folder}") from None
    if not target.is_relative_to(base):
        raise UnreadableFile(f"must stay inside {folder} (no '..' or links leaving it)")
    return target, target.relative_to(base).as_posix()


def _inline(
    result: Attachments, ref: Path, data: bytes, *, display: str, sources: SourceMap
) -> None:
    """Parse one referenced file, check it, and put its content where the reference was."""
    container_path, key = ref[:-1], str(ref[-1])
    target = _TARGETS[key]
    try:
        if key == "cases_path":
            loaded, row_problems = load_cases(data, filename=display)
            result.problems += row_problems
        else:
            loaded = load_document(data, filename=display)
    except SuiteError as error:
        result.problems.extend(error.problems)
        return
    value, lines = loaded.data, loaded.lines
    if key == "labels_path":
        value, lines = _labels_content(result, value, lines, display)
    sources.add((*container_path, target), display, lines)
    if key in _DEFINITIONS:
        prefix = (*container_path, target)
        result.problems += schema_problems(
            value, sources, definition=_DEFINITIONS[key], prefix=prefix
        )
    container = _container(result.document, container_path)
    if container is not None:
        container = result.container(container_path)
        del container[key]
        container[target] = value


def _labels_content(
    result: Attachments, value: Any, lines: Mapping[Path, int], display: str
) -> tuple[Any, Mapping[Path, int]]:
    """Check a labels file (a list, or ``{labels: [...]}``) and return the list's content."""
    if not isinstance(value, dict):  # key the lines as if the list sat under "labels"
        lines = {("labels", *path): number for path, number in lines.items()} | {(): 1}
    prefix: Path = () if isinstance(value, dict) else ("labels",)
    local = SourceMap(display, lines)
    result.problems += schema_problems(value, local, definition="labels_file", prefix=prefix)
    content = value.get("labels") if isinstance(value, dict) else value
    inner = {path[1:]: number for path, number in lines.items() if path[:1] == ("labels",)}
    return content, inner | {(): lines.get(("labels",), 1)}


def _container(document: dict[str, Any], path: Path) -> dict[str, Any] | None:
    node: Any = document
    for part in path:
        node = node[part]
    return node if isinstance(node, dict) else None
