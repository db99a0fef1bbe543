"""The walls between the project's rooms (docs/architecture.md, "What each room may import"),
read from the source with `ast`: every import statement counts, at module level, inside a
function or under `if TYPE_CHECKING:`, so a wall is crossed whether or not the import runs.

No Django and no database: the files are parsed, never imported."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("evalsite", "runs", "labels", "lab")

# What labels, lab and evalsite.mcp may import of runs (docs/architecture.md, "The public
# face of runs"). A name ending in ".*" is the package and every module in it.
PUBLIC_RUNS = (
    "runs.models.*",  # the models, their managers and their methods
    "runs.planning.start",  # plan_file, make_plan, store_plan: a suite file to a stored plan
    "runs.planning.preview",  # what a contestant would be sent (MCP's render_prompt)
    "runs.planning.launch",  # launch: a stored plan to the workers
    "runs.engine.local",  # execute_here: a run in this process
    "runs.results.*",  # reading a run: reports, calibration, summaries, exports
    "runs.forms",  # the form fields every page shares (the cap)
    "runs.setup",  # a ready database
)

MODELS_MAY_USE = ("runs.models", "runs.sealed", "runs.kept")

# Imports that cross a wall today, each to go with a move of issue 29; keyed by
# (importing module, module imported from, name), so a line moving keeps its entry. An entry
# that no longer matches an import fails test_every_allowed_crossing_is_still_made: remove it.
ALLOWED_CROSSINGS: set[tuple[str, str, str | None]] = set()


@dataclass(frozen=True)
class Import:
    """One name (or one module) a module imports, where it does so."""

    module: str  # the importing module
    line: int
    target: str  # the module imported (from)
    name: str | None  # the name taken from it; None when the module itself is imported

    @property
    def key(self) -> tuple[str, str, str | None]:
        return (self.module, self.target, self.name)

    def __str__(self) -> str:
        taken = f"import {self.target}" if self.name is None else f"{self.target}.{self.name}"
        return f"{self.module}:{self.line} {taken}"


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str, root: Path = ROOT) -> bool:
    place = root.joinpath(*name.split("."))
    return place.with_suffix(".py").is_file() or (place / "__init__.py").is_file()


def imports_of(path: Path, root: Path = ROOT) -> list[Import]:
    """Every import in the file at `path`, wherever it stands; `from a import b` where
    `a.b` is a module is an import of the module `a.b`."""
    module = module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [Import(module, node.lineno, alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = ".".join(parts[: len(parts) - node.level + 1]) if node.level else ""
            target = ".".join(part for part in (base, node.module or "") if part)
            for alias in node.names:
                whole = f"{target}.{alias.name}"
                if is_module(whole, root):
                    found.append(Import(module, node.lineno, whole, None))
                else:
                    found.append(Import(module, node.lineno, target, alias.name))
    return found


@cache
def project_imports(root: Path = ROOT) -> tuple[Import, ...]:
    """Every import of the project's packages, read once by the first test that asks (not
    when the module is collected: every pytest worker collects it)."""
    return tuple(
        found
        for package in PACKAGES
        for path in sorted((root / package).rglob("*.py"))
        if "migrations" not in path.parts
        for found in imports_of(path, root)
    )


def inside(module: str, *rooms: str) -> bool:
    return any(module == room or module.startswith(room + ".") for room in rooms)


def public(target: str) -> bool:
    return any(
        inside(target, entry[:-2]) if entry.endswith(".*") else target == entry
        for entry in PUBLIC_RUNS
    )


def crossings(importer: tuple[str, ...], forbidden) -> list[str]:
    """The imports made from inside `importer` that `forbidden(import)` says cross a wall
    and ALLOWED_CROSSINGS does not list."""
    return [
        str(found)
        for found in project_imports()
        if inside(found.module, *importer)
        and forbidden(found)
        and found.key not in ALLOWED_CROSSINGS
    ]


def test_the_scan_sees_imports_in_functions_type_checking_blocks_and_relative_ones(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "sub.py").write_text("")
    (package / "mod.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import sub\n"
        "from .sub import thing\n"
        "if TYPE_CHECKING:\n"
        "    from runs.engine.runner import Shard\n"
        "def later():\n"
        "    import runs.sealed\n"
    )
    found = {(i.target, i.name, i.line) for i in imports_of(package / "mod.py", tmp_path)}
    assert found == {
        ("typing", "TYPE_CHECKING", 1),
        ("pkg.sub", None, 2),
        ("pkg.sub", "thing", 3),
        ("runs.engine.runner", "Shard", 5),
        ("runs.sealed", None, 7),
    }


def test_results_imports_neither_the_engine_nor_planning():
    wall = ("runs.engine", "runs.planning")
    assert crossings(("runs.results",), lambda found: inside(found.target, *wall)) == []


def test_the_engine_does_not_import_planning():
    assert crossings(("runs.engine",), lambda found: inside(found.target, "runs.planning")) == []


def test_the_models_import_no_other_part_of_runs_but_the_sealed_leaf():
    # runs.sealed holds a no-look run's full suite in memory, which a stored suite is read
    # from; it imports only the core (the next test), so the models stay at the bottom.
    # runs.kept moves what a process keeps out of the collector's walks; it imports nothing
    # of the project (the test after next).
    def elsewhere(found: Import) -> bool:
        return inside(found.target, "runs") and not inside(found.target, *MODELS_MAY_USE)

    assert crossings(("runs.models",), elsewhere) == []


def test_the_sealed_store_imports_nothing_of_the_project_but_the_core():
    def outside(found: Import) -> bool:
        return inside(found.target, *PACKAGES) and not inside(found.target, "evalsite.core")

    assert crossings(("runs.sealed",), outside) == []


def test_what_a_process_keeps_imports_nothing_of_the_project():
    assert crossings(("runs.kept",), lambda found: inside(found.target, *PACKAGES)) == []


def test_runs_imports_none_of_labels_lab_or_mcp():
    rooms = ("labels", "lab", "evalsite.mcp")
    assert crossings(("runs",), lambda found: inside(found.target, *rooms)) == []


def test_the_core_imports_nothing_of_the_project_outside_it():
    def outside(found: Import) -> bool:
        return inside(found.target, *PACKAGES) and not inside(found.target, "evalsite.core")

    assert crossings(("evalsite.core",), outside) == []


def test_labels_lab_and_mcp_import_only_the_public_modules_of_runs():
    def internal(found: Import) -> bool:
        return inside(found.target, "runs") and not public(found.target)

    assert crossings(("labels", "lab", "evalsite.mcp"), internal) == []


def test_no_module_imports_another_modules_private_name():
    def private(found: Import) -> bool:
        names = [*found.target.split("."), found.name or ""]
        hidden = [name for name in names if name.startswith("_") and not name.endswith("__")]
        return inside(found.target, *PACKAGES) and bool(hidden)

    assert crossings(PACKAGES, private) == []


def test_every_allowed_crossing_is_still_made():
    made = {found.key for found in project_imports()}
    assert sorted(ALLOWED_CROSSINGS - made, key=str) == []
