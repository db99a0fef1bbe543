"""`evalsite history`: another name for `evalsite list`."""

from __future__ import annotations

from runs.management.commands.list import Command as ListCommand


class Command(ListCommand):
    help = "The same as `evalsite list`: runs, newest first, one line each."
