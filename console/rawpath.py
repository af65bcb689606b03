"""Names with a slash in URL paths, sent the standard way: a percent-encoded `%2F` inside one segment.

Generated OpenAPI clients percent-encode path parameters, so the group `team/service` arrives as
`team%2Fservice`. The ASGI server decodes the whole path before routing, which turns that into two
segments; the still-encoded `raw_path` keeps them apart. For a request whose raw path has an encoded slash,
each such segment is read the standard way (percent-decoded) and handed on in the console's own form
(console/converters.py: `/` as `~2F`, `~` as `~7E`), so routing and the name converters see one segment.
Segments without an encoded slash are left as the server decoded them: the `~XX` form keeps working, and
`a%252Fb` (the literal name `a%2Fb`) stays `a%2Fb`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote

from console.converters import encode_name

Receive = Callable[[], Awaitable[Any]]
Send = Callable[[Any], Awaitable[None]]
ASGIApp = Callable[[dict[str, Any], Receive, Send], Awaitable[None]]


def _has_encoded_slash(segment: str) -> bool:
    return "%2f" in segment.lower()


def routed_path(path: str, raw_path: bytes | None) -> str:
    """The path to route on: `path` with each segment that held an encoded slash in the console's form.

    The path is left as it is unless the raw path has an encoded slash and decodes to exactly `path`
    (a server or proxy that changed one without the other is not second-guessed)."""
    if not raw_path:
        return path
    try:
        raw = raw_path.decode("ascii")
    except UnicodeDecodeError:
        return path
    if not _has_encoded_slash(raw):
        return path
    segments = raw.split("/")
    if "/".join(unquote(s) for s in segments) != path:
        return path
    return "/".join(encode_name(unquote(s)) if _has_encoded_slash(s) else unquote(s) for s in segments)


class EncodedSlashes:
    """ASGI middleware: HTTP and websocket scopes are routed on `routed_path` (see the module's docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope.get("type") in {"http", "websocket"} and "path" in scope:
            path = routed_path(scope["path"], scope.get("raw_path"))
            if path != scope["path"]:
                scope = {**scope, "path": path}
        await self.app(scope, receive, send)
