"""Login for every page, and gateway errors shown as their sentence instead of a stack trace."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from console.errors import ConsoleError

# Paths anyone may open. The API answers 401 itself (DRF), so it is not redirected here.
_PUBLIC_PREFIXES = ("/login/", "/healthz", "/static/", "/api/", "/metrics")


class LoginRequiredMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.user.is_authenticated and not request.path.startswith(_PUBLIC_PREFIXES):
            return redirect_to_login(request.get_full_path(), settings.LOGIN_URL)
        return self.get_response(request)


class ConsoleErrorMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, ConsoleError):
            return None
        if request.path.startswith("/api/"):
            return JsonResponse({"detail": exception.message}, status=exception.http_status)
        return render(request, "error.html", {"message": exception.message}, status=exception.http_status)
