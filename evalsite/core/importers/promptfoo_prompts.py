"""promptfoo's ``prompts`` as evalsite prompts, and its YAML read as promptfoo reads it.

A prompt is inline text (or a prompt object whose ``id`` is its text, as promptfoo reads one
with no ``raw``), a file (``file://x.txt``, or a bare path such as ``prompts.txt``,
which promptfoo reads as a file too), a chat file (JSON or YAML messages, JSONL one chat a
line) or a CSV file with a ``prompt`` column. What evalsite cannot carry is listed: prompts
stored in a service (``pf://``, ``langfuse://``…), prompt functions, globs, a prompt's own
``config``, a chat file that is a Nunjucks template, a prompt reading ``_conversation``
(earlier turns with the model's answers, which no evalsite case sees), and a template
evalsite's Jinja2 cannot compile (promptfoo's ``load`` filter, say). Nunjucks' ``dump`` is
Jinja2's ``tojson``, with a note on how they differ.
"""

from __future__ import annotations

import pathlib
import re
from typing import Any

from evalsite.core import jinja
from evalsite.core.importers.common import At, Collector, identifier, jsonl_values, unique
from evalsite.core.problems import SuiteError
from evalsite.core.yamlsafe import YamlDocument, load_yaml

__all__ = ["as_js_yaml", "prompts", "read_js_yaml"]

CODE = {".js", ".cjs", ".mjs", ".ts", ".py"}
DATA = {".json", ".yaml", ".yml"}
PROMPT_KEYS = {"id", "label", "raw"}
PLAIN = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
ANY_TAG = re.compile(r"\{\{.*?\}\}|\{%|\{#", re.S)
_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*)://")
# promptfoo reads a one-line prompt that looks like a path as a file (its maybeFilePath)
_PATH = re.compile(r"[^\s{}]*(/[^\s{}]*|\.[A-Za-z0-9]{1,5})")
_DUMP = re.compile(r"\|\s*dump\b")
DUMP_NOTE = (
    "Nunjucks' dump filter is Jinja2's tojson here: keys sorted, ', ' and ': ' between "
    "items, and <, >, & and ' escaped as \\u003c… where promptfoo's JSON.stringify writes "
    "them as they are"
)


def prompts(value: Any, c: Collector) -> list[tuple[str, Any]]:
    """(variant name, prompt) of each prompt; a prompt is a text or a list of messages."""
    if isinstance(value, dict) and value and not set(value) & PROMPT_KEYS:
        # promptfoo's map form, {path or text: label}: each entry a prompt with its label
        value = [
            {"id" if _is_reference(str(key)) else "raw": key, "label": label}
            for key, label in value.items()
        ]
    items = value if isinstance(value, list) else [] if value is None else [value]
    out: list[tuple[str, Any]] = []
    taken = {"base"}
    for index, item in enumerate(items):
        path = ("prompts", index)
        for k, (label, text) in enumerate(_prompt_texts(item, path, c)):
            if isinstance(text, str):
                text = _compiled(text, path, c)
                if text is None:
                    continue
            base = identifier(label, f"prompt-{index + 1}") if label else f"prompt-{index + 1}"
            out.append((unique(base if k == 0 else f"{base}-{k + 1}", taken), text))
    return out


def needs_jinja(text: str) -> bool:
    """Nunjucks beyond plain ``{{name}}`` (filters, tags, comments) needs Jinja2."""
    return any(not PLAIN.fullmatch(tag) for tag in ANY_TAG.findall(text))


def _compiled(text: str, path: tuple[Any, ...], c: Collector) -> str | None:
    """``text`` as evalsite's Jinja2 compiles it (``dump`` as ``tojson``), or None, listed."""
    if _CONVERSATION.search(text):
        c.skip(path, "prompt", CONVERSATION)
        return None
    if not needs_jinja(text):
        return text
    if _DUMP.search(text):
        text = _DUMP.sub("| tojson", text)
        if DUMP_NOTE not in c.notes:
            c.notes.append(DUMP_NOTE)
    error = jinja.check(text)
    if error is None:
        return text
    c.skip(path, "prompt", f"evalsite's Jinja2 cannot compile it: {error}")
    return None


def _prompt_texts(item: Any, path: tuple[Any, ...], c: Collector) -> list[tuple[str, Any]]:
    if isinstance(item, dict):
        for key in item:
            if key not in PROMPT_KEYS:
                why = (
                    "a prompt's own provider config (a response format, say): evalsite's "
                    "variants take prompt, system and params only"
                    if key == "config"
                    else "not a key this importer translates"
                )
                c.skip((*path, key), f"prompt {key}", why)
        label = _name(item)
        raw = item.get("raw")
        if isinstance(raw, str):
            return [(label, raw)]
        if not isinstance(item.get("id"), str) or not item["id"]:
            c.skip(path, "prompt", "a prompt object needs raw text or an id")
            return []
        if not _is_reference(item["id"]):  # promptfoo's raw is the id when none is given
            _note_id_is_the_text(item, path, c)
            return [(label, item["id"])]
        found = _prompt_texts(item["id"], path, c)
        return [(label or name, text) for name, text in found]
    if not isinstance(item, str):
        c.skip(path, "prompt", "not a text or a file:// reference")
        return []
    scheme = _SCHEME.match(item)
    if scheme and scheme[1] != "file":
        why = f"a prompt kept in {scheme[1]}:// (a prompt service), which evalsite cannot fetch"
        c.skip(path, f"prompt {item}", why + ": paste its text")
        return []
    return _prompt_file(item, path, c) if _is_reference(item) else [("", item)]


def _name(item: dict[str, Any]) -> str:
    """The variant name of a prompt object: its label, or its id when the label is none
    (several lines are a text, not a name)."""
    label = item.get("label")
    if isinstance(label, str) and label.strip() and "\n" not in label.strip():
        return label
    return str(item.get("id") or "")


def _note_id_is_the_text(item: dict[str, Any], path: tuple[Any, ...], c: Collector) -> None:
    label = item.get("label")
    if not isinstance(label, str) or not ("\n" in label.strip() or ANY_TAG.search(label)):
        return
    c.notes.append(
        f"prompt {item['id']!r} (prompts[{path[-1]}]) has no raw, so promptfoo sends its id "
        f"as the prompt's whole text and shows its label (a text of {len(label)} characters) "
        "as its name only; the imported suite sends the id too. If the label is the prompt "
        "you meant, write it as raw: and import again"
    )


def _is_reference(text: str) -> bool:
    return text.startswith("file://") or _PATH.fullmatch(text) is not None


def _prompt_file(written: str, path: tuple[Any, ...], c: Collector) -> list[tuple[str, Any]]:
    name = pathlib.PurePosixPath(written.removeprefix("file://"))
    suffix = name.suffix.lower()
    if suffix in CODE or any(ch in str(name) for ch in "*?:"):
        c.skip(path, f"prompt {written}", "prompt functions and globs are code evalsite runs not")
        return []
    found = c.read_text(written, c.at(path))
    if found is None:
        return []
    text, file = found
    if suffix == ".csv":
        return _csv_prompts(text, file, written, path, c)
    if suffix == ".jsonl":
        return _jsonl_prompts(text, name.stem, written, path, c)
    if suffix in DATA:
        return _chat_file(text, file, name.stem, written, path, c)
    parts = [part.strip("\n") for part in re.split(r"\n-{3,}\n", text)]
    return [(name.stem, part) for part in parts if part]  # promptfoo's separator: a --- line


def _chat_file(
    text: str, file: str, stem: str, written: str, path: tuple[Any, ...], c: Collector
) -> list[tuple[str, Any]]:
    if _CONVERSATION.search(text):
        c.skip(path, f"prompt {written}", CONVERSATION)
        return []
    if "{%" in text or "{#" in text:
        c.skip(path, f"prompt {written}", NUNJUCKS_CHAT)
        return []
    try:
        data = as_js_yaml(load_yaml(text.encode("utf-8", "surrogatepass"), filename=file)).data
    except SuiteError as error:
        if "{{" in text:  # e.g. "content": {{ question | dump }}, JSON only once rendered
            c.skip(path, f"prompt {written}", NUNJUCKS_CHAT)
        else:
            c.problems += error.problems
        return []
    if not _is_chat(data):
        c.skip(path, f"prompt {written}", "not a list of {role, content} messages")
        return []
    return [(stem, [{"role": m["role"], "content": m["content"]} for m in data])]


# promptfoo's var holding the earlier turns of a test's conversation
_CONVERSATION = re.compile(r"(?<![\w.])_conversation\b")
CONVERSATION = (
    "reads _conversation, the earlier turns promptfoo keeps per provider, prompt and "
    "metadata.conversationId (every earlier test of the same provider and prompt when no "
    "test names one), each with the answer the model gave: evalsite's cases are "
    "independent, no case sees another's answer, so the conversation cannot be rebuilt; "
    "a case whose messages write the earlier turns out (the assistant's words fixed) is "
    "the nearest evalsite has"
)
NUNJUCKS_CHAT = (
    "a chat prompt file that is a Nunjucks template (promptfoo renders it, then reads the "
    "JSON); evalsite renders each message's content: write the messages with the tags "
    "inside their contents"
)


def _jsonl_prompts(
    text: str, stem: str, written: str, path: tuple[Any, ...], c: Collector
) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for number, chat in jsonl_values(text):
        if not _is_chat(chat):
            c.skip(path, f"prompt {written} line {number}", "not a JSON list of messages")
            continue
        out.append((stem, [{"role": m["role"], "content": m["content"]} for m in chat]))
    return out


def _csv_prompts(
    text: str, file: str, written: str, path: tuple[Any, ...], c: Collector
) -> list[tuple[str, Any]]:
    rows = c.csv_rows(text, file)
    if not rows or "prompt" not in rows[0][1]:
        why = "a CSV of prompts needs a 'prompt' column (and may have 'label')"
        c.skip(path, f"prompt {written}", why)
        return []
    return [
        (row.get("label") or f"{pathlib.PurePosixPath(file).stem}-{number}", row["prompt"])
        for number, (_, row) in enumerate(rows, start=1)
        if row.get("prompt")
    ]


def _is_chat(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(
            isinstance(m, dict)
            and m.get("role") in {"system", "user", "assistant"}
            and isinstance(m.get("content"), str)
            for m in value
        )
    )


# --- YAML as js-yaml reads it ----------------------------------------------------------------

_YAML_12_BOOL = {"true", "True", "TRUE", "false", "False", "FALSE"}
_YAML_12_NUMBER = re.compile(
    r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+"
    r"|[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)"
)


def as_js_yaml(document: YamlDocument) -> YamlDocument:
    """``document`` as promptfoo reads it (js-yaml, YAML 1.2): a plain scalar that YAML 1.1
    reads as a boolean or number and 1.2 does not (``Yes``, ``off``, ``1:20``, ``1_000``)
    keeps its text; ``012`` is twelve."""
    data = document.data
    for path, text in document.coerced.items():
        if text in _YAML_12_BOOL:
            continue
        if not _YAML_12_NUMBER.fullmatch(text):
            data = _set(data, path, text)
        elif re.fullmatch(r"[-+]?[0-9]+", text):
            data = _set(data, path, int(text, 10))
    return YamlDocument(data, document.lines, {})


def _set(data: Any, path: tuple[str | int, ...], value: Any) -> Any:
    if not path:
        return value
    holder = data
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = value
    return data


def read_js_yaml(c: Collector, written: str, at: At) -> tuple[YamlDocument, str] | None:
    """The YAML or JSON file ``written`` names, read as promptfoo reads it."""
    found = c.read_yaml(written, at)
    return None if found is None else (as_js_yaml(found[0]), found[1])
