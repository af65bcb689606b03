"""The one way apps read cluster state: a cluster's latest snapshot, how fresh it is, whether Kafka
answered, and waits for changes the console itself made (read-your-writes).

- `live(cluster)`: the snapshot and the page's status, once it shows the console's own changes;
- `latest(cluster)`: that snapshot, or NoSnapshot (the one "no snapshot yet" answer);
- `watched(cluster)`: as `live`, without waiting (live pushes and beat tasks follow the watcher);
- `reachable(live or watched)`: the snapshot when Kafka answered the watcher, else None;
- `note_change(cluster, expect)`: after a change, so the next reads wait until it shows;
- `noted(cluster, what)`: what such a change expects, while reads still wait for it.
Redis down serves the process's last copy, with `Live.store_error` saying so."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from console import gateway
from console.errors import NoSnapshot
from console.snapshots import loader, store
from console.snapshots.changes import PARTITIONS_NOTED, changes_key, note_change, pending_changes, pending_from
from console.snapshots.model import Snapshot

__all__ = ["PARTITIONS_NOTED", "Live", "change_shown", "latest", "live", "note_change", "noted", "reachable",
           "require_snapshot", "watched"]


@dataclass
class Live:
    """A cluster's latest snapshot and what the page should warn about."""

    cluster: str
    snapshot: Snapshot | None
    store_error: str | None = None

    @property
    def age(self) -> float | None:
        if self.snapshot is None or self.snapshot.taken_at is None:
            return None
        return max(0.0, time.time() - self.snapshot.taken_at)

    @property
    def status(self) -> dict[str, Any]:
        snap = self.snapshot
        return {
            "cluster": self.cluster,
            "reachable": bool(snap and snap.reachable),
            "error": snap.error if snap else None,
            "cause": snap.cause if snap else None,  # kind of connection failure (console.gateway.causes)
            "taken_at": snap.taken_at if snap else None,
            "checked_at": snap.checked_at if snap else None,
            "age_seconds": None if self.age is None else round(self.age, 1),
            "store_error": self.store_error,
            "version": snap.version if snap else None,
        }


def live(cluster: str) -> Live:
    """The snapshot of a configured cluster (UnknownCluster otherwise), once it shows the changes
    made through the console moments ago: waits (at most READ_YOUR_WRITES_WAIT seconds after the
    change) for the watcher to show them, so the next request after a change sees the change."""
    return _read(cluster, wait=True)


def watched(cluster: str) -> Live:
    """As `live`, without waiting for the console's own changes: for live pushes and beat tasks,
    which follow the watcher and must not stall on a change it has not shown yet."""
    return _read(cluster, wait=False)


def latest(cluster: str) -> Snapshot:
    """`live`'s snapshot, or NoSnapshot (503) when the watcher has stored none yet."""
    return require_snapshot(live(cluster))


def reachable(current: Live) -> Snapshot | None:
    """The snapshot when Kafka answered the watcher's last look, else None (a change is refused
    then, and a beat task skips the cluster)."""
    snap = current.snapshot
    return snap if snap is not None and snap.reachable else None


def _read(cluster: str, wait: bool) -> Live:
    gateway.cluster_config(cluster)
    try:
        if not wait or settings.READ_YOUR_WRITES_WAIT <= 0:
            return Live(cluster, loader.load(cluster))
        snap, changes = loader.load_with(cluster, changes_key(cluster))  # (one round trip for both)
        if snap is not None:
            snap = _until_changes_show(cluster, snap, pending_from(changes, settings.READ_YOUR_WRITES_WAIT))
        return Live(cluster, snap)
    except store.StoreUnreadable as exc:
        return Live(cluster, loader.cached(cluster), store_error=str(exc))
    except store.StoreUnavailable:  # the cause is in the watcher's log; pages say only what is down
        return Live(cluster, loader.cached(cluster), store_error="Redis is unreachable; live updates are paused.")


def change_shown(snap: Snapshot, what: str, when: float, expected: Any) -> bool:
    """Does the snapshot show a change noted by `note_change`?"""
    kind, _, name = what.partition(":")
    if kind == "topic":
        t = snap.topics.get(name)
        return t is None if expected == 0 else (t is not None and len(t.partitions) >= int(expected))
    if kind == "group":
        if expected == 0:
            return name not in snap.groups
        return (snap.groups_at or 0.0) >= when
    if kind == "offsets":
        return (snap.offsets_at or 0.0) >= when
    if kind in ("leader", "replicas"):  # "<kind>:<topic>:<partition>"
        topic, _, number = name.rpartition(":")
        shown = snap.partition(topic, int(number))
        if shown is None:
            return True  # (gone meanwhile: nothing to wait for)
        if kind == "replicas":  # its replica set (sorted) after a reassignment
            return sorted(shown.replicas) == list(expected)
        return not shown.offline if expected == -1 else shown.leader == expected  # its elected leader (-1: any live one)
    return True


def noted(cluster: str, what: str) -> Any | None:
    """The value a change noted for `what` ("topic:<name>", ...) expects, while reads still wait for
    it (READ_YOUR_WRITES_WAIT); None when the console made no such change lately."""
    entry = pending_changes(cluster, settings.READ_YOUR_WRITES_WAIT).get(what)
    return None if entry is None else entry[1]


def _until_changes_show(cluster: str, snap: Snapshot, pending: dict[str, tuple[float, Any]]) -> Snapshot:
    wait: float = settings.READ_YOUR_WRITES_WAIT
    while snap.reachable:
        unmet = [when for what, (when, expected) in pending.items() if not change_shown(snap, what, when, expected)]
        left = max(unmet, default=0.0) + wait - time.time()
        if not unmet or left <= 0:
            break
        time.sleep(min(0.05, left))
        snap = loader.load(cluster) or snap
    return snap


def require_snapshot(current: Live) -> Snapshot:
    """The snapshot, or the console's one "no snapshot yet" answer (503) for pages and API alike."""
    if current.snapshot is None:
        raise NoSnapshot(current.cluster)
    return current.snapshot
