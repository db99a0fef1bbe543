"""The MCP server (`evalsite mcp`, SPEC §14): tools over stdio that call the same core as
the command line.

- :mod:`evalsite.mcp.replies` shapes replies and refusals from plain values (no Django);
- :mod:`evalsite.mcp.tools` is the workflow where the tools meet the ORM (sync), with
  :mod:`evalsite.mcp.cases` (one case: its prompt, its verdicts) and
  :mod:`evalsite.mcp.history` (a suite's runs, its baseline) beside it;
- :mod:`evalsite.mcp.server` registers the tools with the official SDK and runs them.

Only :mod:`evalsite.mcp.server` imports the ``mcp`` SDK, an optional extra.
"""
