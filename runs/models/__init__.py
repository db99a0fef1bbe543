"""The runs app's models, one module per noun."""

from runs.models.answer import Answer, CachedResponse, Call
from runs.models.decision import Decision
from runs.models.judging import Judgement, Pair, text_sha
from runs.models.label import Label
from runs.models.pricing import Endpoint, FrozenPriceTable, NoActivePriceTable, Price, PriceTable
from runs.models.run import Run
from runs.models.suites import Suite, SuiteVersion

__all__ = [
    "Answer",
    "CachedResponse",
    "Call",
    "Decision",
    "Endpoint",
    "FrozenPriceTable",
    "Judgement",
    "Label",
    "NoActivePriceTable",
    "Pair",
    "Price",
    "PriceTable",
    "Run",
    "Suite",
    "SuiteVersion",
    "text_sha",
]
