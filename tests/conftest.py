"""Fixtures shared by the core and the app tests (helpers: tests/helpers/)."""

from __future__ import annotations

import pytest

from evalsite.core import yamlsafe
from tests.helpers.yaml_loaders import YAML_LOADERS


@pytest.fixture(params=YAML_LOADERS, ids=lambda loader: loader.__name__)
def loader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> type:
    """Run a test under libyaml's parser and PyYAML's pure one: both must hold the bounds."""
    monkeypatch.setattr(yamlsafe, "LOADER", request.param)
    return request.param
