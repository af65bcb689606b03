"""Read-your-writes: a change made through the console (a topic created, partitions added, offsets
reset, a leader elected) notes what the next snapshot must show; reads wait (bounded) until the
watcher's snapshot shows it, and the watcher is woken at once instead of at its next interval."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

import orjson
import redis
from django.conf import settings

from console.lifecycle import failure_seen
from console.snapshots import store

log = logging.getLogger(__name__)

def changes_key(cluster: str) -> str:
    return f"console:changes:{cluster}"


def _nudge_key(cluster: str, kind: str) -> str:
    return f"console:nudge:{cluster}:{kind}"


_blocking: redis.Redis | None = None
_blocking_lock = threading.Lock()


def _blocking_client() -> redis.Redis:
    global _blocking
    with _blocking_lock:
        if _blocking is None:
            _blocking = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=5.0, socket_connect_timeout=1.0)
        return _blocking


# Partitions of one change whose new leader or replica set the next reads wait for (elections,
# reassignments): the watcher reads every partition in one metadata answer, so a few stand for all
# of a change over a large cluster.
PARTITIONS_NOTED = 200


def note_change(cluster: str, expect: dict[str, Any], keep: float = 30.0) -> None:
    """Record what the watcher's next snapshots must show (see `pending_changes`) and wake it.
    `expect` maps "topic:<name>" to its partition count (0: deleted) and "group:<id>" to anything
    (its committed offsets changed). Best effort: with Redis down, pages simply show the last state."""
    now = time.time()
    try:
        pipe = store.client().pipeline(transaction=False)
        for what, value in expect.items():
            pipe.hset(changes_key(cluster), what, orjson.dumps([now, value]))
        pipe.expire(changes_key(cluster), int(keep) + 5)
        for kind in ("metadata", "samples"):
            pipe.rpush(_nudge_key(cluster, kind), 1)
            pipe.ltrim(_nudge_key(cluster, kind), -1, -1)
            pipe.expire(_nudge_key(cluster, kind), 60)
        pipe.execute()
    except redis.RedisError:
        failure_seen()
        log.debug("cannot note a change", exc_info=True)


def pending_changes(cluster: str, max_age: float) -> dict[str, tuple[float, Any]]:
    """Changes noted in the last `max_age` seconds: {what: (when, expected value)}."""
    try:
        raw = store.client().hgetall(changes_key(cluster))
    except redis.RedisError:
        failure_seen()
        return {}
    return pending_from(raw, max_age)


def pending_from(raw: Mapping[bytes, bytes], max_age: float) -> dict[str, tuple[float, Any]]:
    """`pending_changes` of the hash at `changes_key` as read (in one round trip with the snapshot's stamp)."""
    now = time.time()
    out: dict[str, tuple[float, Any]] = {}
    for key, value in raw.items():
        when, expected = orjson.loads(value)
        if now - when <= max_age:
            out[key.decode()] = (when, expected)
    return out


def wait_for_nudge(cluster: str, kind: str, timeout: float) -> bool:
    """Block up to `timeout` seconds (at most 3) for a change noted by `note_change`; True when woken."""
    if timeout <= 0:
        return False
    try:
        return _blocking_client().blpop([_nudge_key(cluster, kind)], timeout=min(timeout, 3.0)) is not None
    except redis.RedisError:
        failure_seen()
        time.sleep(min(timeout, 1.0))
        return False
