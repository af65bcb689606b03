"""Use cases of the cluster overview and the events timeline; they read the snapshot, not Kafka."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from brokers_app.models import Event
from console import gateway
from console.access import event_visible
from console.errors import NoSnapshot
from console.watcher import store
from console.watcher.snapshot import Snapshot, TopicTally, tallied


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


def live(cluster: str, fresh: bool = True) -> Live:
    """The snapshot of a configured cluster (UnknownCluster otherwise); Redis down serves the last copy.

    `fresh`: when a change made through the console moments ago is not in the snapshot yet, wait
    (at most READ_YOUR_WRITES_WAIT seconds after the change) for the watcher to show it, so the
    next request after a change sees the change. Live pushes pass False: they follow the watcher."""
    gateway.cluster_config(cluster)
    try:
        snap = store.load(cluster)
        if fresh and snap is not None:
            snap = _until_changes_show(cluster, snap)
        return Live(cluster, snap)
    except store.StoreUnreadable as exc:
        return Live(cluster, store.cached(cluster), store_error=str(exc))
    except store.StoreUnavailable:  # the cause is in the watcher's log; pages say only what is down
        return Live(cluster, store.cached(cluster), store_error="Redis is unreachable; live updates are paused.")


def change_shown(snap: Snapshot, what: str, when: float, expected: Any) -> bool:
    """Does the snapshot show a change noted by store.note_change?"""
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


def _until_changes_show(cluster: str, snap: Snapshot) -> Snapshot:
    from django.conf import settings

    wait: float = settings.READ_YOUR_WRITES_WAIT
    if wait <= 0:
        return snap
    pending = store.pending_changes(cluster, wait)
    while snap.reachable:
        unmet = [when for what, (when, expected) in pending.items() if not change_shown(snap, what, when, expected)]
        left = max(unmet, default=0.0) + wait - time.time()
        if not unmet or left <= 0:
            break
        time.sleep(min(0.05, left))
        snap = store.load(cluster) or snap
    return snap


def require_snapshot(current: Live) -> Snapshot:
    """The snapshot, or the console's one "no snapshot yet" answer (503) for pages and API alike."""
    if current.snapshot is None:
        raise NoSnapshot(current.cluster)
    return current.snapshot


def overview(snap: Snapshot, visible: Callable[[str], bool] | None = None) -> dict[str, Any]:
    """The cluster's counts and broker rows; `visible`: the topics the user may see, which alone are
    counted (a scoped user's overview counts their partitions, not the cluster's)."""
    made, total = tallied(snap)
    if visible is not None:
        total = TopicTally.total(tally for name, (_, tally) in made.items() if visible(name))
    counts = snap.counts(total)
    if visible is not None:
        counts["topics"] = sum(1 for name in made if visible(name))
    quorum = snap.quorum
    return {
        "cluster_id": snap.cluster_id,
        "controller_id": snap.controller_id,
        "counts": counts,
        "brokers": snap.broker_rows(total),
        "quorum": None
        if quorum is None
        else {
            "leader_id": quorum.leader_id,
            "leader_epoch": quorum.leader_epoch,
            "high_watermark": quorum.high_watermark,
            "voters": [vars(m) for m in quorum.voters],
            "observers": [vars(m) for m in quorum.observers],
        },
        "quorum_error": snap.quorum_error,
    }


def events(cluster: str, *, kind: str | None = None, topic: str | None = None, broker: int | None = None,
           before: int | None = None, limit: int = 100, topics: Callable[[str], bool] | None = None,
           groups: Callable[[str], bool] | None = None) -> list[Event]:
    """The newest events (before an id), filtered; `topics` and `groups`: the names the user may see."""
    if topics is not None or groups is not None:
        found: list[Event] = []
        for _ in range(50):  # batches until a page of visible events (or 50 batches: a hidden flood ends the page)
            batch = events(cluster, kind=kind, topic=topic, broker=broker, before=before, limit=max(limit, 200))
            found += [e for e in batch if event_visible({"topic": e.topic, "details": e.details}, topics, groups)]
            if len(found) >= limit or len(batch) < max(limit, 200):
                break
            before = batch[-1].id
        return found[:limit]
    qs: QuerySet[Event] = Event.objects.filter(cluster=cluster)
    if kind:
        qs = qs.filter(kind=kind)
    if topic:
        qs = qs.filter(topic=topic)
    if broker is not None:
        qs = qs.filter(broker=broker)
    if before is not None:
        qs = qs.filter(id__lt=before)
    return list(qs.order_by("-id")[:limit])


def event_matches(event: dict[str, Any], kind: str | None, topic: str | None, broker: int | None) -> bool:
    return (not kind or event["kind"] == kind) and (not topic or event["topic"] == topic) and (
        broker is None or event["broker"] == broker
    )
