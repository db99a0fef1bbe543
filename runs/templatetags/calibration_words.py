"""Template filters for the calibration's words, from :mod:`evalsite.core.stats.gate`:
``{{ status|gate_words }}`` and ``{{ row.band|band_words:row.low_n }}``."""

from __future__ import annotations

from django import template

from evalsite.core.stats import gate

register = template.Library()


@register.filter
def gate_words(status: str | None) -> str:
    return gate.gate_words(status)


@register.filter
def band_words(band: str | None, low_n: bool = False) -> str:
    return gate.band_words(band, low_n=bool(low_n))
