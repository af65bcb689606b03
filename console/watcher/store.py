"""Snapshots, the watcher's heartbeat and lease in Redis; parsed snapshots cached per process."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Collection, Mapping
from typing import Any

import orjson
import redis
from django.conf import settings

from console.watcher.snapshot import Snapshot

LagPoint = tuple[float, int, float | None]  # (time, total lag, time lag)

log = logging.getLogger(__name__)

HEARTBEAT_KEY = "console:watcher:heartbeat"
CELERY_HEARTBEAT_KEY = "console:celery:heartbeat"


def _snapshot_key(cluster: str) -> str:
    return f"console:snapshot:{cluster}"


def _stamp_key(cluster: str) -> str:
    return f"console:snapshot:{cluster}:stamp"


_client: redis.Redis | None = None
_client_lock = threading.Lock()


def client() -> redis.Redis:
    global _client
    with _client_lock:
        if _client is None:
            _client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1.0, socket_connect_timeout=1.0)
        return _client


class StoreUnavailable(Exception):
    """Redis could not be reached."""


_cache: dict[str, Snapshot] = {}
_cache_lock = threading.Lock()


def save(snapshot: Snapshot, content: bytes | None) -> None:
    """Store the stamp, and the content when it changed (`content` None: unchanged)."""
    try:
        pipe = client().pipeline()
        if content is not None:
            pipe.set(_snapshot_key(snapshot.cluster), content)
        pipe.set(_stamp_key(snapshot.cluster), snapshot.stamp_bytes())
        pipe.set(HEARTBEAT_KEY, str(time.time()))
        pipe.execute()
    except redis.RedisError as exc:
        raise StoreUnavailable(f"Redis is unreachable ({exc})") from exc


def load(cluster: str) -> Snapshot | None:
    """The latest snapshot of a cluster: its content is parsed once per version and kept in
    memory; the small stamp (timestamps, quorum) is read every time.

    Raises StoreUnavailable when Redis is down; `cached()` then still has the last one seen.
    """
    try:
        stamp = client().get(_stamp_key(cluster))
        if stamp is None:
            return None
        version = orjson.loads(stamp)["version"]
        with _cache_lock:
            cached = _cache.get(cluster)
        if cached is not None and cached.version == version:
            cached.apply_stamp(stamp)
            return cached
        raw = client().get(_snapshot_key(cluster))
    except redis.RedisError as exc:
        raise StoreUnavailable(f"Redis is unreachable ({exc})") from exc
    if raw is None:
        return None
    snapshot = Snapshot.from_json(raw)
    snapshot.apply_stamp(stamp)
    with _cache_lock:
        _cache[cluster] = snapshot
    return snapshot


def cached(cluster: str) -> Snapshot | None:
    with _cache_lock:
        return _cache.get(cluster)


def save_stats(cluster: str, stats: dict[str, object]) -> None:
    try:
        client().set(f"console:watcher:stats:{cluster}", json.dumps(stats), ex=60)
    except redis.RedisError:
        log.debug("cannot save watcher stats", exc_info=True)


def load_stats(cluster: str) -> dict[str, object] | None:
    raw = client().get(f"console:watcher:stats:{cluster}")
    return None if raw is None else dict(json.loads(raw))


def append_lag_history(cluster: str, points: Mapping[str, LagPoint | list[LagPoint]], keep: int = 1200,
                       trim: Collection[str] | None = None) -> bool:
    """Points (time, total lag, time lag; one or a list) appended to each group's history; at least
    an hour is kept.
    Only the groups in `trim` (all when None) are trimmed to `keep` points and their expiry renewed:
    the watcher does that every so many points, not with each one. False when Redis failed."""
    if not points:
        return True
    try:
        pipe = client().pipeline(transaction=False)
        for group, point in points.items():
            key = f"console:lag:{cluster}:{group}"
            pipe.rpush(key, *[orjson.dumps(p) for p in (point if isinstance(point, list) else [point])])
            if trim is None or group in trim:
                pipe.ltrim(key, -keep, -1)
                pipe.expire(key, 7200)
        pipe.execute()
        return True
    except redis.RedisError:
        log.debug("cannot store lag history", exc_info=True)
        return False


def lag_history(cluster: str, group: str, since: float) -> list[list[Any]]:
    raw = client().lrange(f"console:lag:{cluster}:{group}", 0, -1)
    points = [orjson.loads(p) for p in raw]
    return [p for p in points if p[0] >= since]


def heartbeat_age(key: str = HEARTBEAT_KEY) -> float | None:
    raw = client().get(key)
    return None if raw is None else max(0.0, time.time() - float(raw))


def acquire_lease(cluster: str, owner: str, ttl: float) -> bool:
    """Hold or take the lease that makes one watcher active per cluster."""
    key = f"console:watcher:lease:{cluster}"
    r = client()
    if r.set(key, owner, nx=True, px=int(ttl * 1000)):
        return True
    current = r.get(key)
    if current is not None and current.decode() == owner:
        r.pexpire(key, int(ttl * 1000))
        return True
    return False


# Read-your-writes ------------------------------------------------------------------------------
# A change made through the console (a topic created, partitions added, offsets reset) notes what
# the next snapshot must show; requests wait (bounded) until the watcher's snapshot shows it, and
# the watcher is woken at once instead of at its next interval.

def _changes_key(cluster: str) -> str:
    return f"console:changes:{cluster}"


def _nudge_key(cluster: str, kind: str) -> str:
    return f"console:nudge:{cluster}:{kind}"


_blocking: redis.Redis | None = None


def _blocking_client() -> redis.Redis:
    global _blocking
    with _client_lock:
        if _blocking is None:
            _blocking = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=5.0, socket_connect_timeout=1.0)
        return _blocking


def note_change(cluster: str, expect: dict[str, Any], keep: float = 30.0) -> None:
    """Record what the watcher's next snapshots must show (see `pending_changes`) and wake it.
    `expect` maps "topic:<name>" to its partition count (0: deleted) and "group:<id>" to anything
    (its committed offsets changed). Best effort: with Redis down, pages simply show the last state."""
    now = time.time()
    try:
        pipe = client().pipeline(transaction=False)
        for what, value in expect.items():
            pipe.hset(_changes_key(cluster), what, orjson.dumps([now, value]))
        pipe.expire(_changes_key(cluster), int(keep) + 5)
        for kind in ("metadata", "samples"):
            pipe.rpush(_nudge_key(cluster, kind), 1)
            pipe.ltrim(_nudge_key(cluster, kind), -1, -1)
            pipe.expire(_nudge_key(cluster, kind), 60)
        pipe.execute()
    except redis.RedisError:
        log.debug("cannot note a change", exc_info=True)


def pending_changes(cluster: str, max_age: float) -> dict[str, tuple[float, Any]]:
    """Changes noted in the last `max_age` seconds: {what: (when, expected value)}."""
    try:
        raw = client().hgetall(_changes_key(cluster))
    except redis.RedisError:
        return {}
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
        time.sleep(min(timeout, 1.0))
        return False
