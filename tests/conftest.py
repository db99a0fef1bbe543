"""Fixtures shared by the core and the app tests."""

from __future__ import annotations

import pytest

from evalsite.core import yamlsafe

YAML_LOADERS = [yamlsafe.PureLoader]
if hasattr(yamlsafe, "LibyamlLoader"):
    YAML_LOADERS.append(yamlsafe.LibyamlLoader)


@pytest.fixture(params=YAML_LOADERS, ids=lambda loader: loader.__name__)
def loader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> type:
    """Run a test under libyaml's parser and PyYAML's pure one: both must hold the bounds."""
    monkeypatch.setattr(yamlsafe, "LOADER", request.param)
    return request.param


def yaml_problems(data: bytes) -> list[str]:
    """The problems `load_yaml` finds in `data` (it must find some)."""
    with pytest.raises(yamlsafe.SuiteError) as caught:
        yamlsafe.load_yaml(data, filename="s.yaml")
    return [str(problem) for problem in caught.value.problems]
