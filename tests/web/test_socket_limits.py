"""Per-user limits on open sockets, running scans and live tails: the one over the limit gets the
limit's sentence, another user is not affected, and a slot given back (or left by a process that
died) can be taken again."""

from __future__ import annotations

import time
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User

from console import socket_limits
from console.routing import websocket_urlpatterns
from console.snapshots import store
from tests.web.conftest import EndlessTail
from tests.web.test_messages_socket import EndlessScan

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("no_socket_slots")]

MESSAGES = "/ws/clusters/local/topics/orders/messages/"
LIVE = "/ws/clusters/local/live/?view=overview"


@pytest.fixture
def endless(monkeypatch: pytest.MonkeyPatch) -> EndlessScan:
    from topics_app import browse

    fake = EndlessScan()
    monkeypatch.setattr(browse, "run_scan", fake)
    return fake


@database_sync_to_async
def a_user() -> User:
    return User.objects.create_user(f"lim-{time.monotonic_ns()}", password="x")


async def opened(path: str, user: User) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path)
    comm.scope["user"] = user
    connected, code = await comm.connect()
    assert connected, code
    return comm


async def refused(comm: WebsocketCommunicator) -> tuple[int | None, dict[str, Any]]:
    """What a socket refused for a limit sends (one sentence) and its close code."""
    said = await comm.receive_json_from(timeout=3)
    out = await comm.receive_output(timeout=3)
    assert out["type"] == "websocket.close", out
    return out.get("code"), said


async def scan_reply(comm: WebsocketCommunicator, scan_id: int) -> dict[str, Any]:
    await comm.send_json_to({"action": "scan", "id": scan_id, "params": {}})
    return await comm.receive_json_from(timeout=3)


async def test_the_socket_over_a_users_limit_gets_the_sentence_and_another_user_is_unaffected(settings: Any) -> None:
    settings.CONSOLE_WS_MAX_SOCKETS_PER_USER = 2
    alice, bob = await a_user(), await a_user()
    first, second = await opened(LIVE, alice), await opened(MESSAGES, alice)  # (both kinds count)
    third = await opened(MESSAGES, alice)
    code, said = await refused(third)
    assert code == 4429 and said["type"] == "error" and "CONSOLE_WS_MAX_SOCKETS_PER_USER" in said["message"]
    live_third = await opened(LIVE, alice)
    code, said = await refused(live_third)
    assert code == 4429 and said["type"] == "notice" and "2 live pages open" in said["message"]
    bobs = await opened(LIVE, bob)
    assert await bobs.receive_nothing(timeout=0.3), "another user's socket is not refused"
    await first.disconnect()  # a closed socket gives its slot back
    again = await opened(LIVE, alice)
    assert await again.receive_nothing(timeout=0.3)
    for comm in (second, bobs, again):
        await comm.disconnect()


async def test_the_scan_over_a_users_limit_gets_the_sentence_and_another_user_is_unaffected(
        endless: EndlessScan, settings: Any) -> None:
    settings.CONSOLE_WS_MAX_SCANS_PER_USER = 2
    alice, bob = await a_user(), await a_user()
    sockets = [await opened(MESSAGES, alice) for _ in range(3)]
    for i, comm in enumerate(sockets[:2]):
        assert (await scan_reply(comm, i))["type"] == "progress"
    over = await scan_reply(sockets[2], 9)
    assert over["type"] == "error" and over["id"] == 9 and "CONSOLE_WS_MAX_SCANS_PER_USER" in over["message"]
    assert endless.calls == 2
    bobs = await opened(MESSAGES, bob)
    assert (await scan_reply(bobs, 1))["type"] == "progress"
    # A new scan on a socket that runs one replaces it without needing a second slot.
    assert (await scan_reply(sockets[0], 5))["id"] == 0  # (the replaced scan's result)
    await sockets[1].send_json_to({"action": "stop"})
    while (await sockets[1].receive_json_from(timeout=3))["type"] != "result":
        pass
    assert (await scan_reply(sockets[2], 10))["type"] == "progress", "a stopped scan gives its slot back"
    for comm in (*sockets, bobs):
        await comm.disconnect()


async def test_the_tail_over_a_users_limit_gets_the_sentence_and_another_user_is_unaffected(
        endless_tail: EndlessTail, settings: Any) -> None:
    settings.CONSOLE_WS_MAX_TAILS_PER_USER = 2
    alice, bob = await a_user(), await a_user()
    sockets = [await opened(MESSAGES, alice) for _ in range(3)]
    for comm in sockets[:2]:
        await comm.send_json_to({"action": "tail", "params": {}})
        assert (await comm.receive_json_from(timeout=3))["type"] == "tailing"
    await sockets[2].send_json_to({"action": "tail", "params": {}})
    over = await sockets[2].receive_json_from(timeout=3)
    assert over["type"] == "error" and "2 live tails" in over["message"] and "CONSOLE_WS_MAX_TAILS_PER_USER" in over["message"]
    bobs = await opened(MESSAGES, bob)
    await bobs.send_json_to({"action": "tail", "params": {}})
    assert (await bobs.receive_json_from(timeout=3))["type"] == "tailing"
    await sockets[0].disconnect()  # closing the page ends its tail and gives the slot back
    await sockets[2].send_json_to({"action": "tail", "params": {}})
    while (reply := await sockets[2].receive_json_from(timeout=3))["type"] == "error":
        await sockets[2].send_json_to({"action": "tail", "params": {}})  # (the slot comes back once the tail ended)
    assert reply["type"] == "tailing"
    for comm in (*sockets[1:], bobs):
        await comm.disconnect()


async def test_open_sockets_keep_their_slots_past_the_expiry_by_heartbeat(
        settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket_limits, "SLOT_EXPIRY", 1.0)
    settings.CONSOLE_WS_RECHECK_SECONDS = 0.2
    settings.CONSOLE_WS_MAX_SOCKETS_PER_USER = 1
    alice = await a_user()
    first = await opened(LIVE, alice)
    assert await first.receive_nothing(timeout=2.0)  # twice the expiry: only the heartbeat kept the slot
    code, _ = await refused(await opened(LIVE, alice))
    assert code == 4429
    await first.disconnect()


async def test_slots_of_a_process_that_died_age_out(settings: Any) -> None:
    settings.CONSOLE_WS_MAX_SOCKETS_PER_USER = 1
    r = store.client()
    seconds, micros = r.time()
    key = socket_limits.key("sockets", 4242)
    r.zadd(key, {"live-elsewhere": seconds + micros / 1e6})
    assert socket_limits.take("sockets", 4242, "mine") is not None, "a live slot counts"
    r.zadd(key, {"live-elsewhere": seconds - socket_limits.SLOT_EXPIRY - 1})  # its process stopped beating
    assert socket_limits.take("sockets", 4242, "mine") is None
    assert set(r.zrange(key, 0, -1)) == {b"mine"}
    r.delete(key)


async def test_a_slot_already_held_is_taken_again_without_counting_twice(settings: Any) -> None:
    settings.CONSOLE_WS_MAX_SCANS_PER_USER = 1
    assert socket_limits.take("scans", 4243, "socket-a") is None
    assert socket_limits.take("scans", 4243, "socket-a") is None
    refusal = socket_limits.take("scans", 4243, "socket-b")
    assert refusal is not None and "CONSOLE_WS_MAX_SCANS_PER_USER" in refusal
    socket_limits.release("scans", 4243, "socket-a")
    assert socket_limits.take("scans", 4243, "socket-b") is None
    store.client().delete(socket_limits.key("scans", 4243))

