"""What every importer returns, and the steps they share: reading a source and the files
it refers to (only inside its folder: :class:`Collector`), naming things as evalsite's
identifiers, rendering the suite YAML and checking it with ``parse_suite``.

An importer is a pure function from source files to a :class:`Translation`: the suite
document, the other files to write beside it (scripted replies, cases files, copied media),
and every part of the source that did not translate, as :class:`Untranslated` with its file
and line. Nothing is dropped silently: a key the importer does not know is untranslated too.
"""

from __future__ import annotations

import csv
import io
import pathlib
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from evalsite.core.input_limits import MAX_BYTES, decode_text
from evalsite.core.json_text import JsonTextError, load_json
from evalsite.core.problems import Problem, SuiteError, format_path
from evalsite.core.suite_files import UnreadableFile, read_bounded, resolve_inside
from evalsite.core.yamlsafe import YamlDocument, load_yaml

if TYPE_CHECKING:
    from evalsite.core.suites import Suite as CoreSuite

__all__ = [
    "Refused",
    "Translation",
    "Untranslated",
    "check_translation",
    "parse_translation",
    "identifier",
    "read_text",
    "read_yaml",
    "render_suite",
]

_NOT_ID = re.compile(r"[^a-z0-9-]+")


@dataclass(frozen=True)
class Untranslated:
    """A part of the source evalsite's suite does not carry, and why."""

    file: str
    line: int | None
    what: str
    why: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.what}: {self.why}"


@dataclass(frozen=True)
class Translation:
    """One imported source. ``suite`` is None for a source that is no suite (an evalpin
    results file); ``files`` are written beside the suite, by path relative to it (text or
    bytes); ``notes`` are decisions a reader should know (renamed ids, endpoints to add)."""

    format: str
    source: str
    suite_file: str | None
    suite: dict[str, Any] | None
    files: Mapping[str, str | bytes] = field(default_factory=dict)
    untranslated: tuple[Untranslated, ...] = ()
    notes: tuple[str, ...] = ()
    header: tuple[str, ...] = ()  # comment lines at the top of the suite YAML

    def rendered(self) -> dict[str, bytes]:
        """Every file to write, the suite YAML included, as bytes."""
        out = {
            name: content if isinstance(content, bytes) else content.encode("utf-8")
            for name, content in self.files.items()
        }
        if self.suite is not None and self.suite_file is not None:
            out[self.suite_file] = render_suite(self).encode("utf-8")
        return out


class Refused(SuiteError):
    """An import that writes nothing: the problems that stop it, and everything the walk
    had found untranslated by then, so the command can print the whole list."""

    def __init__(self, problems: list[Problem], untranslated: tuple[Untranslated, ...]) -> None:
        super().__init__(problems)
        self.untranslated = untranslated


def render_suite(translation: Translation) -> str:
    """The suite as YAML, headed by comments: where it came from and what did not come."""
    lines = [f"# Imported by `evalsite import {translation.format}` from {translation.source}."]
    lines += [f"# {line}" if line else "#" for line in translation.header]
    if translation.untranslated:
        lines.append("#")
        lines.append("# Not translated (see docs/importing.md):")
        lines += [f"#   {_one_line(str(item))}" for item in translation.untranslated]
    return "\n".join(lines) + "\n\n" + dump_yaml(translation.suite)


class _Dumper(yaml.SafeDumper):
    """Multi-line text as a literal block (``|``), as a person writes a prompt; a value
    shared by several cases is written out in each, never as an anchor and alias."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None  # the emitter falls back when | cannot hold it
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def dump_yaml(data: Any) -> str:
    """``data`` as YAML in document order, multi-line texts as literal blocks."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def read_text(path: pathlib.Path, display: str | None = None) -> str:
    """The file's text (bounded, UTF-8, no NUL, BOM dropped, CRLF as LF); SuiteError naming
    the file otherwise."""
    name = display or str(path)
    try:
        data = read_bounded(path)
    except UnreadableFile as error:
        raise SuiteError([Problem(name, None, "", str(error))]) from None
    return _text_of(data, name)


def read_yaml(path: pathlib.Path, display: str | None = None) -> YamlDocument:
    """The YAML (or JSON) file at ``path`` with the line of every key; SuiteError otherwise."""
    name = display or str(path)
    try:
        data = read_bounded(path)
    except UnreadableFile as error:
        raise SuiteError([Problem(name, None, "", str(error))]) from None
    return load_yaml(data, filename=name)


def identifier(text: str, fallback: str) -> str:
    """``text`` as an evalsite identifier (lowercase, digits, '-', at most 64), or
    ``fallback`` when nothing of it is left."""
    slug = _NOT_ID.sub("-", str(text).lower()).strip("-")[:64].strip("-")
    return slug or fallback


def suite_name(source: pathlib.Path, default_stem: str, fallback: str) -> str:
    """The suite's name: the source file's, or for the tool's default file name (evaling's
    ``eval.yaml``, promptfoo's ``promptfooconfig.yaml``) its folder's, however the path was
    written (``eval.yaml``, from inside that folder, too)."""
    named = source.absolute().parent.name if source.stem == default_stem else source.stem
    return identifier(named, fallback)


def unique(name: str, taken: set[str]) -> str:
    """``name``, or ``name-2``, ``name-3``… when taken; the result is added to ``taken``."""
    candidate, number = name, 2
    while candidate in taken:
        suffix = f"-{number}"
        candidate, number = name[: 64 - len(suffix)] + suffix, number + 1
    taken.add(candidate)
    return candidate


def check_translation(translation: Translation, *, origin: str = "file") -> list[Problem]:
    """What ``parse_suite`` finds wrong with the translated suite (:func:`parse_translation`);
    an empty list when it validates."""
    if translation.suite is None or translation.suite_file is None:
        return []
    try:
        parse_translation(translation, origin=origin)
    except SuiteError as error:
        return list(error.problems)
    return []


def parse_translation(translation: Translation, *, origin: str = "file") -> CoreSuite:
    """The translated suite as evalsite loads it, written with its files to a temporary
    folder first; SuiteError with its problems when it does not validate."""
    from evalsite.core.suites import parse_suite  # the heavy part, only when checking

    assert translation.suite is not None and translation.suite_file is not None
    rendered = translation.rendered()
    with tempfile.TemporaryDirectory(prefix="evalsite-import-") as folder:
        base = pathlib.Path(folder)
        for name, content in rendered.items():
            target = base / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        return parse_suite(
            rendered[translation.suite_file],
            filename=translation.suite_file,
            base_dir=base if origin == "file" else None,
            origin=origin,
        )


def jsonl_values(text: str) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line of a JSONL text, read with the bounds
    every JSON input has (:func:`load_json`); None for a line that is no JSON."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, load_json(line)
        except JsonTextError:
            yield number, None


def has_system(prompt: Any) -> bool:
    """Whether a prompt (a text or a list of messages) starts with a system message."""
    return isinstance(prompt, list) and bool(prompt) and prompt[0].get("role") == "system"


def variant_specs(prompts: Mapping[str, Any], system: str | None = None) -> dict[str, Any]:
    """The suite's ``variants:`` for named prompts, the first being the task's own (``{}``).

    A variant whose prompt has no system message of its own gets ``system: ""`` when the
    task has one (``system`` or a leading system message): evalsite would otherwise send
    it the task's, which the source tool does not."""
    items = list(prompts.items())
    base_system = system is not None or (bool(items) and has_system(items[0][1]))
    specs: dict[str, Any] = {}
    for index, (name, prompt) in enumerate(items):
        if index == 0:
            specs[name] = {}
            continue
        specs[name] = {"prompt": prompt}
        if base_system and not has_system(prompt):
            specs[name]["system"] = ""
    return specs


def line_of(document: YamlDocument, path: tuple[str | int, ...]) -> int | None:
    """The line of ``path`` in ``document``, or of its nearest parent that has one."""
    while path and path not in document.lines:
        path = path[:-1]
    return document.lines.get(path)


At = tuple[str, int | None, str]  # where a source refers to a file: file, line, key path
UPLOADED = (
    "needs the CLI: a suite added in the browser can refer to no file "
    "(`evalsite import` reads it from the source's folder)"
)


class Collector:
    """Gathers untranslated parts and notes of one source file as an importer walks it,
    and reads the files it refers to.

    Every file a source refers to is read through :meth:`reference` and the readers on it,
    by the rule suite files follow (:func:`~evalsite.core.suite_files.resolve_inside`):
    inside ``folder``, decided by name before reading; with no ``folder`` (a source
    uploaded in the browser) no file at all. A reference that cannot be read is a problem
    at the source's line, never a file's content; the importer walks on, so every one is
    listed, and :meth:`raise_problems` ends the import with all of them."""

    def __init__(
        self,
        file: str,
        document: YamlDocument | None = None,
        *,
        folder: pathlib.Path | None = None,
    ) -> None:
        self.file = file
        self.document = document
        self.folder = folder
        self.untranslated: list[Untranslated] = []
        self.notes: list[str] = []
        self.problems: list[Problem] = []

    def skip(self, path: tuple[str | int, ...], what: str, why: str, *, file: str = "") -> None:
        line = line_of(self.document, path) if self.document is not None else None
        self.untranslated.append(Untranslated(file or self.file, line, what, why))

    def skip_at(self, line: int | None, what: str, why: str, *, file: str = "") -> None:
        self.untranslated.append(Untranslated(file or self.file, line, what, why))

    def unknown_keys(
        self, mapping: Mapping[str, Any], known: set[str], path: tuple[str | int, ...], where: str
    ) -> None:
        """Every key of ``mapping`` not in ``known``, as untranslated."""
        for key in mapping:
            if key not in known:
                self.skip((*path, key), f"{where}{key}", "not a key this importer translates")

    def at(self, path: tuple[str | int, ...]) -> At:
        """Where the key at ``path`` of the source is."""
        line = line_of(self.document, path) if self.document is not None else None
        return self.file, line, format_path(path)

    def problem(self, at: At, message: str) -> None:
        self.problems.append(Problem(at[0], at[1], at[2], message))

    def raise_problems(self) -> None:
        """:class:`Refused` with every problem found and the untranslated list, if any."""
        if self.problems:
            raise Refused(list(self.problems), tuple(self.untranslated))

    def reference(self, written: str, at: At) -> tuple[pathlib.Path, str] | None:
        """The file ``written`` names and its path relative to the source's folder; None,
        with a problem at ``at``, when it is outside or the source has no folder."""
        if self.folder is None:
            self.problem(at, f"{written}: {UPLOADED}")
            return None
        try:
            name = written.removeprefix("file://")  # promptfoo's and evaling's spelling
            return resolve_inside(self.folder, name, folder="the source's folder")
        except UnreadableFile as error:
            self.problem(at, f"{written}: {error}")
            return None

    def read_bytes(
        self, written: str, at: At, *, limit: int = MAX_BYTES
    ) -> tuple[bytes, str] | None:
        """The bytes of the file ``written`` names, bounded, and its path relative to the
        source's folder; None when it cannot be read."""
        found = self.reference(written, at)
        if found is None:
            return None
        try:
            return read_bounded(found[0], limit=limit), found[1]
        except UnreadableFile as error:
            self.problem(at, f"{written}: {error}")
            return None

    def read_text(self, written: str, at: At) -> tuple[str, str] | None:
        """The text of the file ``written`` names (as :func:`read_text` reads it) and the
        name its own problems give it; None when it cannot be read."""
        return self._read(written, at, _text_of)

    def read_yaml(self, written: str, at: At) -> tuple[YamlDocument, str] | None:
        """The YAML (or JSON) file ``written`` names and its name, as :meth:`read_text`."""
        return self._read(written, at, lambda data, name: load_yaml(data, filename=name))

    def _read[T](
        self, written: str, at: At, parse: Callable[[bytes, str], T]
    ) -> tuple[T, str] | None:
        found = self.read_bytes(written, at)
        if found is None or self.folder is None:
            return None
        name = str(self.folder / found[1])
        try:
            return parse(found[0], name), name
        except SuiteError as error:
            self.problems += error.problems
            return None

    def csv_rows(self, text: str, file: str) -> list[tuple[int, dict[str, str]]]:
        """Each row of a CSV file with a header row, as (line, column -> cell); a row that is
        not CSV is a problem at its line, and the rows after it are not read."""
        reader = csv.DictReader(io.StringIO(text))
        rows: list[tuple[int, dict[str, str]]] = []
        try:
            for row in reader:
                rows.append((reader.line_num, row))
        except csv.Error as error:  # the DictReader's line_num is the last good row's
            line = reader.reader.line_num
            self.problem((file, line, ""), f"not valid CSV: {_csv_reason(error)}")
        return rows


def _text_of(data: bytes, name: str) -> str:
    return decode_text(data, filename=name).replace("\r\n", "\n")


def _csv_reason(error: csv.Error) -> str:
    limit = csv.field_size_limit()
    if "field larger than field limit" in str(error):
        return (
            f"a field is longer than {limit:,} characters, the most a CSV field may hold "
            "(write long texts in a YAML or JSONL file)"
        )
    return str(error)
