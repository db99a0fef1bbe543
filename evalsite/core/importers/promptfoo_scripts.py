"""promptfoo's script providers as evalsite command models.

promptfoo runs ``exec: COMMAND`` with the prompt as its first argument (then the options
and the context as JSON) and takes its stdout; ``file://provider.py[:function]`` (or
``python:…``) calls ``call_api(prompt, options, context)`` and takes the ``output`` of the
mapping it returns. evalsite's command provider sends a program its request as JSON on
stdin instead. So the import writes a small program beside the suite,
``promptfoo_provider.py``, that reads evalsite's request and calls the script promptfoo's
way, and ``promptfoo_providers.json``, which says for each command model which script,
where and with what config; the note gives the variable that names the program. The script
gets the rendered prompt and the provider's ``config``; the case's vars are not in
evalsite's request, so its context has none (the note says so). JavaScript providers stay
listed: evalsite runs no JavaScript.
"""

from __future__ import annotations

import json
import pathlib
import shlex
from typing import Any

from evalsite.core.importers.common import Collector, identifier, unique
from evalsite.core.providers.command import command_variable

__all__ = ["ADAPTER", "ADAPTER_PROGRAM", "TABLE", "script_model"]

ADAPTER = "promptfoo_provider.py"
ADAPTER_PROGRAM = '''\
"""Runs a promptfoo script provider as an evalsite command model (written by `evalsite
import promptfoo`): `python3 promptfoo_provider.py NAME` runs the script that
promptfoo_providers.json, beside this file, holds under NAME. evalsite sends the request as
JSON on stdin; the script is called the way promptfoo calls it, in the folder it is in.
"""

import asyncio
import importlib.util
import json
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "promptfoo_providers.json")) as table:
    script = json.load(table)[sys.argv[1]]
request = json.load(sys.stdin)
messages = request["messages"]
only = messages[0] if len(messages) == 1 else None
if only and only["role"] == "user" and isinstance(only["content"], str):
    prompt = only["content"]
else:  # a chat prompt: promptfoo hands a script the messages as JSON text
    prompt = json.dumps(messages)
options = {"config": script["config"]}
context = {"vars": {}}  # evalsite's request does not carry the case's vars
os.chdir(script["folder"])
if script["kind"] == "exec":
    argv = [*script["command"], prompt, json.dumps(options), json.dumps(context)]
    done = subprocess.run(argv, capture_output=True, text=True)
    sys.stderr.write(done.stderr)
    sys.stdout.write(done.stdout)
    sys.exit(done.returncode)
sys.path.insert(0, os.path.dirname(os.path.abspath(script["file"])))
spec = importlib.util.spec_from_file_location("promptfoo_script", script["file"])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
result = getattr(module, script["function"])(prompt, options, context)
if asyncio.iscoroutine(result):
    result = asyncio.run(result)
if result.get("error"):
    sys.exit(str(result["error"]))
output = result.get("output")
print(output if isinstance(output, str) else json.dumps(output))
'''
TABLE = "promptfoo_providers.json"
_JAVASCRIPT = (".js", ".mjs", ".cjs", ".ts", ".mts")


def script_model(
    provider: str,
    config: dict[str, Any],
    label: Any,
    path: tuple[Any, ...],
    c: Collector,
    files: dict[str, str],
    taken: list[str],
) -> str | None:
    """``command/<name>`` for a promptfoo script provider, its adapter in ``files`` and a
    note giving its variable; None (listed with why) for one it cannot call."""
    called = _called(provider)
    if isinstance(called, str):
        c.skip(path, f"provider {provider}", called)
        return None
    kind, arguments, stem = called
    if kind == "python":  # a file reference, by the rule every other one follows
        scheme = "file://" if provider.startswith("file://") else ""
        found = c.reference(scheme + arguments[0], c.at(path))
        if found is None:
            return None
        arguments = [found[1], arguments[1]]
    commands = {model.partition("/")[2] for model in taken if model.startswith("command/")}
    name = unique(identifier(label or stem, "script"), commands)
    folder = str(c.folder) if c.folder is not None else "."
    entry: dict[str, Any] = {"kind": kind, "folder": folder, "config": config}
    if kind == "exec":
        entry["command"] = arguments
    else:
        entry["file"], entry["function"] = arguments
    table = json.loads(files.get(TABLE, "{}"))
    table[name] = entry
    files[TABLE] = json.dumps(table, indent=2, default=str) + "\n"
    files[ADAPTER] = ADAPTER_PROGRAM
    command = shlex.quote(f"python3 {ADAPTER} {name}")
    c.notes.append(
        f"{provider} is command/{name}: {ADAPTER} and {TABLE} are written beside the "
        f"suite; run from the suite's folder with {command_variable(name)}={command}. "
        f"It calls the script in {folder} promptfoo's way, with the rendered prompt and the "
        "provider's config; the case's vars are not in evalsite's request, so its context "
        "has none"
    )
    return f"command/{name}"


def _called(provider: str) -> tuple[str, list[str], str] | str:
    """(kind, arguments, a name for it) of a script provider, or why it cannot be called."""
    prefix, _, rest = provider.partition(":")
    if prefix == "exec":
        try:
            argv = shlex.split(rest.strip())
        except ValueError as error:
            return f"its command line cannot be read: {error}"
        if not argv:
            return "exec: names no command"
        scripts = [word for word in argv if "." in pathlib.PurePosixPath(word).name]
        return "exec", argv, pathlib.PurePosixPath(scripts[0] if scripts else argv[0]).stem
    target = provider.removeprefix("file://").removeprefix("python:")
    file, _, function = target.partition(":")
    if file.lower().endswith(_JAVASCRIPT):
        return (
            "a JavaScript provider: evalsite runs no JavaScript; wrap it in a program that "
            "reads evalsite's request as JSON on stdin (docs/providers.md#command-models)"
        )
    if not file.lower().endswith(".py") and prefix != "python":
        return (
            "a script promptfoo runs its own way: wrap it in a program that reads evalsite's "
            "request as JSON on stdin (docs/providers.md#command-models)"
        )
    return "python", [file, function or "call_api"], pathlib.PurePosixPath(file).stem
