"""`evalsite mcp`: serve the MCP tools over stdio (docs/mcp.md)."""

from __future__ import annotations

from importlib.util import find_spec

from evalsite.management import EvalsiteCommand

MISSING_EXTRA = (
    "the MCP server needs the mcp extra: from the checkout, scripts/bootstrap mcp "
    "(or pip install -e '.[mcp]')"
)
OLD_SDK = (
    "the MCP server needs version 2 of the mcp SDK ({name} is missing): pip install 'mcp>=2.3'"
)


class Command(EvalsiteCommand):
    help = "Serve evalsite's MCP tools to an agent over stdio (docs/mcp.md)."
    # stdout carries the protocol only: no system-check output before the server starts.
    requires_system_checks = []
    requires_migrations_checks = False  # the server prepares it, its output sent to stderr

    def handle(self, *args, **options):
        try:
            from evalsite.mcp.server import serve
        except ModuleNotFoundError as error:
            name = error.name or ""
            if name.partition(".")[0] != "mcp":
                raise
            missing = find_spec("mcp") is None
            self.fail(MISSING_EXTRA if missing else OLD_SDK.format(name=name))
        serve()
