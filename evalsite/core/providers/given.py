"""Given answers: ``given/<side>`` stands for an answer that was supplied, not generated.

A judge-lab run (SPEC §10.5) judges pairs whose answers came with an imported pair set; its
contestants are ``given/a`` and ``given/b`` and their Answer rows are stored already done.
The runner still builds a provider for every contestant, so this one exists: it needs no
key and is never asked for anything. Called anyway, it fails as a configuration error
rather than invent an answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalsite.core.providers.base import Completion, ErrorKind, ProviderError, Request
from evalsite.core.providers.prompted import SchemaModes

if TYPE_CHECKING:
    from evalsite.core.providers.http_clients import HttpClient


class GivenProvider(SchemaModes):
    """The provider of supplied answers: no key, no network, no completions."""

    name = "given"
    version = "given-1"
    waits = False

    def __repr__(self) -> str:
        return "<GivenProvider>"

    async def complete(self, request: Request, client: HttpClient | None = None) -> Completion:
        raise ProviderError(ErrorKind.CONFIG, "given answers are never requested")
