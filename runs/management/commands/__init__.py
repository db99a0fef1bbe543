"""evalsite's command-line verbs; labels' verbs are in labels.management.commands."""

from __future__ import annotations

from django.core.checks import Tags

# The system checks of a verb that serves no pages: the models it reads and writes through.
# The pages' checks are `serve`'s (and `evalsite check`'s): the URL checks import the URLconf
# and with it every view, numpy and the report builder included, for a `validate` that
# needs neither.
MODEL_CHECKS = [Tags.models]
