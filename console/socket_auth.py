"""Channels' session login for websockets, resolved for the sockets that open together in one call
of the database thread (console/batches.py) instead of one call each: the same checks as
channels.auth (the session's user, backend and password hash), so the same users get in."""

from __future__ import annotations

from typing import Any

from channels.auth import AuthMiddleware, get_user
from channels.sessions import CookieMiddleware, SessionMiddleware

from console.batches import Batched


def _users(scopes: list[dict[str, Any]]) -> list[Any]:
    """Each scope's user; the pages of one browser share its session, read once for all of them."""
    by_session: dict[str, Any] = {}
    out: list[Any] = []
    for scope in scopes:
        key = getattr(scope.get("session"), "session_key", None)
        if key is not None and key in by_session:
            out.append(by_session[key])
            continue
        try:
            user = get_user.func(scope)
        except Exception as exc:  # noqa: BLE001 - raised again to its own socket alone
            user = exc
        if key is not None:
            by_session[key] = user
        out.append(user)
    return out


_login: Batched[dict[str, Any], Any] = Batched(_users)


class BatchedAuthMiddleware(AuthMiddleware):  # type: ignore[misc]
    async def resolve_scope(self, scope: dict[str, Any]) -> None:
        user = await _login(scope)
        if isinstance(user, Exception):
            raise user
        scope["user"]._wrapped = user


def socket_auth_stack(inner: Any) -> Any:
    """As channels.auth.AuthMiddlewareStack: cookies, the session, then its user."""
    return CookieMiddleware(SessionMiddleware(BatchedAuthMiddleware(inner)))
