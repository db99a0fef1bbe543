"""Command models: ``command/<name>`` runs a local program, for agent harnesses.

The program is named by the environment variable ``EVALSITE_COMMAND_<NAME>`` (name
upper-cased, ``-`` → ``_``); its value is a command line split with :func:`shlex.split` and
run WITHOUT a shell. The program gets :meth:`Request.to_json` as one JSON document on stdin
and prints the answer on stdout (trailing newlines are dropped). Exit status ≠ 0 is a
``server`` error carrying the tail of stderr; no exit within the request's ``timeout_s``
kills the program's whole process group and is a ``timeout``; blank stdout is ``empty``;
more than :data:`MAX_OUTPUT_BYTES` on stdout is ``malformed``.

Media: a message that sends files has a list of parts as its ``content``, each file a
reference with ``source`` (an absolute path this machine can read) and ``sha256``; the
program reads the file itself, and should check the hash (evalsite does not read it here).

Environment: the program inherits evalsite's environment minus secrets: every variable
whose name ends in KEY, TOKEN, SECRET, PASSWORD, PASSWD or CREDENTIALS, the database and
Redis URLs, and each endpoint's key variable. ``EVALSITE_COMMAND_<NAME>_PASS_ENV`` lists
(space- or comma-separated) variables to pass through anyway, e.g. ``OPENAI_API_KEY`` for a
harness that calls a model itself. Usage is estimated as characters ÷ 4, like scripted; a
reply is at most :data:`MAX_OUTPUT_BYTES` bytes, so at most that many characters, and its
output tokens at most :meth:`CommandProvider.output_token_limit` — what a spend
reservation holds for a call, since a program need not keep to ``max_tokens``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import signal
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from evalsite.core.keys import SECRET_NAME, SECRET_VARIABLES
from evalsite.core.providers.base import (
    MAX_REPLY_BYTES,
    Completion,
    ErrorKind,
    ProviderError,
    Request,
    estimated_completion,
    scrub,
)
from evalsite.core.providers.prompted import SchemaModes

if TYPE_CHECKING:
    from evalsite.core.providers.http_clients import HttpClient

MAX_OUTPUT_BYTES = MAX_REPLY_BYTES  # the cap every provider's reply is held to
STDERR_TAIL_CHARS = 2000


def command_variable(name: str) -> str:
    """``EVALSITE_COMMAND_<NAME>`` for ``command/<name>``."""
    return "EVALSITE_COMMAND_" + name.upper().replace("-", "_")


def child_environment(
    env: Mapping[str, str], *, name: str, also_secret: Iterable[str] = ()
) -> dict[str, str]:
    """``env`` without secret-looking variables, plus those ``…_PASS_ENV`` lets through."""
    passed = set(re.split(r"[\s,]+", env.get(command_variable(name) + "_PASS_ENV", "")))
    secret = SECRET_VARIABLES | {v for v in also_secret if v}
    return {
        key: value
        for key, value in env.items()
        if key in passed or not (SECRET_NAME.search(key) or key in secret)
    }


class CommandProvider(SchemaModes):
    """Runs one configured program per request; prompted schema mode."""

    name = "command"
    version = "command-1"
    # The program's reply can change with the program, its files or the clock: it is run
    # for every call, never answered from the cache.
    cacheable = False

    def __init__(
        self, model_name: str, argv: list[str], env: Mapping[str, str], secrets: Iterable[str] = ()
    ) -> None:
        self.model_name = model_name
        self.argv = list(argv)
        self._env = dict(env)
        self._secrets = tuple(s for s in secrets if s)

    def __repr__(self) -> str:
        return f"<CommandProvider {self.model_name}>"

    def output_token_limit(self, request: Request) -> int:
        """The most output tokens a reply can be counted at, whatever ``max_tokens`` says:
        the estimate of a reply of :data:`MAX_OUTPUT_BYTES` characters (decoding never
        makes more characters than bytes; a longer reply is refused as malformed)."""
        return (MAX_OUTPUT_BYTES + 3) // 4  # estimate_tokens of that many characters

    @classmethod
    def from_env(
        cls, model_name: str, env: Mapping[str, str], *, also_secret: Iterable[str] = ()
    ) -> CommandProvider:
        """The provider for ``command/<model_name>``; ProviderError(CONFIG) if unconfigured."""
        variable = command_variable(model_name)
        try:
            argv = shlex.split(env.get(variable, ""))
        except ValueError as error:
            raise ProviderError(
                ErrorKind.CONFIG, f"{variable} is not a valid command line: {error}"
            ) from None
        if not argv:
            message = (
                f"command/{model_name} needs {variable}: the command line of the program to run"
            )
            raise ProviderError(ErrorKind.CONFIG, message)
        child = child_environment(env, name=model_name, also_secret=also_secret)
        secrets = [value for key, value in env.items() if key not in child]
        return cls(model_name, argv, child, secrets)

    async def complete(self, request: Request, client: HttpClient | None = None) -> Completion:
        """Run the program once with the request on stdin; its stdout is the answer."""
        request = self.prepare(request)
        # backslashreplace turns a lone surrogate into its JSON escape, so stdin stays UTF-8.
        payload = json.dumps(request.to_json(), ensure_ascii=False).encode(
            "utf-8", "backslashreplace"
        )
        stdout, stderr, returncode = await self._run(payload, request.timeout_s)
        if returncode != 0:
            tail = stderr.decode("utf-8", "replace")[-STDERR_TAIL_CHARS:].strip()
            message = f"{self._label()} exited with status {returncode}: {tail}"
            message = scrub(message, self._secrets)
            raise ProviderError(ErrorKind.SERVER, message)
        text = stdout.decode("utf-8", "replace").rstrip("\r\n")
        return estimated_completion(
            text,
            request,
            provider=self.name,
            schema_mode=self.schema_mode(request),
            provider_model=self.model_name,
        )

    async def _run(self, payload: bytes, timeout_s: float) -> tuple[bytes, bytes, int | None]:
        """(stdout, stderr, exit status) of one run; timeouts and floods as ProviderError."""
        process = await self._start()
        try:
            async with asyncio.timeout(timeout_s):
                stdout, stderr = await _exchange(process, payload)
                await process.wait()
        except TimeoutError:
            await _kill(process)
            message = f"{self._label()} gave no answer within {timeout_s:g}s"
            raise ProviderError(ErrorKind.TIMEOUT, message) from None
        except _TooMuchOutput:
            await _kill(process)
            message = f"{self._label()} wrote more than {MAX_OUTPUT_BYTES:,} bytes"
            raise ProviderError(ErrorKind.MALFORMED, message) from None
        return stdout, stderr, process.returncode

    def _label(self) -> str:
        return f"command/{self.model_name}"

    async def _start(self) -> asyncio.subprocess.Process:
        try:
            return await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._env,
                start_new_session=True,
            )
        except OSError as error:
            message = f"{self._label()}: cannot run {self.argv[0]!r}: {error.strerror or error}"
            raise ProviderError(ErrorKind.CONFIG, message) from None


class _TooMuchOutput(Exception):
    pass


async def _exchange(process: asyncio.subprocess.Process, payload: bytes) -> tuple[bytes, bytes]:
    """Write stdin and read stdout (bounded) and stderr (tail kept) concurrently."""
    assert process.stdin and process.stdout and process.stderr
    writer, reader, errors = process.stdin, process.stdout, process.stderr

    async def write() -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            writer.write(payload)
            await writer.drain()
            writer.close()

    async def read(stream: asyncio.StreamReader, limit: int | None) -> bytes:
        data = bytearray()
        while chunk := await stream.read(65536):
            data += chunk
            if limit is not None and len(data) > limit:
                raise _TooMuchOutput
            if limit is None:
                del data[: max(0, len(data) - STDERR_TAIL_CHARS * 4)]
        return bytes(data)

    _, stdout, stderr = await asyncio.gather(
        write(), read(reader, MAX_OUTPUT_BYTES), read(errors, None)
    )
    return stdout, stderr


async def _kill(process: asyncio.subprocess.Process) -> None:
    """Kill the program and everything it started (it leads its own session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    await process.wait()
