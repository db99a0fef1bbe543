"""Writing an imported suite and its files under ``evalsite import --out DIR``: never
through a symbolic link inside ``DIR`` (a file's own name or a folder on its way), nor to a
FIFO, device or folder there, by the rule every output path follows
(:func:`~evalsite.core.output_files.check_output`)."""

from __future__ import annotations

import os
import pathlib

from evalsite.core.importers.common import Translation
from evalsite.core.output_files import OutputError, check_output, write_output

__all__ = ["existing_outputs", "output_problems", "write_translation"]


def existing_outputs(translation: Translation, out_dir: pathlib.Path) -> list[pathlib.Path]:
    """The files writing ``translation`` to ``out_dir`` would overwrite (a link counts,
    whether or not it points anywhere)."""
    return [out_dir / name for name in translation.rendered() if os.path.lexists(out_dir / name)]


def output_problems(translation: Translation, out_dir: pathlib.Path) -> list[str]:
    """Why a file of ``translation`` cannot be written under ``out_dir``, one line each: a
    path inside it that is a symbolic link (the file's, or a folder's on its way), a FIFO,
    a device or a folder is refused, ``--force`` or not. ``out_dir`` itself is the
    caller's to name and may be a link."""
    problems: list[str] = []
    for name in translation.rendered():
        *folders, _ = pathlib.PurePosixPath(name).parts
        path = out_dir
        for folder in folders:
            path = path / folder
            if path.is_symlink():
                problems.append(f"{path}: is a symlink, not a folder: {_NO_LINK}")
                break
        else:
            try:
                check_output(out_dir / name)
            except OutputError as error:
                problems.append(str(error))
    return list(dict.fromkeys(problems))


_NO_LINK = "evalsite import writes through no link inside --out"


def write_translation(
    translation: Translation, out_dir: pathlib.Path, *, force: bool = False
) -> list[pathlib.Path]:
    """Write every file under ``out_dir``; OutputError for what :func:`output_problems`
    finds, FileExistsError naming the files that exist unless ``force``. Returns the paths
    written."""
    problems = output_problems(translation, out_dir)
    if problems:
        raise OutputError("\n".join(problems))
    existing = existing_outputs(translation, out_dir)
    if existing and not force:
        raise FileExistsError(", ".join(str(path) for path in existing))
    written = []
    for name, content in translation.rendered().items():
        target = out_dir / name
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise OutputError(f"{target}: cannot write: {error.strerror or error}") from None
        # a new file renamed into place: a link put there since the check is never followed
        write_output(target, content)
        written.append(target)
    return written
