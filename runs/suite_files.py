"""Suite files in the configured suites directory (EVALSITE_SUITES_DIR)."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings


def suite_files() -> list[Path]:
    """YAML files directly in the suites directory, replies files excluded."""
    root = Path(settings.SUITES_DIR)
    if not root.is_dir():
        return []
    return sorted(
        path
        for pattern in ("*.yaml", "*.yml")
        for path in root.glob(pattern)
        if path.is_file() and ".replies." not in path.name
    )
