"""A reconnect storm: every page of a restarted web process opens its live socket at once, through
the real Channels layer on the test Redis. None may be refused for want of a Redis connection, and
each then gets the next broadcast."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User

from console.realtime import cluster_group
from console.routing import websocket_urlpatterns
from console.snapshots import store
from tests.support import free_port
from tests.web.conftest import sample_snapshot

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("no_socket_slots")]

SOCKETS = 300
USERS = 10  # (each under the per-user limit of open sockets)


@database_sync_to_async
def some_users() -> list[User]:
    stamp = time.monotonic_ns()
    return [User.objects.create_user(f"storm-{stamp}-{i}", password="x") for i in range(USERS)]


async def test_three_hundred_pages_connecting_at_once_all_connect_and_get_the_next_update(redis_server: str) -> None:
    snap = sample_snapshot(version=int(time.time() * 1000))
    store.save(snap, snap.content_bytes())
    users = await some_users()
    comms = []
    for i in range(SOCKETS):
        comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), "/ws/clusters/local/live/?view=status")
        comm.scope["user"] = users[i % USERS]
        comms.append(comm)
    try:
        results = await asyncio.gather(*(c.connect(timeout=20) for c in comms), return_exceptions=True)
        failed = [r for r in results if r != (True, None)]
        assert not failed, f"{len(failed)} of {SOCKETS} sockets did not connect: {failed[:3]}"
        await get_channel_layer().group_send(cluster_group("local"), {
            "type": "cluster.update", "cluster": "local", "version": snap.version, "changed": False, "taken_at": time.time(),
            "checked_at": time.time(), "reachable": True, "error": None, "events": []})
        statuses = await asyncio.gather(*(c.receive_json_from(timeout=10) for c in comms))
        assert {(s["type"], s["version"]) for s in statuses} == {("status", snap.version)}
    finally:
        await asyncio.gather(*(c.disconnect() for c in comms), return_exceptions=True)


async def test_a_page_opened_while_redis_is_down_is_told_so_and_closed_to_try_again(
        redis_server: str, settings: Any) -> None:
    from console.socket_guard import CLOSE_TRY_AGAIN

    [user] = (await some_users())[:1]
    settings.CHANNEL_LAYERS = {"default": {**settings.CHANNEL_LAYERS["default"], "CONFIG": {
        **settings.CHANNEL_LAYERS["default"]["CONFIG"], "hosts": [f"redis://127.0.0.1:{free_port()}/0"]}}}
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), "/ws/clusters/local/live/?view=overview")
    comm.scope["user"] = user
    connected, _ = await comm.connect(timeout=10)
    assert connected
    notice = await comm.receive_json_from(timeout=10)
    assert notice["type"] == "notice" and "Redis cannot be reached" in notice["message"]
    closed = await comm.receive_output(timeout=10)
    assert closed == {"type": "websocket.close", "code": CLOSE_TRY_AGAIN}
