"""Login for every page, and the Server-Timing header that benchmarks read. (Errors are answered by
console/error_responses.py.)"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse

from console.gateway.connections import request_counter

# Paths anyone may open. The API answers 401 itself (DRF), so it is not redirected here.
_PUBLIC_PREFIXES = ("/login/", "/oidc/", "/healthz", "/static/", "/api/", "/metrics")


class LoginRequiredMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.user.is_authenticated and not request.path.startswith(_PUBLIC_PREFIXES):
            return redirect_to_login(request.get_full_path(), settings.LOGIN_URL)
        return self.get_response(request)


class ServerTimingMiddleware:
    """Adds `Server-Timing: app;dur=<ms>, kafka;desc="<n> calls"` so benchmarks can read server
    time and check that no Kafka call was made on the request path."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        counter = [0]
        token = request_counter.set(counter)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
        finally:
            request_counter.reset(token)
        elapsed = (time.perf_counter() - started) * 1000
        response["Server-Timing"] = f'app;dur={elapsed:.1f}, kafka;desc="{counter[0]} calls"'
        return response

