"""Code the tests share: factories, the browser and engine helpers, the pytest plugin.
Fixtures live in conftest.py files, which import from here; no test imports a conftest.py."""
