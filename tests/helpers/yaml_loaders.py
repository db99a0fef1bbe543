"""The YAML loaders the suite is read with, and the problems `load_yaml` finds."""

from __future__ import annotations

import pytest

from evalsite.core import yamlsafe

YAML_LOADERS = [yamlsafe.PureLoader]
if hasattr(yamlsafe, "LibyamlLoader"):
    YAML_LOADERS.append(yamlsafe.LibyamlLoader)


def yaml_problems(data: bytes) -> list[str]:
    """The problems `load_yaml` finds in `data` (it must find some)."""
    with pytest.raises(yamlsafe.SuiteError) as caught:
        yamlsafe.load_yaml(data, filename="s.yaml")
    return [str(problem) for problem in caught.value.problems]
