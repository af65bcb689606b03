"""A strict Content-Security-Policy on every response: a safety net behind the templates' escaping.

Scripts come only from the console's own static files (Plotly.js included, served from the plotly
package): no inline script, no event-handler attributes, no eval. Styles may be inline because
Plotly sets style attributes and injects its own stylesheet; CSS cannot run script in a current
browser. Websockets go back to the host the page came from.
"""

from __future__ import annotations

from collections.abc import Callable

from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponseBase

HEADER = "Content-Security-Policy"

_DIRECTIVES = [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "frame-ancestors 'none'",
    "form-action 'self'",
]


def policy(host: str | None) -> str:
    """The policy for a page served from `host` (None when the host is not one the console serves)."""
    # CSP 3 lets 'self' match ws: and wss: on the same host; naming them keeps older browsers working.
    connect = "connect-src 'self'" + (f" ws://{host} wss://{host}" if host else "")
    return "; ".join([*_DIRECTIVES, connect])


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if HEADER not in response:
            try:
                host: str | None = request.get_host()  # validated against ALLOWED_HOSTS: no spaces or ';'
            except DisallowedHost:
                host = None
            response[HEADER] = policy(host)
        return response
