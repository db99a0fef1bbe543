"""Problems found in a suite and the locations they point at.

A *path* is a tuple of mapping keys and list indexes, e.g. ``("tasks", 0, "rubrik")``,
shown as ``tasks[0].rubrik``. A :class:`SourceMap` turns a path into the file and 1-based
line it came from, so every check can name its line without knowing which file (suite,
cases, labels or schema file) the value was read from.

Every :class:`Problem` is scrubbed of provider-key-shaped strings when it is created, so no
message, path or file name built from user input can repeat a key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from evalsite.core.keys import redact

Path = tuple[str | int, ...]
Severity = Literal["error", "warning"]

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def format_path(path: Path) -> str:
    """Show a path as ``tasks[0].vars.ticket``; keys that are not plain names are quoted."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part, ensure_ascii=False)}]"
    return out


@dataclass(frozen=True)
class Problem:
    """One error or warning, located as precisely as the input allows.

    ``line`` is 1-based and None only when no line applies (a missing file, a file too big to
    read). ``path`` is "" for the file as a whole. All text fields are redacted on creation.
    """

    file: str
    line: int | None
    path: str
    message: str
    severity: Severity = "error"

    def __post_init__(self) -> None:
        for name in ("file", "path", "message"):
            object.__setattr__(self, name, redact(getattr(self, name)))

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        parts = [where, self.path] if self.path else [where]
        label = "warning: " if self.severity == "warning" else ""
        return ": ".join(parts) + f": {label}{self.message}"


def format_problems(problems: Iterable[Problem]) -> str:
    """All problems, one per line, in the order given (errors before warnings is the caller's)."""
    return "\n".join(str(problem) for problem in problems)


class SuiteError(Exception):
    """A suite (or a file it references) was refused; ``problems`` holds every error found.

    ``warnings`` carries the warnings found on the way, so a caller can show them too.
    ``str()`` of the exception is the formatted list, never a traceback.
    """

    def __init__(self, problems: Iterable[Problem], warnings: Iterable[Problem] = ()) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        self.warnings: tuple[Problem, ...] = tuple(warnings)
        super().__init__(format_problems(self.problems))


class SourceMap:
    """Where each path of an assembled suite document came from.

    Layers are added per file: the suite file at prefix ``()``, a cases file at
    ``("tasks", 2, "cases")`` and so on. The longest matching prefix wins; inside a layer
    a path without a line of its own takes its nearest parent's line.
    """

    def __init__(self, file: str, lines: Mapping[Path, int | None]) -> None:
        self._layers: list[tuple[Path, str, Mapping[Path, int | None]]] = []
        self.add((), file, lines)

    @property
    def file(self) -> str:
        """Display name of the suite file itself."""
        return self._layers[0][1]

    def add(self, prefix: Path, file: str, lines: Mapping[Path, int | None]) -> None:
        """Say that everything under ``prefix`` was read from ``file`` (paths relative)."""
        self._layers.append((prefix, file, lines))
        self._layers.sort(key=lambda layer: len(layer[0]), reverse=True)

    def locate(self, path: Path) -> tuple[str, int | None]:
        """The file and line for ``path`` (the nearest located parent's line if it has none)."""
        for prefix, file, lines in self._layers:
            if path[: len(prefix)] == prefix:
                rel = path[len(prefix) :]
                while rel and rel not in lines:
                    rel = rel[:-1]
                return file, lines.get(rel)
        raise AssertionError("the root layer matches every path")

    def problem(self, path: Path, message: str, *, severity: Severity = "error") -> Problem:
        """A Problem at ``path`` with its file and line filled in."""
        file, line = self.locate(path)
        return Problem(file, line, format_path(path), message, severity)


def strings_in(data: Any) -> list[str]:
    """Every string :func:`walk_strings` yields, without the paths (a path a string costs
    more than the walk: checks that rarely find anything look here first)."""
    found: list[str] = []
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, Mapping):
            found += (key for key in value if isinstance(key, str))
            stack += value.values()
        elif isinstance(value, list | tuple):
            stack += value
    return found


def walk_strings(data: Any, prefix: Path = ()) -> Iterator[tuple[Path, str]]:
    """Every string in ``data`` (mapping keys included) with the path it sits at.

    A key yields the path of the entry it names. Iterative, so depth never recurses.
    """
    stack: list[tuple[Path, Any]] = [(prefix, data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            yield path, value
        elif isinstance(value, Mapping):
            for key, item in value.items():
                if isinstance(key, str):
                    yield (*path, key), key
                stack.append(((*path, key), item))
        elif isinstance(value, list | tuple):
            stack.extend(((*path, index), item) for index, item in enumerate(value))
