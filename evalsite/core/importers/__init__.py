"""Suites of other tools in evalsite's format: ``evalsite import FORMAT SOURCE`` and the
add-suite page's upload (docs/importing.md).

One module per format: :mod:`.evalpin` (text suites, replies and results), :mod:`.evaling`
(``eval.yaml``), :mod:`.evalblink` (benchmark YAML) and :mod:`.promptfoo`
(``promptfooconfig.yaml``); :mod:`.common` holds the result type and reads the files a
source refers to, :mod:`.outputs` writes a translation under ``--out``. :func:`detect`
names the format of a file by its content, for ``auto``.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any

from evalsite.core.importers.common import (
    Refused,
    Translation,
    Untranslated,
    check_translation,
    identifier,
)
from evalsite.core.importers.outputs import write_translation
from evalsite.core.input_limits import MAX_BYTES, decode_text
from evalsite.core.problems import Problem, SuiteError

__all__ = [
    "FORMATS",
    "Translation",
    "Untranslated",
    "check_translation",
    "detect",
    "detect_text",
    "translate",
    "translate_upload",
    "write_translation",
]

FORMATS = ("evalpin", "evaling", "evalblink", "promptfoo")
_EVALING = {"variants", "cases", "scorecard", "judges", "thresholds", "settings"}


def detect_text(text: str) -> str | None:
    """The format ``text`` is written in, or None when it is none of them."""
    found = _kind(text)
    return None if found == "evalsite" else found


def _kind(text: str) -> str | None:
    """The format of ``text``, ``evalsite`` for evalsite's own, or None."""
    from evalsite.core.importers.evalpin import kind_of

    data = _yaml_data(text)  # None for most of evalpin's files, which are seldom YAML
    if not isinstance(data, dict):
        return "evalpin" if kind_of(text) is not None else None
    keys = set(data)
    if "test_cases" in keys and keys & {"models", "prompts", "evaluation"}:
        return "evalblink"
    if "suite" in keys and "tasks" in keys:
        return "evalsite"
    if keys & {"providers", "targets"} and keys & {"prompts", "tests", "defaultTest"}:
        return "promptfoo"
    if keys & _EVALING and ("models" in keys or "variants" in keys or "prompt" in keys):
        return "evaling"
    return None


def _yaml_data(text: str) -> Any:
    """``text`` read as YAML, or None when it is not YAML."""
    from evalsite.core.yamlsafe import load_yaml

    try:
        return load_yaml(text.encode("utf-8", "surrogatepass"), filename="source").data
    except SuiteError:
        return None


# evalmine's documents that are not suites, by their first key: what each allows that
# evalsite does not (SPEC: evalsite asks models prompts and judges the answers it collects).
_EVALMINE_ONLY = {
    "experiment": (
        "an evalmine agent experiment: its arms run agent harnesses (runner:) in a copy of a "
        "repository and its validators read the repository's diff and the session's final "
        "response; evalsite sends prompts to models and has no repository workspace or agent "
        "runner, so there is nothing to import (an agent harness can be a contestant through "
        "the command provider: docs/providers.md, Command models)"
    ),
    "workflow": (
        "an evalmine workflow: a graph of commands (nodes: with needs:, fan_out: and "
        "artifacts:) run over a repository; evalsite has no workflow runner, so there is "
        "nothing to import"
    ),
    "external_artifacts": (
        "an evalmine external-artifacts evaluation: it ranks answers made elsewhere (a JSONL "
        "of completed outputs) n-way; evalsite judges answers it asks for itself, in pairs, "
        "so there is nothing to import"
    ),
}


def unsupported(text: str) -> str | None:
    """Why ``text`` cannot be imported when it is another tool's document that is not an
    evaluation evalsite can run (evalmine's experiments, workflows, external artifacts);
    None otherwise."""
    data = _yaml_data(text)
    if not isinstance(data, dict):
        return None
    for key, why in _EVALMINE_ONLY.items():
        if isinstance(data.get(key), str):
            return f"this is {why}"
    return None


def detect(source: pathlib.Path) -> str:
    """The format of the file at ``source``; SuiteError saying what was looked for when
    it is none of them."""
    from evalsite.core.suite_files import UnreadableFile, read_bounded

    try:
        text = decode_text(read_bounded(source), filename=str(source)).replace("\r\n", "\n")
    except UnreadableFile as error:
        raise SuiteError([Problem(str(source), None, "", str(error))]) from None
    found = _kind(text)
    if found == "evalsite":
        message = (
            f"already an evalsite suite (its suite and tasks keys): nothing to import; "
            f"`evalsite validate {source}` checks it and `evalsite run {source}` runs it"
        )
        raise SuiteError([Problem(str(source), None, "", message)])
    if found is None and (refusal := unsupported(text)) is not None:
        raise SuiteError([Problem(str(source), None, "", refusal)])
    if found is None:
        message = (
            "cannot tell its format: evalpin's case/prompt:/expect, reply/fail or "
            "'evalpin-results 1' lines; evaling's models/variants/cases/scorecard keys; "
            "evalblink's models/prompts/test_cases; promptfoo's prompts/providers/tests. "
            "Name the format instead of auto"
        )
        raise SuiteError([Problem(str(source), None, "", message)])
    return found


def translate_upload(data: bytes, filename: str) -> Translation | None:
    """An uploaded file in another tool's format, translated; None when the file is in
    none of the formats (an evalsite suite). An upload has no folder: every file it refers
    to is a SuiteError saying the CLI reads it, and none is read (it is written alone to a
    temporary folder only so the importers read it as they read any source)."""
    import tempfile

    try:
        text = decode_text(data, filename=filename).replace("\r\n", "\n")
    except SuiteError:
        return None  # evalsite's own validation words the problem
    format = detect_text(text)
    if format is None:
        return None
    name = pathlib.Path(filename).name or "upload.txt"
    with tempfile.TemporaryDirectory(prefix="evalsite-upload-") as temporary:
        # In a folder named as the file: a source with the default name (promptfooconfig,
        # eval) names its suite after its folder, which must not be the random temporary one.
        folder = pathlib.Path(temporary) / identifier(pathlib.Path(name).stem, "upload")
        folder.mkdir()
        source = folder / name
        source.write_bytes(data)
        try:
            return _named_as_uploaded(translate(format, source, uploaded=True), str(folder))
        except SuiteError as error:
            # A refused import lists what did not translate too, as the command prints it.
            skipped = [
                Problem(item.file, item.line, "", f"not translated: {item.what}: {item.why}")
                for item in getattr(error, "untranslated", ())
            ]
            problems = [_relative(problem, str(folder)) for problem in [*error.problems, *skipped]]
            raise SuiteError(problems) from None


def _named_as_uploaded(translation: Translation, folder: str) -> Translation:
    """The translation naming the upload, never the server's temporary folder (its source
    heads the YAML a member is shown, and what did not translate names its file)."""
    prefix = folder.rstrip("/") + "/"
    return dataclasses.replace(
        translation,
        source=translation.source.replace(prefix, ""),
        untranslated=tuple(
            dataclasses.replace(item, file=item.file.replace(prefix, ""))
            for item in translation.untranslated
        ),
        notes=tuple(note.replace(prefix, "") for note in translation.notes),
    )


def _relative(problem: Problem, folder: str) -> Problem:
    """The problem without the temporary folder in its file name and message."""
    prefix = folder.rstrip("/") + "/"
    return Problem(
        problem.file.replace(prefix, ""),
        problem.line,
        problem.path,
        problem.message.replace(prefix, ""),
        problem.severity,
    )


def translate(
    format: str,
    source: pathlib.Path,
    *,
    replies: pathlib.Path | None = None,
    repeats: int | None = None,
    uploaded: bool = False,
) -> Translation:
    """The file at ``source`` in evalsite's format; SuiteError when it cannot be read, or
    when a file it refers to is outside its folder (or, ``uploaded``, at all). ``replies``
    is the operator's own argument, read wherever it is. A suite over the size any suite may
    be is refused, as too big (:func:`_within_a_suites_size`)."""
    if format == "auto":
        format = detect(source)
    translation = _translated(format, source, replies=replies, repeats=repeats, uploaded=uploaded)
    return _within_a_suites_size(translation)


def _translated(
    format: str,
    source: pathlib.Path,
    *,
    replies: pathlib.Path | None,
    repeats: int | None,
    uploaded: bool,
) -> Translation:
    if format == "evalpin":
        from evalsite.core.importers import evalpin

        return evalpin.translate(source, replies=replies, repeats=repeats)
    if format == "evaling":
        from evalsite.core.importers import evaling

        return evaling.translate(source, uploaded=uploaded)
    if format == "evalblink":
        from evalsite.core.importers import evalblink

        return evalblink.translate(source)
    if format == "promptfoo":
        from evalsite.core.importers import promptfoo

        return promptfoo.translate(source, uploaded=uploaded)
    raise ValueError(f"unknown format {format!r}; one of {', '.join(FORMATS)} or auto")


def _within_a_suites_size(translation: Translation) -> Translation:
    """``translation``, or Refused when its suite file is over the size any suite may be:
    the source's tests or data are too many for one suite (list vars, vars naming vars,
    long files), which is the input's doing, not a fault of the translation."""
    if translation.suite is None or translation.suite_file is None:
        return translation
    size = len(translation.rendered()[translation.suite_file])
    if size <= MAX_BYTES:
        return translation
    message = (
        f"the translated suite would be {size:,} bytes, over the {MAX_BYTES:,} "
        f"({MAX_BYTES >> 20} MiB) a suite may be: split its tests (or the data its vars "
        "read) over several configs"
    )
    problem = Problem(translation.suite_file, None, "", message)
    raise Refused([problem], tuple(translation.untranslated))
