"""The `evalsite` console script; `manage.py` calls the same main()."""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(["evalsite", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
