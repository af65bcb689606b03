"""The watcher's broadcasts go over one connection to Redis per thread: channels_redis keeps its
connections per event loop, and each broadcast made with `async_to_sync` ran on a new loop, so it
opened a connection of its own (one a cycle), each leaving garbage the watcher's collector frees
only every ten minutes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pytest
import redis
from channels.layers import get_channel_layer

from console.realtime import group_send

T = TypeVar("T")


def run(coroutine: Callable[[], Awaitable[T]]) -> T:
    """`coroutine()` on a loop of its own, in a thread of its own (the test's thread may hold a
    loop some earlier test left running)."""

    async def main() -> T:
        return await coroutine()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, main()).result(timeout=30)


def joined(group: str) -> str:
    """A new channel of the layer, added to `group`."""
    layer = get_channel_layer()

    async def join() -> str:
        channel = await layer.new_channel()
        await layer.group_add(group, channel)
        return channel

    return run(join)


def test_broadcasts_reuse_one_connection_and_arrive(redis_server: str) -> None:
    layer = get_channel_layer()
    channel = joined("broadcast-test")
    client = redis.Redis.from_url(redis_server)
    before = int(client.info("stats")["total_connections_received"])
    for i in range(30):
        group_send("broadcast-test", {"type": "test.message", "i": i})
    opened = int(client.info("stats")["total_connections_received"]) - before
    assert opened <= 1, opened

    async def received() -> list[int]:
        return [(await layer.receive(channel))["i"] for _ in range(30)]

    assert run(received) == list(range(30))


def test_a_broadcast_after_redis_dropped_the_connection_goes_out_again(redis_server: str) -> None:
    """Redis restarted or the connection cut: the kept loop's connection is dead, and a broadcast
    after that goes out on a new one (the first may fail: the publisher logs it and goes on)."""
    layer = get_channel_layer()
    channel = joined("broadcast-test-2")
    group_send("broadcast-test-2", {"type": "test.message", "i": 0})
    client = redis.Redis.from_url(redis_server)
    assert client.client_kill_filter(skipme=True) >= 1  # every connection but this one
    with contextlib.suppress(Exception):  # (what the publisher logs and moves on from)
        group_send("broadcast-test-2", {"type": "test.message", "i": 1})
    group_send("broadcast-test-2", {"type": "test.message", "i": 2})

    async def received() -> list[int]:
        got: list[int] = []
        while not got or got[-1] != 2:
            got.append((await asyncio.wait_for(layer.receive(channel), 5))["i"])
        return got

    assert run(received)[-1] == 2


def test_a_broadcast_that_hangs_ends_at_its_timeout_and_the_next_goes(redis_server: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from console import realtime

    class Hanging:
        async def group_send(self, group: str, message: dict[str, object]) -> None:
            await asyncio.sleep(3600)

    monkeypatch.setattr(realtime, "BROADCAST_TIMEOUT", 0.2)
    monkeypatch.setattr(realtime, "get_channel_layer", lambda: Hanging())
    with pytest.raises(TimeoutError):
        group_send("broadcast-test-3", {"type": "test.message"})
    sent: list[dict[str, object]] = []

    class Layer:
        async def group_send(self, group: str, message: dict[str, object]) -> None:
            sent.append(message)

    monkeypatch.setattr(realtime, "get_channel_layer", lambda: Layer())
    group_send("broadcast-test-3", {"type": "test.message", "i": 1})
    assert sent == [{"type": "test.message", "i": 1}]
