"""The verbs that serve no pages start without the web: `evalsite validate` and `evalsite run`
import no view, no URLconf and no MCP server, and validate no numpy and no report builder
(the URL system checks imported all of them, through labels.queue and runs.results.calibration).
Nor does validate import an HTTP client, which only a call needs, or Jinja2, which only a
suite with `templating: jinja2` does (issue 31: every models module imported both)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from evalsite.console import YOUNG_COLLECTED_AT
from tests.helpers.cli import cli_env

ROOT = Path(__file__).resolve().parents[2]
WEB = ("evalsite.urls", "evalsite.views", "labels.views", "lab.views", "runs.views")
MCP = ("evalsite.mcp", "mcp")
RUN_ONLY = (
    "numpy",
    "evalsite.core.report.build",
    "evalsite.core.stats",
    "runs.results.calibration",
)
CALLS_ONLY = ("httpx", "aiohttp", "certifi")
REPORT_RENDERERS = (  # the report's files and the comparison of two runs
    "evalsite.core.report.html",
    "evalsite.core.report.markdown",
    "evalsite.core.report.charts",
    "evalsite.core.report.compare",
)
HTTPX_CLI = ("click", "rich", "pygments")  # what importing httpx imports with it
JINJA = ("jinja2", "evalsite.core.jinja_engine", "evalsite.core.jinja_budget")
# Runs a verb as the console script does, then lists every module it imported.
PROBE = """
import sys
from evalsite.console import main
try:
    main(sys.argv[2:])
finally:
    open(sys.argv[1], "w").write("\\n".join(sorted(sys.modules)))
"""
TWO_FAKES = (
    "suite: tiny\nversion: 1\nmodels: [fake/small, fake/large]\n"
    "tasks:\n  - id: one\n    prompt: hi\n    cases: [{id: a}]\n"
)


def imported_by(tmp_path: Path, *args: str) -> set[str]:
    return set(probed(tmp_path, PROBE, *args).split())


def probed(tmp_path: Path, probe: str, *args: str) -> str:
    """What `probe` wrote after running the verb `args` in a process of its own."""
    written = tmp_path / "probed.txt"
    done = subprocess.run(
        [sys.executable, "-c", probe, str(written), *args],
        cwd=ROOT,
        env=cli_env(tmp_path / "data"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return written.read_text()


def under(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(f"{p}.") for p in packages))


def test_validate_imports_no_view_no_mcp_no_numpy_and_no_report_builder(tmp_path):
    modules = imported_by(tmp_path, "validate", "examples/support-desk.yaml")

    assert under(modules, WEB + MCP + RUN_ONLY) == []


def test_validate_imports_no_http_client_and_no_jinja_for_a_suite_without_jinja(tmp_path):
    modules = imported_by(tmp_path, "validate", "examples/support-desk.yaml")

    assert "evalsite.core.providers.anthropic" in modules  # it did build the providers
    assert under(modules, CALLS_ONLY + HTTPX_CLI + JINJA) == []


def test_validate_imports_jinja_for_a_jinja2_suite(tmp_path):
    suite = tmp_path / "jinja.yaml"
    suite.write_text(TWO_FAKES.replace("version: 1\n", "version: 1\ntemplating: jinja2\n"))

    modules = imported_by(tmp_path, "validate", str(suite))

    assert {"jinja2", "evalsite.core.jinja_engine"} <= modules
    assert under(modules, CALLS_ONLY) == []


def test_a_run_imports_no_view_and_no_mcp(tmp_path):
    suite = tmp_path / "tiny.yaml"
    suite.write_text(TWO_FAKES)

    modules = imported_by(tmp_path, "run", str(suite), "--fake")

    assert "evalsite.core.report.build" in modules  # it did run to its report
    assert under(modules, WEB + MCP) == []


# Runs a verb as the console script does; writes how many collections the cyclic collector
# made until Django was set up (every models module imported), and whether it collects
# while the verb runs (and after how many allocations its young generation is collected) and
# after.
GC_PROBE = """
import gc, json, sys
import django
from django.core.management.base import BaseCommand
from evalsite.console import main
made = [0]
gc.callbacks.append(lambda phase, info: made.__setitem__(0, made[0] + (phase == "start")))
seen = {}
setup, execute = django.setup, BaseCommand.execute
def noting_setup(*args, **options):
    setup(*args, **options)
    seen.setdefault("until_set_up", made[0])
def noting(self, *args, **options):
    seen.update(collecting=gc.isenabled(), young_at=gc.get_threshold()[0])
    return execute(self, *args, **options)
django.setup, BaseCommand.execute = noting_setup, noting
try:
    main(sys.argv[2:])
finally:
    seen["collecting_after"] = gc.isenabled()
    open(sys.argv[1], "w").write(json.dumps(seen))
"""


def test_the_collector_stays_out_of_the_start_up_and_collects_for_the_verb(tmp_path):
    """Start-up imports Django and every models module, which live until the process exits;
    the cyclic collector used to scan them about 150 times while they were imported. The
    verb's own work, whose containers nearly all die young, has its young generation
    collected every YOUNG_COLLECTED_AT allocations, not Python's 700."""
    seen = json.loads(probed(tmp_path, GC_PROBE, "validate", "examples/support-desk.yaml"))

    assert seen == {
        "until_set_up": 0,
        "collecting": True,
        "young_at": YOUNG_COLLECTED_AT,
        "collecting_after": True,
    }


def test_a_run_whose_models_answer_here_imports_no_http_client(tmp_path):
    (tmp_path / "tiny.yaml").write_text(TWO_FAKES)

    modules = imported_by(tmp_path, "run", str(tmp_path / "tiny.yaml"), "--fake")

    assert {"evalsite.core.report.build", "evalsite.core.providers.fake"} <= modules
    assert under(modules, CALLS_ONLY + HTTPX_CLI) == []


# Sets Django up as every verb does (every models module imported), then lists the modules.
SETUP_PROBE = """
import os, sys
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
try:
    django.setup()
finally:
    open(sys.argv[1], "w").write("\\n".join(sorted(sys.modules)))
"""
SCORING = (  # scoring an answer: the models read the aggregates (the suite parser, match rules)
    "evalsite.core.scoring.checks",
    "evalsite.core.scoring.execution",
    "evalsite.core.scoring.sandbox",
    "evalsite.core.scoring.grading",
    "evalsite.core.scoring.answer",
    "runs.engine.scoring",
)


def test_every_verbs_start_up_imports_no_scoring_of_answers(tmp_path):
    """Every models module is imported before any verb runs; runs.models.answer reads the
    aggregates, and importing them once imported the whole scoring package with them."""
    modules = set(probed(tmp_path, SETUP_PROBE).split())

    assert "evalsite.core.scoring.aggregate" in modules
    assert under(modules, SCORING) == []


def test_listing_runs_imports_no_numpy_and_no_report_renderer(tmp_path):
    """`evalsite list` prints from the stored reports: the report and statistics packages
    imported every module they hold, numpy with them, for a verb that uses a few."""
    (tmp_path / "tiny.yaml").write_text(TWO_FAKES)
    imported_by(tmp_path, "run", str(tmp_path / "tiny.yaml"), "--fake")

    modules = imported_by(tmp_path, "list")

    assert "runs.results.listing" in modules  # it did list the run
    assert under(modules, ("numpy", *REPORT_RENDERERS)) == []


# Runs a verb as the console script does; writes which of ONLY were imported when the verb
# started, and which when it ended.
LATER_PROBE = """
import json, sys
from django.core.management.base import BaseCommand
from evalsite.console import main
ONLY = ("numpy", "evalsite.core.report.build", "runs.results.reporting", "runs.engine.later")
seen = {}
execute = BaseCommand.execute
def noting(self, *args, **options):
    seen["at_start"] = sorted(m for m in ONLY if m in sys.modules)
    return execute(self, *args, **options)
BaseCommand.execute = noting
try:
    main(sys.argv[2:])
finally:
    seen["at_end"] = sorted(m for m in ONLY if m in sys.modules)
    open(sys.argv[1], "w").write(json.dumps(seen))
"""


def test_a_run_imports_numpy_and_the_report_only_once_it_runs(tmp_path):
    """What a run uses after its answers (runs.engine.later) is imported beside them, not
    before the first call: `evalsite run` started with none of it."""
    (tmp_path / "tiny.yaml").write_text(TWO_FAKES)

    seen = json.loads(probed(tmp_path, LATER_PROBE, "run", str(tmp_path / "tiny.yaml"), "--fake"))

    assert seen["at_start"] == []
    assert "runs.engine.later" in seen["at_end"] and "numpy" in seen["at_end"]


# Runs a verb as the console script does; writes the tags of each system check run.
CHECKS_PROBE = """
import json, sys
from django.core import checks
from evalsite.console import main
ran = []
run_checks = checks.run_checks
def noting(*args, tags=None, **options):
    ran.append(sorted(tags or ["every check"]))
    return run_checks(*args, tags=tags, **options)
checks.run_checks = noting
try:
    main(sys.argv[2:])
finally:
    open(sys.argv[1], "w").write(json.dumps(ran))
"""


def test_the_verbs_that_serve_no_pages_run_no_system_check(tmp_path):
    """Django's checks look at the project's code, not at what a verb is given: `serve`,
    `worker` and `evalsite manage check` run them (tests/cli/test_verbs_and_help.py), and
    the model checks alone were 8 to 12 ms of every `validate` and `run`."""
    (tmp_path / "tiny.yaml").write_text(TWO_FAKES)

    for verb in (["validate", str(tmp_path / "tiny.yaml")], ["run", str(tmp_path / "tiny.yaml"),
                                                             "--fake"], ["list"]):  # fmt: skip
        assert json.loads(probed(tmp_path, CHECKS_PROBE, *verb)) == [], verb
    assert json.loads(probed(tmp_path, CHECKS_PROBE, "manage", "check")) == [["every check"]]
