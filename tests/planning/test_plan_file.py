"""plan_file, the one way a run starts from a suite file (`evalsite run`, MCP, validate)."""

from __future__ import annotations

import dataclasses

import pytest

from evalsite.core.suites import load_suite
from runs.planning.planner import RunOptions
from runs.planning.start import plan_file
from tests.helpers.factories import write_no_look_suite


@pytest.mark.django_db
def test_plan_file_leaves_the_callers_options_as_they_were(tmp_path):
    path = write_no_look_suite(tmp_path)
    options = RunOptions(dry_run=True)
    before = dataclasses.replace(options)

    plan = plan_file(path, load_suite(path), options)

    assert plan.options.no_look  # the suite's privacy, in the plan's own options
    assert options == before
