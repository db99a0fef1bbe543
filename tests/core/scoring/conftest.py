"""The sandbox the execution-check tests run in (helpers: tests/helpers/sandbox.py)."""

from __future__ import annotations

import pytest

from evalsite.core.scoring.sandbox import Sandbox, detect_sandbox


@pytest.fixture(scope="session")
def sandbox() -> Sandbox:
    """bubblewrap, required: these tests must fail, not skip, where it does not work."""
    found = detect_sandbox(opt_out=False)
    assert found.isolation == "bwrap"
    return found
