"""The Channels layer on Redis, with a bounded pool that waits for a free connection.

channels_redis keeps one Redis connection pool per event loop, and redis-py's pool raises
MaxConnectionsError as soon as its connections are all in use: every page of a restarted web
process reconnecting at once (each socket's group_add is a Redis call) took the pool past its
bound, and those handshakes failed. Here the pool has the same kind of bound, but a call that finds
every connection busy waits its turn (CONSOLE_CHANNEL_LAYER_POOL_WAIT seconds at most, then
redis.ConnectionError), as a busy Redis is a reason to wait, not to refuse a page.

Its reads also give up a while after the layer's blocking receive (BZPOPMIN for brpop_timeout
seconds) would have answered: without a read timeout, a connection to a Redis that went away without
closing it would keep a process's live hub (console/live_hub.py) waiting for ever, and one as short
as the receive would cut a receive that waited its full time.
"""

from __future__ import annotations

from typing import Any

from channels_redis.core import RedisChannelLayer
from redis import asyncio as aioredis


class WaitingRedisChannelLayer(RedisChannelLayer):  # type: ignore[misc]
    def __init__(self, *args: Any, max_connections: int = 50, pool_wait: float = 10.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_connections = max_connections
        self.pool_wait = pool_wait

    def create_pool(self, index: int) -> aioredis.ConnectionPool:
        host = dict(self.hosts[index])
        if "address" not in host:  # (sentinels and host/port pairs: channels_redis's own pool)
            return super().create_pool(index)
        address = host.pop("address")
        host.setdefault("max_connections", self.max_connections)
        host.setdefault("timeout", self.pool_wait)
        host.setdefault("socket_timeout", self.brpop_timeout + 10)
        return aioredis.BlockingConnectionPool.from_url(address, **host)
