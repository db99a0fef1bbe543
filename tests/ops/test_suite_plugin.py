"""The suite's own plugin (tests/helpers/plugin.py): a fast hasher, a pinned key, and each
xdist worker on a data dir and a Redis database of its own."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.conf import settings
from django.contrib.auth.hashers import make_password

from tests.helpers.cli import ROOT
from tests.helpers.plugin import (
    TEST_SECRET_KEY,
    pytest_collection_modifyitems,
    worker_redis_url,
)


def test_passwords_are_hashed_with_the_fast_hasher_under_pytest():
    assert make_password("a-long-test-password").startswith("md5$")


def test_the_secret_key_is_pinned_not_read_from_the_data_dir():
    assert settings.SECRET_KEY == TEST_SECRET_KEY
    assert (Path(settings.DATA_DIR) / "secret_key").read_text().strip() != TEST_SECRET_KEY


def test_an_xdist_worker_has_a_data_dir_of_its_own():
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        assert Path(settings.DATA_DIR).name == worker


def test_each_worker_gets_its_own_redis_database_never_the_worker_kill_tests():
    urls = [worker_redis_url("redis://127.0.0.1:6379/0", f"gw{i}") for i in range(20)]
    dbs = [int(url.rsplit("/", 1)[1]) for url in urls]
    assert len(set(dbs[:14])) == 14 and 0 not in dbs and 13 not in dbs
    assert urls[0] == "redis://127.0.0.1:6379/1"


def _item(path: Path, marked: str | None) -> SimpleNamespace:
    def get_closest_marker(name):
        return getattr(pytest.mark, name).mark if name == marked else None

    return SimpleNamespace(
        path=path, nodeid=f"{path.name}::test_x", get_closest_marker=get_closest_marker
    )


@pytest.mark.parametrize("marker", ["processes", "serial"])
def test_a_later_pass_test_whose_file_make_test_would_not_find_is_refused(tmp_path, marker):
    """`make test` collects the `processes` and the `serial` pass from the files whose text
    says mark.processes / mark.serial; a test marked another way (a conftest hook) would run
    in no pass."""
    said = tmp_path / "test_said.py"
    said.write_text(f"pytestmark = pytest.mark.{marker}\n")
    unsaid = tmp_path / "test_unsaid.py"
    unsaid.write_text("def test_x(): pass\n")
    pytest_collection_modifyitems(None, [_item(said, marker), _item(unsaid, None)])
    with pytest.raises(pytest.UsageError, match=f"test_unsaid.py::test_x is marked {marker}"):
        pytest_collection_modifyitems(None, [_item(said, marker), _item(unsaid, marker)])


# What a module of the tests must not import at its top (tests/helpers/references.py says
# why): the reference libraries, the vendors' SDKs, the MCP SDK and the MCP server on it.
HEAVY = ("sklearn", "statsmodels", "scipy", "krippendorff", "anthropic", "openai", "google",
         "mcp", "mcp_types", "evalsite.mcp.server")  # fmt: skip


def top_level_imports(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """The modules a file imports when it is imported: its top-level statements, and those
    inside a top-level `if`, `try` or `with`, not inside a function or class."""
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module
        elif isinstance(node, ast.If | ast.Try | ast.With):
            for field in ("body", "orelse", "finalbody", "handlers"):
                pending.extend(getattr(node, field, []))
        elif isinstance(node, ast.ExceptHandler):
            pending.extend(node.body)


def test_no_module_of_the_tests_imports_a_reference_library_or_an_sdk_at_its_top():
    """Each xdist worker collects every test module: a library a module (or a helper it
    imports) imports at its top is imported by every worker, about 6 s of each one's
    collection before they were deferred."""
    found = [
        f"{path.relative_to(ROOT)}:{line}: {module}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for line, module in top_level_imports(ast.parse(path.read_text()))
        if any(module == heavy or module.startswith(heavy + ".") for heavy in HEAVY)
    ]
    assert found == []
