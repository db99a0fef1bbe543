"""`Server-Timing: app;dur=<ms>` on every response: the time the app spent on it, so the page
benchmark (bench/pages.py) and a browser's network panel can tell server time from transfer."""

from __future__ import annotations

import time


class ServerTimingMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        if not getattr(response, "streaming", False):
            elapsed = (time.perf_counter() - started) * 1000
            response["Server-Timing"] = f"app;dur={elapsed:.1f}"
        return response
