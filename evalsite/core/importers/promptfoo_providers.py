"""promptfoo's ``providers`` as evalsite contestants: the vendors evalsite calls, the
OpenAI-compatible servers as an Endpoint's models (a note names the Endpoint to add and its
base URL), promptfoo's ``echo`` and its script providers as command models
(:mod:`promptfoo_scripts`), and everything else listed with why.

Each provider is either one contestant or one untranslated line; none is dropped (two
providers that are the same evalsite model, a provider's own ``prompts``, its other keys).
"""

from __future__ import annotations

import pathlib
import re
from dataclasses import dataclass, field
from typing import Any

from evalsite.core.importers.common import Collector, identifier
from evalsite.core.importers.promptfoo_scripts import script_model
from evalsite.core.suite_schema import MODEL

__all__ = ["ECHO_PROGRAM", "Contestants", "grader", "providers"]

_MODEL = re.compile(MODEL)
PREFIXES = {  # promptfoo provider prefix -> evalsite provider
    "openai": "openai",
    "anthropic": "anthropic",
    "vertex": "google",
    "google": "google",
    "openrouter": "openrouter",
}
# promptfoo's OpenAI-compatible providers and the base URL each calls by default.
COMPATIBLE = {
    "ollama": "http://localhost:11434/v1",
    "groq": "https://api.groq.com/openai/v1",
    "xai": "https://api.x.ai/v1",
    "perplexity": "https://api.perplexity.ai",
    "mistral": "https://api.mistral.ai/v1",
    "deepseek": "https://api.deepseek.com/v1",
    "cerebras": "https://api.cerebras.ai/v1",
    "litellm": "http://localhost:4000",
    "lmstudio": "http://localhost:1234/v1",
    "vllm": "http://localhost:8000/v1",
    "localai": "http://localhost:8080/v1",
    "togetherai": "https://api.together.xyz/v1",
    "together": "https://api.together.xyz/v1",
    "fireworks": "https://api.fireworks.ai/inference/v1",
    "hyperbolic": "https://api.hyperbolic.xyz/v1",
    "github": "https://models.github.ai/inference",
}
MODES = ("chat:", "completion:", "messages:", "responses:")
# promptfoo's agent SDKs: no chat model, named as a whole provider id too
# (``anthropic:claude-agent-sdk``)
AGENTS = {"agents", "codex-sdk", "codex-security", "chatkit", "claude-agent-sdk", "claude-code"}
# promptfoo's vendor providers that are no chat model: an Assistants API id, embeddings,
# images, the realtime, live and audio APIs, the agents (``openai:assistant:asst_…``).
NOT_CHAT = AGENTS | {
    "assistant", "embedding", "embeddings", "image", "realtime", "live", "moderation",
    "transcription", "speech", "video",
}  # fmt: skip
SETTINGS = {"temperature", "max_tokens", "top_p"}
KNOWN_CONFIG = SETTINGS | {"apiBaseUrl", "apiHost", "baseUrl"}
SPEC_KEYS = {"id", "label", "config", "prompts"}
# promptfoo's echo answers with the prompt it was sent; evalsite's command provider sends a
# program the messages as JSON on stdin and takes its stdout as the answer.
ECHO_PROGRAM = (
    "import json, sys\n"
    "messages = json.load(sys.stdin)['messages']\n"
    "print('\\n'.join(str(m['content']) for m in messages))\n"
)


@dataclass
class Contestants:
    """The translated providers: model strings, their configs, and files to write."""

    models: list[str] = field(default_factory=list)
    configs: list[dict[str, Any]] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    endpoints: dict[str, str] = field(default_factory=dict)  # name -> base URL
    sources: dict[str, int] = field(default_factory=dict)  # model -> providers index
    only: dict[str, tuple[list[str], tuple[Any, ...]]] = field(default_factory=dict)

    def contestants(self, names: list[str], c: Collector) -> list[str]:
        """``model@variant`` for each model and each prompt it runs (all, unless its
        provider named ``prompts``: those, by label), or the models for one prompt."""
        out: list[str] = []
        for model in self.models:
            chosen = names
            if model in self.only:
                wanted, path = self.only[model]
                chosen = [name for name in names if name in {identifier(w, "") for w in wanted}]
                if not chosen:
                    why = "names no prompt label of this file: the model runs every prompt"
                    c.skip(path, f"provider prompts {', '.join(wanted)}", why)
                    chosen = names
            out += [f"{model}@{name}" for name in chosen] if len(names) > 1 else [model]
        return out


def providers(value: Any, c: Collector) -> Contestants:
    """Every provider of ``value`` as a contestant, or listed as untranslated."""
    if isinstance(value, dict):
        value = [{"id": key, **(options or {})} for key, options in value.items()]
    items = value if isinstance(value, list) else [] if value is None else [value]
    out = Contestants()
    for index, item in enumerate(items):
        path = ("providers", index)
        for spec in _specs(item, path, c):
            _provider(spec, index, out, c)
    for name, url in out.endpoints.items():
        local = _host(url).partition(":")[0] == "localhost"
        free = " (a server on this machine that costs you nothing: rates of 0)" if local else ""
        c.notes.append(
            f"{name}: add an Endpoint in the admin (name {name}, base URL {url}) and a price "
            f"row for each of its models{free}; then its contestants run as {name}/<model>"
        )
    return out


def _specs(item: Any, path: tuple[Any, ...], c: Collector) -> list[dict[str, Any]]:
    """A provider entry as one or more ``{id, …}`` mappings (a ``file://`` YAML list too)."""
    if isinstance(item, str) and item.startswith("file://"):
        suffix = pathlib.PurePosixPath(item).suffix.lower()
        if suffix not in {".yaml", ".yml", ".json"}:
            return [{"id": item, "_path": path}]  # a script: promptfoo_scripts
        found = c.read_yaml(item, c.at(path))
        data = found[0].data if found else None
        listed = data if isinstance(data, list) else [data] if data is not None else []
        return [spec for entry in listed for spec in _specs(entry, path, c)]
    if isinstance(item, dict) and "id" not in item and len(item) == 1:
        key, options = next(iter(item.items()))  # promptfoo's {"openai:gpt-4.1": {config}}
        return [{"id": key, **(options if isinstance(options, dict) else {}), "_path": path}]
    if isinstance(item, dict):
        return [{**item, "_path": path}]
    return [{"id": item, "_path": path}]


def _provider(spec: dict[str, Any], index: int, out: Contestants, c: Collector) -> None:
    path = spec.pop("_path")
    provider = str(spec.get("id", ""))
    config: Any = spec.get("config") if isinstance(spec.get("config"), dict) else {}
    named = f"provider {provider}" + (f" ({spec['label']})" if spec.get("label") else "")
    for key in spec:
        if key not in SPEC_KEYS:
            c.skip((*path, key), f"{named}: {key}", "not a key this importer translates")
    wanted = spec.get("prompts")
    if wanted is not None and not isinstance(wanted, list):
        c.skip((*path, "prompts"), f"{named}: prompts", "not a list of prompt labels")
    model = _model(provider, config, path, c, out, label=spec.get("label"))
    if model is None:
        return
    if model in out.models:
        first = out.sources[model]
        c.skip(
            path,
            named,
            f"the same evalsite model as providers[{first}]: evalsite's contestants are "
            "model strings, so one runs; its label and config are not a second contestant",
        )
        return
    out.models.append(model)
    # A command model's config went to its script (promptfoo_scripts), not to requests.
    out.configs.append({} if model.startswith("command/") else config)
    if isinstance(wanted, list):
        out.only[model] = ([str(label) for label in wanted], (*path, "prompts"))
    out.sources[model] = index


def _model(
    provider: str,
    config: dict[str, Any],
    path: tuple[Any, ...],
    c: Collector,
    out: Contestants,
    *,
    label: Any = None,
) -> str | None:
    prefix, _, rest = provider.partition(":")
    for mode in MODES:
        rest = rest.removeprefix(mode)
    if provider == "echo":
        out.files["echo.py"] = ECHO_PROGRAM
        c.notes.append(
            "promptfoo's echo is command/echo: echo.py is written beside the suite; run it "
            'from the suite\'s folder with EVALSITE_COMMAND_ECHO="python3 echo.py"'
        )
        return "command/echo"
    if prefix in {"exec", "python", "file"} or provider.endswith((".py", ".js", ".sh")):
        return script_model(provider, config, label, path, c, out.files, out.models)
    base_url = config.get("apiBaseUrl") or config.get("apiHost") or config.get("baseUrl")
    if base_url or prefix in COMPATIBLE:
        return _endpoint_model(provider, prefix, rest, base_url, path, c, out)
    kind = rest.partition(":")[0]
    if prefix in PREFIXES and kind in NOT_CHAT and (rest != kind or kind in AGENTS):
        why = (
            f"promptfoo's {prefix}:{kind} provider is no chat model evalsite calls "
            "(evalsite sends chat messages to a model)"
        )
        c.skip(path, f"provider {provider}", why)
        return None
    if prefix not in PREFIXES or not rest:
        c.skip(
            path,
            f"provider {provider}",
            "not a provider evalsite has (openai, anthropic, google/vertex, openrouter, an "
            "OpenAI-compatible Endpoint, or promptfoo's echo)",
        )
        return None
    model = f"{PREFIXES[prefix]}/{rest}"
    if not _MODEL.fullmatch(model):
        c.skip(path, f"provider {provider}", f"{model} is not an evalsite model string")
        return None
    if prefix == "vertex":
        c.notes.append(f"{provider} is {model}: evalsite calls Gemini's API, not Vertex AI")
    return model


def _endpoint_model(
    provider: str,
    prefix: str,
    rest: str,
    base_url: Any,
    path: tuple[Any, ...],
    c: Collector,
    out: Contestants,
) -> str | None:
    if base_url:
        host = _host(str(base_url))
        known = [name for name, url in COMPATIBLE.items() if _host(url) == host]
        name = prefix if prefix in COMPATIBLE else known[0] if known else host
        name = identifier(name, "local").replace("-", "")[:30] or "local"
    else:
        name, base_url = prefix, COMPATIBLE[prefix]
    model = f"{name}/{rest}"
    if not rest or not _MODEL.fullmatch(model):
        why = f"{model} is not an evalsite model string"
        c.skip(path, f"provider {provider}", why)
        return None
    if out.endpoints.setdefault(name, str(base_url)) != str(base_url):
        why = f"a second base URL for the Endpoint {name} ({out.endpoints[name]} first)"
        c.skip(path, f"provider {provider}", why)
        return None
    return model


def _host(url: str) -> str:
    """The host and port of ``url`` (``localhost`` and ``127.0.0.1`` alike)."""
    host = re.sub(r"^https?://", "", url).split("/")[0]
    return host.replace("127.0.0.1", "localhost")


def grader(provider: Any) -> str | None:
    """The evalsite model of promptfoo's grading ``provider`` (a text, ``{id}`` or
    ``{text: {id}}``), or None when it is none evalsite calls."""
    provider = _grader_id(provider)
    if provider is None:
        return None
    prefix, _, rest = provider.partition(":")
    for mode in MODES:
        rest = rest.removeprefix(mode)
    model = f"{PREFIXES.get(prefix, prefix)}/{rest}"
    known = prefix in PREFIXES or prefix in COMPATIBLE  # an Endpoint's model judges too
    return model if known and _MODEL.fullmatch(model) else None


def provider_text(provider: Any) -> str:
    """How a grading provider is written, for a message."""
    return _grader_id(provider) or "an object with no id"


def _grader_id(provider: Any) -> str | None:
    if isinstance(provider, dict):
        text = provider.get("text")
        provider = provider.get("id") or (text.get("id") if isinstance(text, dict) else None)
    return provider if isinstance(provider, str) else None
