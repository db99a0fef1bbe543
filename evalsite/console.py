"""The `evalsite` console script; `manage.py` calls the same main()."""

from __future__ import annotations

import os
import signal
import sys


def main(argv: list[str] | None = None) -> None:
    # Everything evalsite writes is private to its owner: the database (session keys,
    # password hashes), the secret key, reports. A worker `serve` starts inherits it.
    os.umask(0o077)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    from django.core.management import execute_from_command_line

    try:
        try:
            execute_from_command_line(["evalsite", *(sys.argv[1:] if argv is None else argv)])
        finally:
            sys.stdout.flush()  # here, not at exit, where a closed pipe cannot be caught
    except BrokenPipeError:
        _reader_gone()


def _reader_gone() -> None:
    """The reader closed our stdout (`evalsite prices | head -1`): stop quietly, as `git log`
    does, with the status a shell gives a process that SIGPIPE ended."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush
    sys.exit(128 + signal.SIGPIPE)


if __name__ == "__main__":
    main()
