"""Exit codes shared by every command (SPEC §15)."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    GATE_FAILED = 1
    INPUT_ERROR = 2
    RUNTIME_ERROR = 3
    REFUSED = 4
    ABORTED_OVER_BUDGET = 5
