"""What a run would send, without starting one: MCP's `render_prompt` names a contestant
and a case of a suite file and is shown the request that contestant's provider would make.

The contestant is accepted as a run accepts it (a declared variant, a priced model) and its
provider is built as a run builds it (a scripted variant's own replies included, so the
cache key is the run's); nothing is registered, stored or called.
"""

from __future__ import annotations

from collections.abc import Mapping

from evalsite.core.providers import Provider, build_contestant_providers
from evalsite.core.suites import Contestant, Suite
from runs.models import Endpoint, PriceTable
from runs.planning.planner import RunOptions, check_priced, load_replies, suite_contestant


def preview_contestant(loaded: Suite, text: str) -> Contestant:
    """`text` as a contestant a run of `loaded` would accept; PlanError (or
    NoActivePriceTable) as planning the run would refuse it."""
    chosen = suite_contestant(loaded, text.strip())
    table = PriceTable.objects.current()
    check_priced([chosen.model], set(table.prices.values_list("model", flat=True)), table.name)
    return chosen


def preview_provider(loaded: Suite, chosen: Contestant, env: Mapping[str, str]) -> Provider:
    """The contestant's provider as a run of `loaded` builds it, with the keys of `env`;
    PlanError or ProviderError as a run would refuse it."""
    scripted = chosen.model.startswith("scripted/")
    answers = load_replies(loaded, RunOptions()) if scripted else None
    built = build_contestant_providers(
        [str(chosen)], env=dict(env), endpoints=Endpoint.objects.configs(), replies=answers
    )
    return built[str(chosen)]
