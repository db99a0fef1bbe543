"""The main navigation: its sections, and the one rule that marks the page's section.

The rule: the first segment of the page's path names its section (``/label/…`` is Label,
``/lab/…`` the judge lab, ``/runs/…`` and ``/suites/…`` Suites). One section at most is
active, whatever the URL names of the apps behind it are called.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.http import HttpRequest
from django.urls import reverse


@dataclass(frozen=True)
class Section:
    label: str
    url_name: str
    segments: frozenset[str]  # first path segments that belong to it ("" is the root)


@dataclass(frozen=True)
class NavLink:
    label: str
    url: str
    active: bool


SECTIONS = (
    Section("Dashboard", "dashboard", frozenset({""})),
    Section("Suites", "suite_list", frozenset({"suites", "runs"})),
    Section("Label", "label_home", frozenset({"label"})),
    Section("Judge lab", "lab_list", frozenset({"lab"})),
    Section("Compare", "compare", frozenset({"compare"})),
    Section("Decisions", "decision_list", frozenset({"decisions"})),
    Section("Prices", "prices", frozenset({"prices"})),
)


def section_of(path: str) -> Section | None:
    """The section a page at `path` belongs to; None for a page outside them (login)."""
    first = path.strip("/").split("/", 1)[0]
    return next((section for section in SECTIONS if first in section.segments), None)


def nav(request: HttpRequest) -> dict:
    """Template context: ``nav``, the main navigation's links, the page's one active."""
    active = section_of(request.path_info)
    return {
        "nav": [NavLink(s.label, reverse(s.url_name), s is active) for s in SECTIONS],
    }
