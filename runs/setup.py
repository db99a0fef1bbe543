"""First-start steps shared by `evalsite serve` and the commands that need a ready database."""

from __future__ import annotations

import importlib.util
import secrets
from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder

from evalsite.core.suites import SuiteError, load_suite
from runs.models import PriceTable, Suite, SuiteVersion

DEMO_SUITE = Path(settings.BASE_DIR) / "examples" / "support-desk.yaml"
# The demo's first run, offline: its replies file's sloppy and good answers (sloppy the
# baseline) and its scripted judge, as the README and the replies file's header give it.
DEMO_FIRST_RUN = {"models": "scripted/sloppy,scripted/good", "judge": "scripted/judge"}


def prepare_database() -> None:
    """Apply pending migrations and load the default price table if there is none."""
    connection = connections[DEFAULT_DB_ALIAS]
    if not _all_recorded(connection):
        executor = MigrationExecutor(connection)
        if executor.migration_plan(executor.loader.graph.leaf_nodes()):
            call_command("migrate", interactive=False, verbosity=0)
    PriceTable.objects.ensure_default()


def _all_recorded(connection) -> bool:
    """Whether every migration file of every app is recorded as applied, read from the
    migration folders and the recorder's table without importing a migration (the loader
    imports them all: about 50 ms of every command). Anything else, a file not recorded
    or no table yet, is left to the loader to decide."""
    recorder = MigrationRecorder(connection)
    if not recorder.has_table():
        return False
    applied = set(recorder.applied_migrations())
    for app in apps.get_app_configs():
        module, _ = MigrationLoader.migrations_module(app.label)
        spec = importlib.util.find_spec(module) if module else None
        for folder in (spec.submodule_search_locations or []) if spec else []:
            names = [f.name[:-3] for f in Path(folder).glob("*.py")]
            if any((app.label, n) not in applied for n in names if n[0] not in "_~"):
                return False
    return True


def ensure_demo_suite() -> SuiteVersion | None:
    """Register the demo suite when no suite of that name exists yet."""
    if not DEMO_SUITE.exists():
        return None
    try:
        loaded = load_suite(DEMO_SUITE)
    except SuiteError:
        return None
    if Suite.objects.filter(name=loaded.name).exists():
        return None
    version, _ = SuiteVersion.objects.register_file(
        DEMO_SUITE, loaded, origin=SuiteVersion.Origin.DEMO
    )
    return version


def ensure_admin(username: str = "admin") -> str | None:
    """Create a superuser with a random password when no user exists; return the password."""
    users = get_user_model()
    if users.objects.exists():
        return None
    password = secrets.token_urlsafe(12)
    users.objects.create_superuser(username=username, email="", password=password)
    return password
