"""DRF exception handler: ConsoleErrors (gateway and bad input) answer with their sentence."""

from __future__ import annotations

from typing import Any

from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_handler

from console.errors import ConsoleError


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ConsoleError):
        return Response({"detail": exc.message}, status=exc.http_status)
    return drf_handler(exc, context)
