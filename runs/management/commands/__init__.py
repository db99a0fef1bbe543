"""evalsite's verbs on runs, suites and prices; `EvalsiteCommand` (evalsite.management) is
their base, and serve, worker and mcp are the project's (evalsite.management.commands)."""
