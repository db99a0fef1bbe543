"""The runs app's models, one module per noun."""

from runs.models.answer import Answer, CachedResponse
from runs.models.pricing import Endpoint, FrozenPriceTable, Price, PriceTable
from runs.models.run import Run
from runs.models.suites import Suite, SuiteVersion

__all__ = [
    "Answer",
    "CachedResponse",
    "Endpoint",
    "FrozenPriceTable",
    "Price",
    "PriceTable",
    "Run",
    "Suite",
    "SuiteVersion",
]
