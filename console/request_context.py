"""Who is asking: the client's address and user agent of the request being served.

A small middleware puts the current request in a context variable, so code far from the view (the
audit log's `record`, login signals, services) can say where a change came from without passing the
request down. The address is the socket's peer (REMOTE_ADDR) unless the console is configured to sit
behind a proxy (CONSOLE_BEHIND_PROXY): only then is the proxy's client-address header believed,
since any client can send that header itself.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

from django.conf import settings
from django.http import HttpRequest, HttpResponse

_current: ContextVar[HttpRequest | None] = ContextVar("console_request", default=None)

USER_AGENT_LENGTH = 300  # AuditEntry.user_agent's length
ADDRESS_LENGTH = 64  # AuditEntry.client_ip's length


def current_request() -> HttpRequest | None:
    return _current.get()


def client_ip(request: HttpRequest) -> str:
    """The client's address: with CONSOLE_BEHIND_PROXY, the entry CONSOLE_PROXY_COUNT places from the
    right of the proxy's header (the one the outermost trusted proxy saw), else the socket's peer."""
    peer = str(request.META.get("REMOTE_ADDR") or "")
    if not settings.CONSOLE_BEHIND_PROXY:
        return peer[:ADDRESS_LENGTH]
    header = str(request.META.get(settings.CONSOLE_PROXY_CLIENT_IP_META, "") or "")
    hops = [h.strip() for h in header.split(",") if h.strip()]
    # Entries left of the trusted proxies' own are whatever the client wrote: never trusted.
    count = settings.CONSOLE_PROXY_COUNT
    if len(hops) >= count:
        return hops[-count][:ADDRESS_LENGTH]
    return peer[:ADDRESS_LENGTH]


def user_agent(request: HttpRequest) -> str:
    return str(request.META.get("HTTP_USER_AGENT") or "")[:USER_AGENT_LENGTH]


class RequestContextMiddleware:
    """Makes the request being served available to `current_request()` for its whole handling."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        token = _current.set(request)
        try:
            return self.get_response(request)
        finally:
            _current.reset(token)
