"""Files a command is told to write (`prices export FILE`, `labels export --out FILE`,
`init PATH`): the one rule for a path someone else named.

- The path must be new or a regular file. A symlink (even a dangling one), a FIFO, a device,
  a socket or a folder is refused and left as it was: the text is written to a new
  regular file and renamed over the path, so allowing them would replace a device node
  (`/dev/full`, run as root) or a symlink with a file, or follow the link somewhere else.
- The text goes to a temporary file made with ``O_EXCL`` beside the path, then an atomic
  rename: a reader never sees half a file, and a planted ``.NAME.tmp`` is never written
  through.
- Every failure is an :class:`OutputError` whose message names the path and says why in
  one line.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

__all__ = ["OutputError", "check_output", "write_output"]

_KINDS = {
    stat.S_IFLNK: "symlink",
    stat.S_IFIFO: "FIFO",
    stat.S_IFCHR: "device",
    stat.S_IFBLK: "device",
    stat.S_IFSOCK: "socket",
    stat.S_IFDIR: "folder",
}


class OutputError(Exception):
    """A path that cannot be written; the message names it and says why."""


def check_output(path: Path) -> None:
    """OutputError when `path` exists and is not a regular file (a symlink, FIFO, device,
    socket or folder)."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    except OSError as error:
        raise OutputError(f"{path}: cannot write: {error.strerror or error}") from None
    if not stat.S_ISREG(mode):
        kind = _KINDS.get(stat.S_IFMT(mode), "special file")
        raise OutputError(
            f"{path}: is a {kind}, not a regular file: name a new file or a regular one"
        )


def write_output(path: Path, text: str | bytes) -> None:
    """Write `text` (UTF-8, ``\\n`` line ends; bytes as they are) to `path`, a new path or
    a regular file; OutputError otherwise, with nothing written."""
    check_output(path)
    try:
        handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:  # a missing folder, no permission
        raise OutputError(f"{path}: cannot write: {error.strerror or error}") from None
    try:
        if isinstance(text, bytes):
            with os.fdopen(handle, "wb") as raw:
                raw.write(text)
        else:
            with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as out:
                out.write(text)
        os.replace(temp, path)
    except OSError as error:  # a full disk, a folder put there meanwhile
        Path(temp).unlink(missing_ok=True)
        raise OutputError(f"{path}: cannot write: {error.strerror or error}") from None
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
