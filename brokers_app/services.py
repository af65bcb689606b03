"""Use cases of the cluster overview and the events timeline; they read the snapshot, not Kafka."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import QuerySet

from brokers_app.models import Event
from console.access import event_visible
from console.snapshots.model import Snapshot, TopicTally, tallied


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
