"""Provider adapters behind one protocol, and the registry that picks one per model string.

``build_provider("openai/gpt-4o-mini", env=os.environ)`` returns the adapter for a model
(``build_providers`` one for each of several);
``required_key`` names the environment variable a model needs, so a missing key is found
before the first call; ``make_client`` is the one HTTP seam (tests pass a MockTransport).

Routing by the provider part of ``provider/model``: the built-in providers
(:data:`BUILTIN`) first, then admin-defined endpoints by name. ``fake=True`` sends every
model to the fake adapter (its cost is still priced at the real model's row). An unknown
provider is ProviderError(CONFIG) with a did-you-mean over the built-ins and endpoints.
``blobs``, the run's content-addressed store, is where the HTTP adapters read a media
part's bytes first (its ``source`` next); only a process that makes calls passes it.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from evalsite.core.media import BlobStore
from evalsite.core.providers.anthropic import AnthropicProvider
from evalsite.core.providers.base import (
    Completion,
    ErrorKind,
    Provider,
    ProviderError,
    Request,
)
from evalsite.core.providers.command import CommandProvider
from evalsite.core.providers.endpoints import host_problem, key_variable_problem
from evalsite.core.providers.fake import FakeProvider
from evalsite.core.providers.given import GivenProvider
from evalsite.core.providers.google import GoogleProvider
from evalsite.core.providers.http_clients import make_client, prepare_client
from evalsite.core.providers.openai import OPENROUTER_BASE_URL, compatible_provider, openai_provider
from evalsite.core.providers.prompted import SCHEMA_INSTRUCTION, schema_instruction
from evalsite.core.providers.scripted import (
    RepliesFileError,
    ScriptedError,
    ScriptedProvider,
    ScriptedReplies,
)

__all__ = [
    "BUILTIN", "KEY_VARIABLES", "Completion", "EndpointConfig", "ErrorKind", "Provider",
    "ProviderError", "RepliesFileError", "Request", "SCHEMA_INSTRUCTION", "ScriptedError",
    "ScriptedReplies", "build_contestant_providers", "build_provider", "build_providers",
    "make_client", "prepare_client",
    "required_key", "schema_instruction",
]  # fmt: skip

KEY_VARIABLES = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "google": "GOOGLE_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
}
KEYLESS = ("fake", "scripted", "command", "given")
BUILTIN = (*KEY_VARIABLES, *KEYLESS)
_NO_ENDPOINTS: Mapping[str, EndpointConfig] = {}
_KEYED: dict[str, Callable[[str | None, BlobStore | None], Provider]] = {
    "anthropic": AnthropicProvider,
    "openai": openai_provider,
    "google": GoogleProvider,
    "openrouter": lambda key, blobs: compatible_provider(
        "openrouter", OPENROUTER_BASE_URL, key, blobs
    ),
}


@dataclass(frozen=True)
class EndpointConfig:
    """An admin-defined OpenAI-compatible server; models on it are ``<name>/<model>``.

    ``key_env`` is the NAME of the variable holding the key ("" for a server without one).
    Both are checked again when a provider is built (``endpoints.py``): a row written
    around the admin cannot name ``ANTHROPIC_API_KEY`` or the metadata service.
    """

    name: str
    base_url: str
    key_env: str = ""


def build_provider(
    model: str,
    *,
    env: Mapping[str, str],
    endpoints: Mapping[str, EndpointConfig] = _NO_ENDPOINTS,
    replies: ScriptedReplies | None = None,
    fake: bool = False,
    fake_sleep: bool = False,
    blobs: BlobStore | None = None,
) -> Provider:
    """The adapter for ``model``; ProviderError(CONFIG) if it cannot be built.

    CONFIG covers: not a ``provider/model`` string, an unknown provider, a missing key, a
    scripted model without replies and a command model without its command variable, so
    building every model's provider before the first call is a complete pre-flight check.
    """
    provider, slash, name = model.partition("/")
    if not (provider and slash and name):
        raise ProviderError(
            ErrorKind.CONFIG, f"'{model}' is not a model: expected 'provider/model'"
        )
    if fake or provider == "fake":
        return FakeProvider(sleep=fake_sleep)
    if provider == "given":
        return GivenProvider()  # supplied answers (judge lab): never called
    if provider == "scripted":
        if replies is None:
            message = f"{model} needs a replies file (--replies, or replies: in the suite)"
            raise ProviderError(ErrorKind.CONFIG, message)
        return ScriptedProvider(replies)
    if provider == "command":
        endpoint_keys = [endpoint.key_env for endpoint in endpoints.values()]
        return CommandProvider.from_env(name, env, also_secret=endpoint_keys)
    key = _key(model, env, endpoints)
    if provider in _KEYED:
        return _KEYED[provider](key, blobs)
    endpoint = endpoints[provider]
    if problem := host_problem(endpoint.base_url):
        raise ProviderError(ErrorKind.CONFIG, f"{model}: endpoint {provider} refused: {problem}")
    return compatible_provider(endpoint.name, endpoint.base_url, key, blobs)


def build_providers(
    models: Iterable[str],
    *,
    env: Mapping[str, str],
    endpoints: Mapping[str, EndpointConfig] = _NO_ENDPOINTS,
    replies: ScriptedReplies | None = None,
    fake: bool = False,
    blobs: BlobStore | None = None,
) -> dict[str, Provider]:
    """One provider per model, as the planner hashes a run's calls and the runner makes
    them (the same arguments, so the same cache keys); ProviderError(CONFIG) for the first
    that cannot be built here (a missing key, a scripted model without replies)."""
    return {
        model: build_provider(
            model, env=env, endpoints=endpoints, replies=replies, fake=fake, blobs=blobs
        )
        for model in dict.fromkeys(models)
    }


def build_contestant_providers(
    contestants: Iterable[str],
    *,
    env: Mapping[str, str],
    endpoints: Mapping[str, EndpointConfig] = _NO_ENDPOINTS,
    replies: ScriptedReplies | None = None,
    fake: bool = False,
    blobs: BlobStore | None = None,
) -> dict[str, Provider]:
    """Each contestant's provider (``model`` or ``model@variant``): its model's, shared by
    every variant, except a scripted contestant whose variant has its own replies in the
    file (``good@concise``), which gets a provider of its own that reads them."""
    models = {contestant: contestant.partition("@")[::2] for contestant in contestants}
    built = build_providers(
        [model for model, _ in models.values()],
        env=env, endpoints=endpoints, replies=replies, fake=fake, blobs=blobs,
    )  # fmt: skip
    providers: dict[str, Provider] = {}
    for contestant, (model, variant) in models.items():
        scripted = not fake and model.startswith("scripted/") and replies is not None
        if scripted and replies is not None and replies.has_variant(model, variant):
            providers[contestant] = ScriptedProvider(replies, variant)
        else:
            providers[contestant] = built[model]
    return providers


def required_key(
    model: str, *, endpoints: Mapping[str, EndpointConfig] = _NO_ENDPOINTS, fake: bool = False
) -> str | None:
    """The NAME of the environment variable ``model`` needs, or None when it needs none.

    None for fake, scripted and command models, for every model when ``fake`` is set, and
    for an endpoint without a key variable. ProviderError(CONFIG) for an unknown provider
    and for an endpoint whose variable is not an ``EVALSITE_ENDPOINT_<NAME>_KEY``.
    """
    provider = model.partition("/")[0]
    if fake or provider in KEYLESS:
        return None
    if provider in KEY_VARIABLES:
        return KEY_VARIABLES[provider]
    if provider in endpoints:
        endpoint = endpoints[provider]
        if problem := key_variable_problem(endpoint.key_env):
            raise ProviderError(
                ErrorKind.CONFIG, f"{model}: endpoint {provider} refused: {problem}"
            )
        return endpoint.key_env or None
    raise _unknown(model, endpoints)


def _key(model: str, env: Mapping[str, str], endpoints: Mapping[str, EndpointConfig]) -> str | None:
    variable = required_key(model, endpoints=endpoints)
    if variable is None:
        return None
    value = env.get(variable, "").strip()
    if not value:
        raise ProviderError(
            ErrorKind.CONFIG, f"{model} needs the environment variable {variable}, which is not set"
        )
    return value


def _unknown(model: str, endpoints: Mapping[str, EndpointConfig]) -> ProviderError:
    provider = model.partition("/")[0]
    known = [*BUILTIN, *sorted(endpoints)]
    close = difflib.get_close_matches(provider, known, n=1, cutoff=0.6)
    hint = f" - did you mean '{close[0]}'?" if close else ""
    listed = ", ".join(sorted(BUILTIN))
    if endpoints:
        listed += "; endpoints: " + ", ".join(sorted(endpoints))
    message = f"unknown provider '{provider}' in '{model}'{hint} (known: {listed})"
    return ProviderError(ErrorKind.CONFIG, message)
