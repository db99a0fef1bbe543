"""The `evalsite` console script; `manage.py` calls the same main()."""

from __future__ import annotations

import errno
import gc
import os
import signal
import sys
import traceback


def main(argv: list[str] | None = None) -> None:
    # Everything evalsite writes is private to its owner: the database (session keys,
    # password hashes), the secret key, reports. A worker `serve` starts inherits it.
    os.umask(0o077)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    collecting = gc.isenabled()
    gc.disable()  # until the start-up is done (_started): see there
    from django.core.management import execute_from_command_line

    args = list(sys.argv[1:] if argv is None else argv)
    try:
        try:
            if args in ([], ["-h"], ["--help"], ["help"]):
                from evalsite.management.verbs import print_help

                print_help(sys.stdout)
            elif args[:1] in (["-V"], ["--version"]):
                from evalsite.management.verbs import version

                sys.stdout.write(f"evalsite {version()}\n")
            else:
                # `evalsite manage …` is Django's own command line (migrate, createsuperuser,
                # shell, …); those verbs answer by their own name too, unlisted.
                if args[:1] == ["manage"]:
                    args = args[1:] or ["help"]
                elif not args[0].startswith("-"):
                    from evalsite.management.verbs import refuse_unknown

                    refuse_unknown(args[0])  # sets Django up
                _started(collecting)
                execute_from_command_line(["evalsite", *args])
        finally:
            sys.stdout.flush()  # here, not at exit, where a closed pipe cannot be caught
    except BrokenPipeError:
        _reader_gone()
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(RUNTIME_ERROR)
    except Exception as error:  # noqa: BLE001 - one line and exit 3, never a traceback
        sys.stderr.write(f"error: {failure_line(error)}\n")
        if os.environ.get("EVALSITE_TRACEBACK"):
            traceback.print_exc()
        sys.exit(RUNTIME_ERROR)
    finally:
        # The process ends here, and the exit frees what the verb built: frozen, the heap is
        # not scanned again by each collection of the interpreter's teardown (0.1 s of it).
        gc.freeze()
        if collecting:
            gc.enable()


def _started(collecting: bool) -> None:
    """The start-up is done: Django and every models module are imported. Their modules,
    classes and functions live until the process exits, so the cyclic collector has nothing
    to find in them, yet while they were imported it ran about 150 times, each time scanning
    more of them: 40 ms of `evalsite validate`'s 50 ms of collections. Frozen, they are left
    alone by the collections after this; collection resumes for the verb's work, its young
    generation collected every :data:`YOUNG_COLLECTED_AT` allocations rather than 700."""
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTED_AT, *gc.get_threshold()[1:])
    if collecting:
        gc.enable()


# A verb's work allocates containers by the hundred thousand (rows, their values, requests)
# that nearly all die young, freed by their reference counts. At Python's 700 the collector
# ran about 390 times in a 4,000-answer `run --fake` (3 of them over the old generation),
# 100-130 ms in all; at 10,000, about 20 times and 25 ms, at the same peak memory.
YOUNG_COLLECTED_AT = 10_000


RUNTIME_ERROR = 3  # evalsite.core.exitcodes.ExitCode.RUNTIME_ERROR (1 means a gate failed)


def failure_line(error: BaseException) -> str:
    """What went wrong, in one line a person can act on."""
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        where = f" writing {error.filename}" if error.filename else ""
        return (
            f"no space left on the disk{where}; free some space: a run that had started is "
            "finished by the next `evalsite worker` (nothing finished is lost)"
        )
    if "disk is full" in str(error) or "disk I/O error" in str(error):
        return (
            f"the database could not be written ({error}); free some space: a run that had "
            "started is finished by the next `evalsite worker` (nothing finished is lost)"
        )
    return f"unexpected {type(error).__name__}: {error} (EVALSITE_TRACEBACK=1 shows where)"


def _reader_gone() -> None:
    """The reader closed our stdout (`evalsite prices | head -1`): stop quietly, as `git log`
    does, with the status a shell gives a process that SIGPIPE ended."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush
    sys.exit(128 + signal.SIGPIPE)


if __name__ == "__main__":
    main()
