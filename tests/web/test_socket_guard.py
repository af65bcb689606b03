"""A websocket stays open only while its user may keep it: logging out (the session deleted),
deactivation or losing the right closes it within seconds, with a sentence, though a tail only sends
and never receives; a message that arrives after the logout is not run."""

from __future__ import annotations

import json
import time
from importlib import import_module
from typing import Any

import pytest
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import Group, User

from console.routing import websocket_urlpatterns
from tests.web.conftest import EndlessTail

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("no_socket_slots")]

CLOSED_WITHIN = 5.0  # seconds: the bound (the recheck runs every 2 s by default)


@database_sync_to_async
def logged_in(group: str | None = None) -> tuple[User, str]:
    """A user and a session as the login view leaves them."""
    user = User.objects.create_user(f"guard-{time.monotonic_ns()}", password="x")
    if group is not None:
        user.groups.set([Group.objects.get_or_create(name=group)[0]])
    session = import_module(django_settings.SESSION_ENGINE).SessionStore()
    session[SESSION_KEY] = user._meta.pk.value_to_string(user)
    session[BACKEND_SESSION_KEY] = "console.user_backend.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.save()
    return user, str(session.session_key)


@database_sync_to_async
def log_out(session_key: str) -> None:
    import_module(django_settings.SESSION_ENGINE).SessionStore(session_key=session_key).delete()


async def open_socket(path: str, session_key: str) -> WebsocketCommunicator:
    """A socket through the same session and auth middleware as the ASGI app, with the session's cookie."""
    cookie = f"{django_settings.SESSION_COOKIE_NAME}={session_key}".encode()
    comm = WebsocketCommunicator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)), path, headers=[(b"cookie", cookie)])
    connected, code = await comm.connect()
    assert connected, code
    return comm


async def closed_within(comm: WebsocketCommunicator, seconds: float) -> tuple[int | None, list[dict[str, Any]]]:
    """The close code, and what the socket sent before it; fails if it is still open after `seconds`."""
    deadline = time.monotonic() + seconds
    sent: list[dict[str, Any]] = []
    while True:
        left = deadline - time.monotonic()
        assert left > 0, f"the socket was still open after {seconds} s; it last sent {sent[-3:]}"
        try:
            out = await comm.receive_output(timeout=left)
        except TimeoutError:
            raise AssertionError(f"the socket was still open after {seconds} s; it last sent {sent[-3:]}") from None
        if out["type"] == "websocket.close":
            return out.get("code"), sent
        sent.append(json.loads(out["text"]))


async def tailing(session_key: str) -> WebsocketCommunicator:
    comm = await open_socket("/ws/clusters/local/topics/orders/messages/", session_key)
    await comm.send_json_to({"action": "tail", "params": {}})
    assert (await comm.receive_json_from(timeout=3))["type"] == "tailing"
    return comm


async def test_a_tail_is_closed_within_seconds_of_its_users_logout(endless_tail: EndlessTail) -> None:
    user, session = await logged_in()
    comm = await tailing(session)
    await log_out(session)
    code, sent = await closed_within(comm, CLOSED_WITHIN)
    assert code == 4401
    assert sent[-1] == {"type": "error", "message": sent[-1]["message"]} and "log in again" in sent[-1]["message"]
    assert await database_sync_to_async(endless_tail.ended.wait)(1.0), "the tail's reading thread went on"


async def test_a_tail_is_closed_within_seconds_of_its_users_deactivation(endless_tail: EndlessTail) -> None:
    user, session = await logged_in()
    comm = await tailing(session)
    await database_sync_to_async(User.objects.filter(id=user.id).update)(is_active=False)
    code, sent = await closed_within(comm, CLOSED_WITHIN)
    assert code == 4403 and "deactivated" in sent[-1]["message"]
    assert await database_sync_to_async(endless_tail.ended.wait)(1.0)


async def test_a_live_page_is_closed_within_seconds_of_its_users_logout(redis_server: str) -> None:
    user, session = await logged_in()
    comm = await open_socket("/ws/clusters/local/live/?view=overview", session)
    await log_out(session)
    code, sent = await closed_within(comm, CLOSED_WITHIN)
    assert code == 4401 and sent[-1]["type"] == "notice" and "log in again" in sent[-1]["message"]


async def test_a_live_page_is_closed_when_its_user_may_no_longer_view_the_cluster(
        redis_server: str, settings: Any) -> None:
    settings.CONSOLE_DEFAULT_ROLE = "none"  # (a user without a role may see nothing)
    user, session = await logged_in(group="viewer")
    comm = await open_socket("/ws/clusters/local/live/?view=overview", session)
    assert await comm.receive_nothing(timeout=2.5), "a viewer's socket stays open"
    await database_sync_to_async(user.groups.clear)()
    code, sent = await closed_within(comm, CLOSED_WITHIN)
    assert code == 4403 and "no longer" in sent[-1]["message"]


async def test_a_message_that_comes_after_the_logout_is_not_run(endless_tail: EndlessTail, settings: Any) -> None:
    settings.CONSOLE_WS_RECHECK_SECONDS = 60.0  # (only the check of the message itself can close it)
    user, session = await logged_in()
    comm = await open_socket("/ws/clusters/local/topics/orders/messages/", session)
    await log_out(session)
    await comm.send_json_to({"action": "tail", "params": {}})
    code, sent = await closed_within(comm, 1.0)
    assert code == 4401 and [m["type"] for m in sent] == ["error"]
    assert not endless_tail.ended.is_set(), "the tail was started"


async def test_a_socket_whose_session_is_still_there_stays_open(endless_tail: EndlessTail) -> None:
    user, session = await logged_in()
    comm = await tailing(session)
    deadline = time.monotonic() + 4.5  # (two rechecks)
    while time.monotonic() < deadline:
        assert (await comm.receive_json_from(timeout=2))["type"] == "records"
    await comm.disconnect()


async def test_a_socket_its_user_may_not_open_is_refused_at_connect_with_the_reason(redis_server: str, settings: Any) -> None:
    settings.CONSOLE_DEFAULT_ROLE = "none"
    user, session = await logged_in()  # (no role at all)
    cookie = f"{django_settings.SESSION_COOKIE_NAME}={session}".encode()
    for path in ("/ws/clusters/local/live/?view=overview", "/ws/clusters/local/topics/orders/messages/"):
        comm = WebsocketCommunicator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)), path, headers=[(b"cookie", cookie)])
        assert (await comm.connect())[0], "accepted, to say why"
        code, sent = await closed_within(comm, 3.0)
        assert code == 4403 and [m["type"] for m in sent] in (["notice"], ["error"]), (path, sent)
        assert "You may not see this" in sent[0]["message"]
