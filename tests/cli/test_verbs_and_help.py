"""evalsite's own face on the command line: its verbs grouped, its version, each verb's own
options, Django's commands behind `evalsite manage`, and an unknown verb as bad input."""

from __future__ import annotations

import re
from importlib.metadata import version

import pytest
from django.core.management import get_commands, load_command_class

from evalsite.console import main
from evalsite.management.verbs import GROUPS, evalsite_verbs
from tests.helpers.cli import evalsite

DJANGO_ONLY = ("flush", "dbshell", "startproject", "sendtestemail", "squashmigrations")
DJANGO_OPTIONS = ("--settings", "--pythonpath", "--skip-checks", "--traceback", "--verbosity")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("cli-face")


def test_evalsite_alone_and_help_list_evalsite_verbs_grouped_with_one_line_each(data_dir):
    bare, helped = evalsite(data_dir), evalsite(data_dir, "--help")

    assert bare.returncode == helped.returncode == 0
    assert bare.stdout == helped.stdout
    out = bare.stdout
    for group in ("Run & inspect:", "Labels & judge lab:", "Prices & data:", "Server:"):
        assert group in out
    assert re.search(r"^  run +Run a suite: answer every case", out, re.M)
    assert re.search(r"^  serve +Start evalsite", out, re.M)
    for name in DJANGO_ONLY:
        assert not re.search(rf"^\s+{name}\b", out, re.M), name
    assert "evalsite manage" in out


def test_every_verb_of_evalsite_is_in_a_group_and_has_a_one_line_summary():
    grouped = {name for names in GROUPS.values() for name in names}
    verbs = evalsite_verbs()

    assert set(verbs) <= grouped, f"verbs in no group of --help: {set(verbs) - grouped}"
    for name, app in verbs.items():
        assert load_command_class(app, name).help.strip(), f"{name} has no help line"


def test_version_is_evalsites_own(data_dir):
    done = evalsite(data_dir, "--version")

    assert done.returncode == 0
    assert done.stdout.strip() == f"evalsite {version('evalsite')}"
    assert version("django") not in done.stdout


@pytest.mark.parametrize("name", sorted(evalsite_verbs()))
def test_each_verbs_help_shows_its_own_options_only(name, capsys):
    with pytest.raises(SystemExit) as done:
        main([name, "--help"])

    out = capsys.readouterr().out
    assert done.value.code == 0
    assert f"usage: evalsite {name}" in out
    for option in DJANGO_OPTIONS:
        assert option not in out, f"{name} --help shows Django's {option}"


def test_djangos_commands_are_behind_manage_and_still_answer_by_name(data_dir):
    listed = evalsite(data_dir, "manage", fresh=True)
    checked = evalsite(data_dir, "manage", "check", fresh=True)
    migrated = evalsite(data_dir, "migrate", fresh=True)  # the README's direct spelling
    settled = evalsite(data_dir, "manage", "migrate", "--check")

    assert listed.returncode == 0
    assert "createsuperuser" in listed.stdout and "migrate" in listed.stdout
    assert checked.returncode == 0 and "no issues" in checked.stdout
    assert migrated.returncode == 0, migrated.stderr
    assert settled.returncode == 0, settled.stderr  # nothing left to apply


def test_an_unknown_verb_is_bad_input_naming_the_nearest_verb(data_dir):
    done = evalsite(data_dir, "reprot", "latest")

    assert done.returncode == 2
    assert done.stderr.strip() == (
        "error: evalsite has no verb 'reprot' (did you mean report?); `evalsite --help` lists them"
    )
    assert "Traceback" not in done.stderr


def test_djangos_command_list_still_knows_every_evalsite_verb():
    commands = get_commands()

    for name in ("serve", "worker", "mcp"):
        assert commands[name] == "evalsite", f"{name} lives in the project package"
