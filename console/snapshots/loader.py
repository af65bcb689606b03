"""Reading a cluster's snapshot back from Redis: parsed once per version and kept per process, each
new version fetching and parsing only the parts it changed; Redis down leaves the last copy
(`cached`)."""

from __future__ import annotations

import gc
import logging
import threading
import time
import zlib
from collections.abc import Iterable, Mapping
from typing import Any, cast

import lz4.block
import orjson
import redis
from django.conf import settings

from console.redis_errors import describe
from console.snapshots import store
from console.snapshots.gc_pause import no_gc
from console.snapshots.model import Snapshot, TopicState
from console.snapshots.parts import GROUP_PART, PARTS_FORMAT, TOPIC_PART, GroupsRead, HeldGroup, topic_of_part

log = logging.getLogger(__name__)

# A process's parsed copy of each cluster's snapshot, and the JSON its topics and groups were parsed from.
_cache: dict[str, Snapshot] = {}
_cache_lock = threading.Lock()
_raw_parts: dict[str, dict[str, bytes]] = {}


def load(cluster: str) -> Snapshot | None:
    """The latest snapshot of a cluster (`load_with`)."""
    return load_with(cluster, None)[0]


def load_with(cluster: str, hash_key: str | None) -> tuple[Snapshot | None, dict[bytes, bytes]]:
    """The latest snapshot of a cluster, and the Redis hash `hash_key` read in the same round trip
    (the changes a page's read waits for: every request asks for both).

    The latest snapshot of a cluster: its content is parsed once per version and kept in
    memory; the small stamp (timestamps, quorum) is read every time. Holding the version before,
    only the topics and groups that version changed are fetched, the topics parsed (the groups when
    first asked for: GroupsRead); the others are the same objects. A snapshot stored by an older
    version (not in parts) reads as none.

    Raises StoreUnavailable when Redis is down; `cached()` then still has the last one seen.
    """
    extra: dict[bytes, bytes] = {}
    try:
        if hash_key is None:
            stamp = store.client().get(store.stamp_key(cluster))
        else:
            stamp, extra = store.client().pipeline(transaction=False).get(store.stamp_key(cluster)).hgetall(hash_key).execute()
        if stamp is None:
            return None, extra
        version = orjson.loads(stamp)["version"]
        with _cache_lock:
            cached = _cache.get(cluster)
            raw_before = _raw_parts.get(cluster)
        if cached is not None and cached.version == version:
            cached.apply_stamp(stamp)
            return cached, extra
        with no_gc():  # (what the read builds is frozen before the collector could walk it: see _settle_gc)
            read = _read_content(cluster, cached, raw_before)
            if read is not None:
                stamp, header, raw, topics, groups = read
                snapshot = Snapshot.from_parts(header, topics, groups)
                snapshot.apply_stamp(stamp)
                with _cache_lock:
                    _cache[cluster] = snapshot
                    _raw_parts[cluster] = raw
                _settle_gc()
    except redis.RedisError as exc:
        raise store.StoreUnavailable(describe(exc, settings.REDIS_URL)) from exc
    except (ValueError, zlib.error, lz4.block.LZ4BlockError) as exc:  # (orjson's decode error is a ValueError)
        log.warning("the stored snapshot of %s cannot be read", cluster, exc_info=True)
        raise store.StoreUnreadable(f"The stored snapshot of cluster '{cluster}' cannot be read ({exc}); "
                              "the watcher rewrites it.") from exc
    return (None if read is None else snapshot), extra


# A reading process (web, Celery) holds the parsed snapshot: millions of objects on a large cluster.
# The cyclic collector would walk them all whenever a version's new objects tipped it into a full
# collection, making that read several times slower (and miss the next versions). What a read
# leaves is frozen (out of the collector's sight; still freed when the version is replaced, as none
# of it is cyclic), as the watcher's process does after each cycle (console.watcher.memory.settle_gc);
# a full collection, frozen objects included, every READER_COLLECTION_INTERVAL frees what cyclic
# garbage was frozen with them. The read's new objects are frozen while the collector is still
# paused: re-enabled first, it would walk them once more.
READER_COLLECTION_INTERVAL = 600.0
_collected = [time.monotonic()]


def _settle_gc() -> None:
    now = time.monotonic()
    if now - _collected[0] >= READER_COLLECTION_INTERVAL:
        _collected[0] = now
        gc.unfreeze()
        gc.collect()
    gc.freeze()


def _read_content(cluster: str, cached: Snapshot | None, raw_before: dict[str, bytes] | None) -> tuple[
        bytes, bytes, dict[str, bytes], dict[str, TopicState], GroupsRead] | None:
    """(stamp, header, each part's JSON, the topics, the groups) of one version, read together: the
    header is watched, so a version written meanwhile makes the read start again."""
    for attempt in range(3):
        with store.client().pipeline() as pipe:
            try:
                pipe.watch(store.snapshot_key(cluster))
                # Watched: the pipeline runs these at once (typed as the pipeline itself).
                stamp = cast(bytes | None, pipe.get(store.stamp_key(cluster)))
                header = cast(bytes | None, pipe.get(store.snapshot_key(cluster)))
                record = cast(bytes | None, pipe.get(store.changes_record_key(cluster)))
                if stamp is None or header is None or not header.startswith(b'{"parts":%d' % PARTS_FORMAT):
                    return None
                change = orjson.loads(record) if record else None
                stamp_version = orjson.loads(stamp)["version"]
                plan: tuple[list[str], list[str]] | None = None  # the parts to fetch and those removed, from the version held
                if cached is not None and raw_before is not None and change is not None \
                        and change.get("version") == stamp_version and change.get("changed") is not None:
                    if change.get("base") == cached.version:
                        plan = list(change["changed"]), list(change["removed"])
                    elif cached.version < stamp_version:  # (versions missed: their records, from the log)
                        log_records = cast(list[bytes], pipe.lrange(store.changes_log_key(cluster), 0, -1))
                        plan = catch_up([orjson.loads(r) for r in log_records], cached.version, stamp_version)
                pipe.multi()
                if plan is not None:
                    names = plan[0]
                    pipe.hmget(store.parts_key(cluster), names) if names else pipe.exists(store.parts_key(cluster))
                else:
                    pipe.hgetall(store.parts_key(cluster))
                (answer,) = pipe.execute()
            except redis.WatchError:
                if attempt < 2:
                    continue
                raise redis.RedisError("the snapshot kept changing while it was read") from None
        if plan is not None:
            assert raw_before is not None and cached is not None
            fetched = {n: b for n, b in zip(names, answer, strict=True) if b is not None} if names else {}
            raw, topics, groups = _apply_parts(cached, raw_before, fetched, plan[1])
            return stamp, header, raw, topics, groups
        raw = {k.decode(): v for k, v in answer.items()}
        topics_before = cached.topics if cached is not None else {}
        groups_before = _held_groups(cached)
        raw_known = raw_before or {}
        parsed: dict[str, TopicState] = {}
        held: dict[str, HeldGroup] = {}
        with no_gc():
            for key, b in sorted(raw.items()):
                _parse_part(key, b, raw_known.get(key) == b, parsed, topics_before, held, groups_before)
        return stamp, header, raw, parsed, GroupsRead(held)
    return None


def _apply_parts(cached: Snapshot, raw_before: dict[str, bytes], fetched: Mapping[str, bytes],
                 removed: Iterable[str]) -> tuple[dict[str, bytes], dict[str, TopicState], GroupsRead]:
    """The parts, topics and groups of the version held with the parts fetched put in and those
    removed taken out: only these are looked at (not every part), the others are the same objects in
    the same (name) order; the dicts are sorted again only when a name was added. (A part the plan
    named but the store no longer has, dropped behind its back, is not noticed: the one held stays.)"""
    raw = dict(raw_before)
    topics = dict(cached.topics)
    groups_before = _held_groups(cached)
    groups = dict(groups_before)
    for key in removed:
        raw.pop(key, None)
        if key.startswith(TOPIC_PART):
            topics.pop(key[len(TOPIC_PART):], None)
        elif key.startswith(GROUP_PART):
            groups.pop(key[len(GROUP_PART):], None)
    topics_added = groups_added = False
    with no_gc():
        for key, b in fetched.items():
            same = raw.get(key) == b
            raw[key] = b
            if key.startswith(TOPIC_PART):
                topics_added = topics_added or key[len(TOPIC_PART):] not in topics
            elif key.startswith(GROUP_PART):
                groups_added = groups_added or key[len(GROUP_PART):] not in groups
            _parse_part(key, b, same, topics, cached.topics, groups, groups_before)
    return (raw, dict(sorted(topics.items())) if topics_added else topics,
            GroupsRead(dict(sorted(groups.items())) if groups_added else groups))


def catch_up(records: Iterable[Mapping[str, Any]], have: int, want: int) -> tuple[list[str], list[str]] | None:
    """From the change records of several versions (any order), the parts to fetch and to drop to go
    from version `have` to `want`: following each record's base back from `want`; None when the
    records do not reach `have` (then everything is read)."""
    by_version = {r.get("version"): r for r in records}
    chain = []
    at = want
    while at != have:
        r = by_version.get(at)
        if r is None or r.get("base") is None or r.get("changed") is None or not have <= r["base"] < at:
            return None
        chain.append(r)
        at = r["base"]
    changed: dict[str, None] = {}  # (in order)
    removed: set[str] = set()
    for r in reversed(chain):
        for name in r["removed"]:
            changed.pop(name, None)
            removed.add(name)
        for name in r["changed"]:
            changed[name] = None
            removed.discard(name)
    return list(changed), sorted(removed)


def _held_groups(cached: Snapshot | None) -> dict[str, HeldGroup]:
    """The groups of the version held, as their holders (GroupsRead)."""
    if cached is None:
        return {}
    return GroupsRead.of(cached.groups).held()


def _parse_part(key: str, b: bytes, same: bool, topics: dict[str, TopicState], topics_before: dict[str, TopicState],
                groups: dict[str, HeldGroup], groups_before: dict[str, HeldGroup]) -> None:
    """One stored part into `topics` (parsed) or `groups` (held, parsed when asked for: GroupsRead):
    the object held before when its JSON is the same."""
    if key.startswith(TOPIC_PART):
        name = key[len(TOPIC_PART):]
        topics[name] = topics_before[name] if same and name in topics_before else topic_of_part(b)
    elif key.startswith(GROUP_PART):
        gid = key[len(GROUP_PART):]
        groups[gid] = groups_before[gid] if same and gid in groups_before else HeldGroup(b)


def cached(cluster: str) -> Snapshot | None:
    with _cache_lock:
        return _cache.get(cluster)

