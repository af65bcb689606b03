"""The Redis store: writing each cluster's snapshot in parts (only what changed), and the watcher's
heartbeat, lease, stats and the groups' lag history. Reading a snapshot back is `loader`; notes of
changes made through the console are `changes`."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import chain
from typing import Any, cast

import orjson
import redis
from django.conf import settings

from console.lifecycle import failure_seen
from console.redis_errors import describe
from console.snapshots.encoding import kept_json
from console.snapshots.model import Snapshot
from console.snapshots.part_cache import content_parts
from console.snapshots.parts import ContentParts

LagPoint = tuple[float, int, float | None]  # (time, total lag, time lag)

log = logging.getLogger(__name__)

HEARTBEAT_KEY = "console:watcher:heartbeat"
CELERY_HEARTBEAT_KEY = "console:celery:heartbeat"


def snapshot_key(cluster: str) -> str:
    return f"console:snapshot:{cluster}"


def stamp_key(cluster: str) -> str:
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




def parts_key(cluster: str) -> str:
    return f"console:snapshot:{cluster}:parts"


def changes_record_key(cluster: str) -> str:
    return f"console:snapshot:{cluster}:changed"


def changes_log_key(cluster: str) -> str:
    return f"console:snapshot:{cluster}:changes"


# The change records of the last versions, newest first, since the last save that wrote everything:
# a reader that missed versions fetches the parts they changed, not every part. Without them a
# reader that missed one version read every part again, which took longer than the next version
# took to come, so it fell further behind and read everything every time.
CHANGES_KEPT = 30


# What tells a part's JSON from the one stored before, without holding that: Python's hash of the
# bytes (SipHash, 64 bits, keyed per process; cached in the bytes object, so a part that is the same
# object as last time costs a lookup). Holding the last JSON instead would keep every changed
# topic's and group's JSON twice while a cycle built the new. Two different JSONs of one part share
# a digest with a chance of 2**-64.
digest = hash


def digests_of(parts: Mapping[str, bytes]) -> dict[str, int]:
    """Each part's digest (`digest`)."""
    return {name: digest(raw) for name, raw in parts.items()}


@dataclass(frozen=True)
class PartChanges:
    """How a content's digests differ from `base` (an earlier content's digests, that dict itself):
    the parts whose digest differs or that are new (`changed`), and those gone (`removed`). A
    watcher knows them from what it serialised and what arrived since its last content; `save`
    uses them when `base` is what it stored last, instead of comparing every part's digest, which
    on a large cluster would cost much of a cycle that changed a few topics."""

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
    watcher's process their whole size at all times; that save finds the
    set `complete` or not, and when not the watcher asks the sampling process for every group
    again (RemoteSampler.ask_groups_again). Keyed as stored ("g:<id>").

    While the store holds the last snapshot whole (`direct`, set by the watcher), a part that
    arrives for a group whose last part is already in Redis is written there at once, ahead of the
    snapshot that names it (`early`: the next save lists it among the changed parts without writing
    it): held until a cycle wrote them, a pass's changed groups (most of them) would make the
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
        client().hset(parts_key(cluster), mapping=cast(Any, parts))
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
        content, stored, digests = content_parts(snapshot), None, None
    now_stored = stored
    if content is None or stored is not None:
        # (a save that does not write everything relies on what the last one stored being there:
        # Redis restarted or flushed between two saves, none refused, would leave the snapshot
        # without its header, or with only the parts written since, for as long as the rest does
        # not change. The caller writes everything again, as after a refused save.)
        try:
            present = client().exists(snapshot_key(snapshot.cluster))
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
                yield ("DEL", parts_key(cluster))
                yield ("DEL", changes_log_key(cluster))  # (no reader goes from an older version to this one part by part)
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
                yield ("HSET", parts_key(cluster), *chain.from_iterable((n, changed[n]) for n in writing[start:start + 2000]))
            if removed:
                yield ("HDEL", parts_key(cluster), *removed)
            yield ("SET", snapshot_key(cluster), header)
            record = orjson.dumps(
                {"version": snapshot.version, "base": base, "changed": names if base is not None else None, "removed": removed})
            yield ("SET", changes_record_key(cluster), record)
            if base is not None:
                yield ("LPUSH", changes_log_key(cluster), record)
                yield ("LTRIM", changes_log_key(cluster), 0, CHANGES_KEPT - 1)
            now_stored = StoredContent(snapshot.version, now)
        yield ("SET", stamp_key(snapshot.cluster), snapshot.stamp_bytes())
        yield ("SET", HEARTBEAT_KEY, str(time.time()))

    try:
        _transaction(commands)  # MULTI/EXEC: a reader sees the parts of one version together
        return now_stored
    except redis.RedisError as exc:
        raise StoreUnavailable(describe(exc, settings.REDIS_URL)) from exc


def _transaction(commands: Callable[[], Iterable[tuple[Any, ...]]]) -> list[Any]:
    """MULTI, the commands, EXEC, on one connection: what a transaction pipeline does, but each
    command is packed and sent on its own. A pipeline packs them all into one buffer first, which
    for a save of many changed groups holds a second copy of everything written.
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
