"""The start-up check that skips loading the migrations when every one is applied."""

from __future__ import annotations

from django.db import connection
from django.db.migrations.recorder import MigrationRecorder
from django.test import TestCase

from runs.setup import _all_recorded


class AllRecordedTests(TestCase):
    def test_a_database_with_every_migration_applied_needs_no_loader(self):
        assert _all_recorded(connection)

    def test_a_migration_file_not_recorded_leaves_it_to_the_loader(self):
        MigrationRecorder.Migration.objects.filter(app="runs").order_by("-name")[:1].get().delete()
        assert not _all_recorded(connection)
