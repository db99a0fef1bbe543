"""evalsite's own face on the command line: its verbs grouped, one line each (`evalsite`,
`evalsite --help`), and its version (`evalsite --version`). Django's commands stay reachable
by name and are listed by `evalsite manage`."""

from __future__ import annotations

import difflib
import sys
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed_version
from typing import TextIO

from evalsite.core.exitcodes import ExitCode

# Every verb of evalsite's apps, in the order a person meets them. A verb added to one of
# these apps and not to a group fails tests/test_cli_face.py.
GROUPS: dict[str, tuple[str, ...]] = {
    "Run & inspect": (
        "init",
        "import",
        "validate",
        "run",
        "list",
        "history",
        "last",
        "report",
        "compare",
        "baseline",
    ),
    "Labels & judge lab": ("labels", "pairs"),
    "Prices & data": ("prices", "models", "cache"),
    "Server": ("serve", "worker", "mcp"),
}
APPS = {"evalsite", "runs", "labels", "lab"}  # the apps whose verbs are evalsite's


def version() -> str:
    try:
        return installed_version("evalsite")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def evalsite_verbs() -> dict[str, str]:
    """{verb: app} of every command the evalsite apps define."""
    import django
    from django.core.management import get_commands

    django.setup()
    return {name: app for name, app in get_commands().items() if app in APPS}


def refuse_unknown(verb: str) -> None:
    """Exit 2 (bad input, not a failed gate) naming the nearest verbs, when `verb` is no
    command of evalsite's or Django's."""
    import django
    from django.core.management import get_commands

    django.setup()
    known = get_commands()
    if verb in known:
        return
    near = difflib.get_close_matches(verb, [*evalsite_verbs(), "manage"], n=3)
    hint = f" (did you mean {' or '.join(near)}?)" if near else ""
    sys.stderr.write(f"error: evalsite has no verb {verb!r}{hint}; `evalsite --help` lists them\n")
    sys.exit(ExitCode.INPUT_ERROR)


def print_help(out: TextIO) -> None:
    from django.core.management import load_command_class

    verbs = evalsite_verbs()
    width = max(len(name) for names in GROUPS.values() for name in names) + 2
    out.write(
        f"evalsite {version()}: evaluate model and prompt changes on your own tasks.\n\n"
        "usage: evalsite VERB [options]     evalsite VERB --help shows a verb's options\n"
    )
    for group, names in GROUPS.items():
        present = [name for name in names if name in verbs]
        if not present:
            continue
        out.write(f"\n{group}:\n")
        for name in present:
            summary = _first_line(load_command_class(verbs[name], name).help)
            out.write(f"  {name:<{width}}{summary}\n")
    out.write(
        "\nDjango's own commands (migrate, createsuperuser, changepassword, shell, …) run as\n"
        "`evalsite manage COMMAND` or by their name; `evalsite manage` lists them.\n"
    )


def _first_line(text: str) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""
