"""Snapshots, the watcher's heartbeat and lease in Redis; parsed snapshots cached per process."""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

import orjson
import redis
from django.conf import settings

from console.watcher.snapshot import Snapshot

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


def append_lag_history(cluster: str, points: dict[str, tuple[float, int, float | None]], keep: int = 1200) -> None:
    """One point per group per sample (time, total lag, time lag); about an hour is kept."""
    if not points:
        return
    try:
        pipe = client().pipeline(transaction=False)
        for group, point in points.items():
            key = f"console:lag:{cluster}:{group}"
            pipe.rpush(key, orjson.dumps(point))
            pipe.ltrim(key, -keep, -1)
            pipe.expire(key, 7200)
        pipe.execute()
    except redis.RedisError:
        log.debug("cannot store lag history", exc_info=True)


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
