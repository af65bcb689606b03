"""One way from an error to what the user sees, for pages, the API and websockets.

A ConsoleError carries its sentence and its status (console/errors.py, console/gateway/errors.py);
this module decides how each reaches the user: a page (error.html) outside /api/, `{"detail": ...}`
under /api/, `{"type": ..., "message": ...}` on a websocket. Anything else is a failure of the
console: its status is 500 and its sentence points to the log, never to a stack trace. A form that
is shown again with its error beside what was typed takes its sentence and status from `form_error`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from django.db import OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from rest_framework.response import Response

from console.errors import ConsoleError

FAILED = "The console failed to answer this request; the error is in its log."
DATABASE_UNAVAILABLE = "The console's database is unreachable or busy; try again in a moment."


def status(exc: BaseException) -> int:
    """The HTTP status an error answers with: its own for a ConsoleError, 500 for anything else."""
    return exc.http_status if isinstance(exc, ConsoleError) else 500


def message(exc: BaseException) -> str:
    """The sentence a user sees for an error."""
    return exc.message if isinstance(exc, ConsoleError) else FAILED


def form_error(exc: ConsoleError) -> tuple[str, int]:
    """(sentence, status) for a form shown again with its error beside what was typed."""
    return message(exc), status(exc)


def is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def page(request: HttpRequest, sentence: str, code: int) -> HttpResponse:
    """An error page: the sentence, under the console's layout."""
    return render(request, "error.html", {"message": sentence}, status=code)


def answer(request: HttpRequest, sentence: str, code: int) -> HttpResponse:
    """The sentence as the request expects it: JSON under /api/, a page elsewhere."""
    if is_api(request):
        return JsonResponse({"detail": sentence}, status=code)
    return page(request, sentence, code)


def socket_error(exc: BaseException, kind: str = "error", **ident: Any) -> dict[str, Any]:
    """A websocket's message for an error; `kind` is the type under which its page shows a sentence."""
    return {"type": kind, **ident, "message": message(exc)}


class ConsoleErrorMiddleware:
    """Pages and plain Django views: a ConsoleError raised anywhere answers with its sentence."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, ConsoleError):
            return None
        return answer(request, message(exception), status(exception))


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's exception handler: ConsoleErrors answer with their sentence, DRF's own errors as DRF says."""
    # Imported here: rest_framework.views reads the API settings, which name console.auth, and
    # console.auth answers its refusals through this module.
    from rest_framework.views import exception_handler

    if isinstance(exc, ConsoleError):
        return Response({"detail": message(exc)}, status=status(exc))
    return exception_handler(exc, context)


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if is_api(request):
        return JsonResponse({"detail": f"Nothing at {request.path}."}, status=404)
    return page(request, f"There is no page at {request.path}.", 404)


def server_error(request: HttpRequest) -> HttpResponse:
    # Written out, not rendered from a template: the template (or what it reads) may be what failed.
    # A database that is down, or whose connections this process's pool has all lent out, passes:
    # it is said as such, with 503, so that a client tries again rather than report a fault.
    sentence, code = (DATABASE_UNAVAILABLE, 503) if isinstance(sys.exc_info()[1], OperationalError) else (FAILED, 500)
    if is_api(request):
        return JsonResponse({"detail": sentence}, status=code)
    return HttpResponse(f"<h1>Server error</h1><p>{sentence}</p>", status=code)
