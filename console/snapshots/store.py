"""Snapshots, the watcher's heartbeat and lease in Redis; parsed snapshots cached per process."""

from __future__ import annotations

import gc
import json
import logging
import threading
import time
import zlib
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import chain
from typing import Any, cast

import lz4.block
import orjson
import redis
from django.conf import settings

from console.lifecycle import failure_seen
from console.redis_errors import describe
from console.snapshots.model import (
    GROUP_PART,
    PARTS_FORMAT,
    TOPIC_PART,
    ContentParts,
    GroupsRead,
    HeldGroup,
    Snapshot,
    TopicState,
    kept_json,
    no_gc,
)

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

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        failure_seen()  # (see console.lifecycle: the watcher collects what a failure leaves in cycles)


class StoreLost(StoreUnavailable):
    """Redis no longer holds the snapshot the last save stored (restarted or flushed between two
    saves, none refused): a save that writes only what changed would leave it without the rest."""


class StoreUnreadable(StoreUnavailable):
    """What Redis holds for a cluster could not be read (a part written by another version of the
    console, say): treated as an unreachable store, with its own message, until the watcher writes
    the snapshot again (it rewrites every part when it cannot read the last one)."""


_cache: dict[str, Snapshot] = {}
_cache_lock = threading.Lock()


def _parts_key(cluster: str) -> str:
    return f"console:snapshot:{cluster}:parts"


def _changes_record_key(cluster: str) -> str:
    return f"console:snapshot:{cluster}:changed"


def _changes_log_key(cluster: str) -> str:
    return f"console:snapshot:{cluster}:changes"


# The change records of the last versions, newest first, since the last save that wrote everything:
# a reader that missed versions fetches the parts they changed, not every part. At 300,000
# partitions a version came every second and a web process's read of one took 0.5 s; one that
# missed a version read all 60,000 parts again (2 to 8 s), fell further behind and read everything
# every time.
CHANGES_KEPT = 30


# What tells a part's JSON from the one stored before, without holding that: Python's hash of the
# bytes (SipHash, 64 bits, keyed per process; cached in the bytes object, so a part that is the same
# object as last time costs a lookup). Holding the last JSON instead kept every changed topic's and
# group's JSON twice while a cycle built the new (at 300,000 partitions, 60 MB of topics when a size
# read changes them all). Two different JSONs of one part share a digest with a chance of 2**-64.
digest = hash


def digests_of(parts: Mapping[str, bytes]) -> dict[str, int]:
    """Each part's digest (`digest`)."""
    return {name: digest(raw) for name, raw in parts.items()}


@dataclass(frozen=True)
class PartChanges:
    """How a content's digests differ from `base` (an earlier content's digests, that dict itself):
    the parts whose digest differs or that are new (`changed`), and those gone (`removed`). A
    watcher knows them from what it serialised and what arrived since its last content; `save`
    uses them when `base` is what it stored last, instead of comparing every part's digest (at
    300,000 partitions and 50,000 groups that compare was a sixth of a cycle that changed a few
    topics)."""

    base: dict[str, int]
    changed: list[str]
    removed: list[str]

    def __bool__(self) -> bool:
        return bool(self.changed or self.removed)


def digests_moved(base: dict[str, int], touched: Iterable[tuple[str, int | None]]) -> tuple[dict[str, int], PartChanges]:
    """`base` with each touched part's digest put in (None: the part is gone), as a new dict, and
    how it differs from `base`."""
    now = dict(base)
    changed: list[str] = []
    removed: list[str] = []
    for name, d in touched:
        was = now.get(name)
        if d is None:
            if was is not None:
                del now[name]
                removed.append(name)
        elif was != d:
            now[name] = d
            changed.append(name)
    return now, PartChanges(base, changed, removed)


class GroupParts:
    """The groups' stored parts as the watcher keeps them when a sampling process makes them: each
    group's digest (`digest`), and its part itself only until it is in Redis. Holding every group's
    part for the one save that needs them all (the first after Redis lost what it held) cost the
    watcher's process their whole size at all times (29 MB at 50,000 groups); that save finds the
    set `complete` or not, and when not the watcher asks the sampling process for every group
    again (RemoteSampler.ask_groups_again). Keyed as stored ("g:<id>").

    While the store holds the last snapshot whole (`direct`, set by the watcher), a part that
    arrives for a group whose last part is already in Redis is written there at once, ahead of the
    snapshot that names it (`early`: the next save lists it among the changed parts without writing
    it); held until a cycle wrote them, a pass's changed groups (30,000 of 50,000, 18 MB) made the
    watcher's process peak at each pass. A reader of the whole hash meanwhile sees such a group as
    the next pass saw it, as a snapshot made while a pass's pieces arrive stores it. A part that
    arrives for a group whose part is held (a save may be writing the older one) is held too.
    Thread-safe: the sampling thread puts parts in as they arrive while a cycle takes them."""

    __slots__ = ("_digests", "_direct", "_early", "_lock", "_touched", "_unwritten")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._digests: dict[str, int] = {}
        self._touched: set[str] = set()  # groups whose digest was put in or taken out since `changes_taken`
        self._unwritten: dict[str, bytes] = {}
        self._early: set[str] = set()  # written directly since the last save that took them
        self._direct: Callable[[dict[str, bytes]], None] | None = None

    def direct(self, writer: Callable[[dict[str, bytes]], None] | None) -> None:
        """Write arriving parts with `writer` (put_parts), or hold them all (None: the next save
        writes everything, and must find every part here)."""
        with self._lock:
            self._direct = writer

    def put(self, parts: Iterable[tuple[str, bytes]]) -> None:
        """Parts that arrived (each replaces the group's last one, written or not). Called from one
        thread at a time (the sampling thread)."""
        ahead: dict[str, bytes] = {}
        with self._lock:
            digests, unwritten, writer = self._digests, self._unwritten, self._direct
            for key, raw in parts:
                if writer is not None and key in digests and key not in unwritten:
                    ahead[key] = raw
                else:
                    digests[key] = digest(raw)
                    unwritten[key] = raw
                    self._touched.add(key)
        if not ahead:
            return
        try:
            cast(Callable[[dict[str, bytes]], None], writer)(ahead)
        except StoreUnavailable:
            with self._lock:  # (held: a save writes them)
                for key, raw in ahead.items():
                    self._digests[key] = digest(raw)
                    self._unwritten[key] = raw
                self._touched.update(ahead)
            return
        with self._lock:  # (the new digests only once they are in Redis: a save meanwhile names them not yet)
            for key, raw in ahead.items():
                if key in self._digests:  # (not gone meanwhile)
                    self._digests[key] = digest(raw)
                    self._touched.add(key)
                self._early.add(key)

    def keep(self, keys: Iterable[str]) -> None:
        """Only these groups from now on (those not listed are gone; each listed one has a part)."""
        with self._lock:
            before = self._digests
            self._digests = {key: before[key] for key in keys if key in before}
            self._unwritten = {key: raw for key, raw in self._unwritten.items() if key in self._digests}
            if len(self._digests) != len(before):
                self._touched.update(before.keys() - self._digests.keys())

    def taken(self) -> tuple[dict[str, int], dict[str, bytes], set[str]]:
        """Every group's digest, the parts not written yet, and those written ahead since (as of one
        moment: copies, the sampling thread goes on putting parts in)."""
        with self._lock:
            return dict(self._digests), dict(self._unwritten), set(self._early)

    def changes_taken(self) -> tuple[dict[str, int], dict[str, bytes], set[str], set[str]]:
        """What `taken` gives, and the groups whose digest was put in or taken out since the last
        call (the watcher's next content changes only those of its groups' digests)."""
        with self._lock:
            touched, self._touched = self._touched, set()
            return dict(self._digests), dict(self._unwritten), set(self._early), touched

    def written(self, parts: Mapping[str, bytes], early: Collection[str] = ()) -> None:
        """A save stored these parts, and named those written ahead: each part is let go of, unless
        a newer one came meanwhile."""
        with self._lock:
            unwritten = self._unwritten
            for key, raw in parts.items():
                if unwritten.get(key) is raw:
                    del unwritten[key]
            self._early.difference_update(early)

    @staticmethod
    def complete(digests: Mapping[str, int], unwritten: Mapping[str, bytes]) -> bool:
        """Whether what `taken` gave holds every group's part (what a save writing everything needs)."""
        return len(unwritten) == len(digests)

    def held(self) -> dict[str, bytes]:
        """The parts held now (not written yet)."""
        with self._lock:
            return dict(self._unwritten)

    def __len__(self) -> int:
        return len(self._digests)


def put_parts(cluster: str, parts: Mapping[str, bytes]) -> None:
    """Parts written ahead of the snapshot that names them (GroupParts.direct)."""
    try:
        client().hset(_parts_key(cluster), mapping=cast(Any, parts))
    except redis.RedisError as exc:
        raise StoreUnavailable(describe(exc, settings.REDIS_URL)) from exc


def save(snapshot: Snapshot, content: bytes | ContentParts | None, stored: StoredContent | None = None,
         digests: dict[str, int] | None = None, ahead: Collection[str] = (),
         changes: PartChanges | None = None) -> StoredContent | None:
    """Store the stamp, and the content when it changed (`content` None: unchanged).

    The content is kept in parts: a header (everything but the topics and groups) and a hash of
    each topic's and each group's JSON ("t:<topic>", "g:<group>"). Given `stored` (what the last
    call stored: the parts' digests), only the parts whose JSON changed are written, with a record
    of which, so a reader holding the previous version fetches only those. `digests`: the content's
    parts' digests, when the caller has them (`digests_of`); with `stored`, a part named in them
    and not in the content is in Redis already (GroupParts.direct), and `ahead` names such parts
    written since `stored` (one of a group gone since is removed with the others). `changes`: how
    `digests` differ from an earlier content's, used when that is what `stored` holds.
    `content` as whole bytes (tests, tools) rewrites everything. Returns what is stored now."""
    if isinstance(content, bytes):
        content, stored, digests = snapshot.content_parts(), None, None
    now_stored = stored
    if content is None or stored is not None:
        # (a save that does not write everything relies on what the last one stored being there:
        # Redis restarted or flushed between two saves, none refused, would leave the snapshot
        # without its header, or with only the parts written since, for as long as the rest does
        # not change. The caller writes everything again, as after a refused save.)
        try:
            present = client().exists(_snapshot_key(snapshot.cluster))
        except redis.RedisError as exc:
            raise StoreUnavailable(describe(exc, settings.REDIS_URL)) from exc
        if not present:
            raise StoreLost("Redis no longer holds the stored snapshot (restarted or flushed); it is written again")

    def commands() -> Iterator[tuple[Any, ...]]:
        nonlocal now_stored
        if content is not None:
            header, parts = content
            cluster = snapshot.cluster
            now = digests if digests is not None else digests_of(parts)
            if stored is None:
                if len(parts) < len(now):
                    raise ValueError("a save that writes everything needs every part")
                changed, removed, base = parts, [], None
                names = list(changed)
                yield ("DEL", _parts_key(cluster))
                yield ("DEL", _changes_log_key(cluster))  # (no reader goes from an older version to this one part by part)
            else:
                before = stored.digests
                if changes is not None and changes.base is before and now is digests:
                    names, removed = changes.changed, list(changes.removed)
                else:
                    names = [name for name, d in now.items() if before.get(name) != d]
                    removed = [name for name in before if name not in now]
                changed = {name: parts[name] for name in names if name in parts}  # (the others: written ahead)
                removed += [name for name in ahead if name not in now and name not in before]
                base = stored.version
            writing = list(changed)
            for start in range(0, len(writing), 2000):
                yield ("HSET", _parts_key(cluster), *chain.from_iterable((n, changed[n]) for n in writing[start:start + 2000]))
            if removed:
                yield ("HDEL", _parts_key(cluster), *removed)
            yield ("SET", _snapshot_key(cluster), header)
            record = orjson.dumps(
                {"version": snapshot.version, "base": base, "changed": names if base is not None else None, "removed": removed})
            yield ("SET", _changes_record_key(cluster), record)
            if base is not None:
                yield ("LPUSH", _changes_log_key(cluster), record)
                yield ("LTRIM", _changes_log_key(cluster), 0, CHANGES_KEPT - 1)
            now_stored = StoredContent(snapshot.version, now)
        yield ("SET", _stamp_key(snapshot.cluster), snapshot.stamp_bytes())
        yield ("SET", HEARTBEAT_KEY, str(time.time()))

    try:
        _transaction(commands)  # MULTI/EXEC: a reader sees the parts of one version together
        return now_stored
    except redis.RedisError as exc:
        raise StoreUnavailable(describe(exc, settings.REDIS_URL)) from exc


def _transaction(commands: Callable[[], Iterable[tuple[Any, ...]]]) -> list[Any]:
    """MULTI, the commands, EXEC, on one connection: what a transaction pipeline does, but each
    command is packed and sent on its own. A pipeline packs them all into one buffer first: at
    300,000 partitions and 50,000 groups a save of 30,000 changed groups held a copy of 100 MB.
    A connection found broken (Redis restarted since it was last used) is replaced once, as the
    pipeline's retry did: a transaction cut off before EXEC is dropped by Redis, and one cut off
    after it wrote the same values again."""
    try:
        return _transaction_once(commands())
    except (redis.ConnectionError, redis.TimeoutError):
        return _transaction_once(commands())


def _transaction_once(commands: Iterable[tuple[Any, ...]]) -> list[Any]:
    pool = client().connection_pool
    conn = pool.get_connection()
    try:
        conn.send_command("MULTI")
        sent = 0
        for args in commands:
            conn.send_packed_command(conn.pack_command(*args), check_health=False)
            sent += 1
        conn.send_command("EXEC", check_health=False)
        for _ in range(sent + 1):
            conn.read_response()  # OK, then QUEUED for each (an error reply raises)
        result = conn.read_response()
        failed = next((r for r in result if isinstance(r, Exception)), None) if isinstance(result, list) else None
        if failed is not None:
            raise failed
        return cast(list[Any], result)
    except BaseException:
        conn.disconnect()  # (nothing half-read is left on a connection given back)
        raise
    finally:
        pool.release(conn)


class StoredContent:
    """What one save stored: the content's version and each part's digest ("t:<topic>", "g:<group>"; `digest`)."""

    def __init__(self, version: int, digests: dict[str, int]) -> None:
        self.version, self.digests = version, digests


# A process's parsed copy of each cluster's snapshot, and the JSON its topics and groups were parsed from.
_raw_parts: dict[str, dict[str, bytes]] = {}


def load(cluster: str) -> Snapshot | None:
    """The latest snapshot of a cluster: its content is parsed once per version and kept in
    memory; the small stamp (timestamps, quorum) is read every time. Holding the version before,
    only the topics and groups that version changed are fetched, the topics parsed (the groups when
    first asked for: GroupsRead); the others are the same objects. A snapshot stored by an older
    version (not in parts) reads as none.

    Raises StoreUnavailable when Redis is down; `cached()` then still has the last one seen.
    """
    try:
        stamp = client().get(_stamp_key(cluster))
        if stamp is None:
            return None
        version = orjson.loads(stamp)["version"]
        with _cache_lock:
            cached = _cache.get(cluster)
            raw_before = _raw_parts.get(cluster)
        if cached is not None and cached.version == version:
            cached.apply_stamp(stamp)
            return cached
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
        raise StoreUnavailable(describe(exc, settings.REDIS_URL)) from exc
    except (ValueError, zlib.error, lz4.block.LZ4BlockError) as exc:  # (orjson's decode error is a ValueError)
        log.warning("the stored snapshot of %s cannot be read", cluster, exc_info=True)
        raise StoreUnreadable(f"The stored snapshot of cluster '{cluster}' cannot be read ({exc}); "
                              "the watcher rewrites it.") from exc
    return None if read is None else snapshot


# A reading process (web, Celery) holds the parsed snapshot: millions of objects at 300,000
# partitions. The cyclic collector walked them all whenever a version's new objects tipped it into a
# full collection: a web process's read of a version then took 1 to 4 s instead of 0.6 (and missed
# the next versions). What a read leaves is frozen (out of the collector's sight; still freed when
# the version is replaced, as none of it is cyclic), as the watcher's process does after each cycle
# (runner.settle_gc); a full collection, frozen objects included, every READER_COLLECTION_INTERVAL
# frees what cyclic garbage was frozen with them. The read's new objects are frozen while the collector
# is still paused: re-enabled first, it walked them once more (0.1 to 0.2 s a version at 300,000).
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
        with client().pipeline() as pipe:
            try:
                pipe.watch(_snapshot_key(cluster))
                # Watched: the pipeline runs these at once (typed as the pipeline itself).
                stamp = cast(bytes | None, pipe.get(_stamp_key(cluster)))
                header = cast(bytes | None, pipe.get(_snapshot_key(cluster)))
                record = cast(bytes | None, pipe.get(_changes_record_key(cluster)))
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
                        log_records = cast(list[bytes], pipe.lrange(_changes_log_key(cluster), 0, -1))
                        plan = catch_up([orjson.loads(r) for r in log_records], cached.version, stamp_version)
                pipe.multi()
                if plan is not None:
                    names = plan[0]
                    pipe.hmget(_parts_key(cluster), names) if names else pipe.exists(_parts_key(cluster))
                else:
                    pipe.hgetall(_parts_key(cluster))
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
        topics[name] = topics_before[name] if same and name in topics_before else Snapshot.topic_from_json(b)
    elif key.startswith(GROUP_PART):
        gid = key[len(GROUP_PART):]
        groups[gid] = groups_before[gid] if same and gid in groups_before else HeldGroup(b)


def cached(cluster: str) -> Snapshot | None:
    with _cache_lock:
        return _cache.get(cluster)


def save_stats(cluster: str, stats: dict[str, object]) -> None:
    try:
        client().set(f"console:watcher:stats:{cluster}", json.dumps(stats), ex=60)
    except redis.RedisError:
        failure_seen()
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
            # (kept_json: orjson's 40-byte point would hold 4 KB until the pipeline is sent)
            pipe.rpush(key, *[kept_json(p, 0) for p in (point if isinstance(point, list) else [point])])
            if trim is None or group in trim:
                pipe.ltrim(key, -keep, -1)
                pipe.expire(key, 7200)
        pipe.execute()
        return True
    except redis.RedisError:
        failure_seen()
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
        failure_seen()
        log.debug("cannot note a change", exc_info=True)


def pending_changes(cluster: str, max_age: float) -> dict[str, tuple[float, Any]]:
    """Changes noted in the last `max_age` seconds: {what: (when, expected value)}."""
    try:
        raw = client().hgetall(_changes_key(cluster))
    except redis.RedisError:
        failure_seen()
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
        failure_seen()
        time.sleep(min(timeout, 1.0))
        return False
