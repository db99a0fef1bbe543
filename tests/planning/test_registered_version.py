"""Plan.registered_version: the suite version a plan runs, or an error naming the suite
whose plan has none (a dry run's, the judge lab's before it registers the suite)."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest
from django.test import TestCase

from evalsite.core.suites import parse_suite
from runs.models import PriceTable, Run
from runs.planning.planner import Plan, RunOptions, store_plan
from tests.helpers.factories import make_suite_version, small_suite_text


def _plan(version) -> Plan:
    suite = parse_suite(small_suite_text("tiny").encode(), filename="tiny.yaml", origin="upload")
    return Plan(
        version, suite, ["fake/small"], PriceTable(), Decimal(1), [], [], [],
        {"total_usd": "0"}, RunOptions(),
    )  # fmt: skip


class RegisteredVersionTests(TestCase):
    def test_a_registered_plan_gives_its_version(self):
        version = make_suite_version()
        assert _plan(version).registered_version == version

    def test_a_plan_without_a_version_names_its_suite(self):
        with pytest.raises(LookupError, match="the plan of suite tiny has no registered version"):
            _plan(None).registered_version  # noqa: B018 - the property raises

    def test_storing_a_plan_without_a_version_stores_nothing(self):
        plan = dataclasses.replace(_plan(None), contestants=["fake/small", "fake/large"])
        with pytest.raises(LookupError, match="no registered version"):
            store_plan(plan)
        assert not Run.objects.exists()
