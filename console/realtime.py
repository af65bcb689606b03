"""Names shared by the watcher (which broadcasts) and the websocket consumers (which listen), and
the one way every process broadcasts to them."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import redis
from channels.layers import get_channel_layer
from django.conf import settings

from console.redis_errors import RedisCredentialsRefused, credentials_sentence


def cluster_group(cluster: str) -> str:
    # Channels group names allow only ASCII letters, digits, hyphens, periods and underscores.
    return f"cluster.{cluster}"


BROADCAST_TIMEOUT = 10.0  # seconds a broadcast may take before the cycle goes on without it
_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def group_send(group: str, message: dict[str, Any]) -> None:
    """The Channels layer's group_send, on the one event loop this process keeps for broadcasts (a
    thread of its own runs it). channels_redis keeps its connections to Redis per event loop, and
    `async_to_sync` runs each call on a new loop: every broadcast (one a cycle) opened a connection
    of its own, and its handshake with a Redis older than 7.2 left a reference cycle of exceptions
    and connection objects that the watcher's collector frees only at its full collections
    (console/watcher/memory.py settle_gc, ten minutes apart or more): in the watcher one per cycle,
    in a worker one per reassignment progress message. TimeoutError after BROADCAST_TIMEOUT."""
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="broadcasts", daemon=True).start()
        loop = _loop
    future = asyncio.run_coroutine_threadsafe(get_channel_layer().group_send(group, message), loop)
    try:
        future.result(timeout=BROADCAST_TIMEOUT)
    except TimeoutError:
        future.cancel()
        raise
    except redis.AuthenticationError as exc:
        raise RedisCredentialsRefused(credentials_sentence(settings.REDIS_URL)) from exc
