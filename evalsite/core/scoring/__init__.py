"""Scoring one answer (SPEC §7): schema verdict, deterministic checks, sandboxed execution
checks, weighted match, single-answer grades, and the pure aggregates over answers.
docs/checks.md is the user-facing description of all of it.

Import from the module that holds what you need (``evalsite.core.scoring.aggregate``,
``….checks``, ``….sandbox``…): this package imports none of them, so a reader of the
aggregates (every models module) does not load the checks, the sandbox and JSON Schema."""
