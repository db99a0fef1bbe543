"""Every evalsite verb finds its database ready: `EvalsiteCommand` migrates it and loads the
default price table before `handle` runs, so no verb can forget it (as `import` once did).
Only the verbs that must not touch it opt out, and prepare it where they first need it:
`validate` and `import` (fast on a broken file) and `mcp` (its stdout is the protocol)."""

from __future__ import annotations

from io import StringIO
from unittest import mock

import pytest
from django.core.management import call_command, get_commands, load_command_class

from evalsite.management import EvalsiteCommand

OPTED_OUT = {"validate", "import", "mcp"}


def evalsite_verbs() -> dict[str, type[EvalsiteCommand]]:
    verbs = {}
    for name, app in get_commands().items():
        command = load_command_class(app, name)
        if isinstance(command, EvalsiteCommand):
            verbs[name] = type(command)
    return verbs


def test_every_verb_but_validate_import_and_mcp_prepares_the_database():
    verbs = evalsite_verbs()

    assert set(verbs) > OPTED_OUT
    assert {name for name, verb in verbs.items() if not verb.requires_migrations_checks} == (
        OPTED_OUT
    )


@pytest.mark.django_db
def test_the_database_is_prepared_once_before_handle_runs():
    order = []
    with (
        mock.patch("runs.setup.prepare_database", lambda: order.append("prepared")),
        mock.patch(
            "runs.management.commands.cache.Command.handle",
            lambda *args, **options: order.append("handled"),
        ),
    ):
        call_command("cache", "info", stdout=StringIO())

    assert order == ["prepared", "handled"]


@pytest.mark.django_db
def test_validate_does_not_prepare_the_database_for_a_broken_file(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("suite: [\n")
    with mock.patch("runs.setup.prepare_database") as prepare, pytest.raises(SystemExit):
        call_command("validate", str(broken), stdout=StringIO(), stderr=StringIO())

    prepare.assert_not_called()
