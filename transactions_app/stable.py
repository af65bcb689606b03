"""Last stable offsets for the pages: the partitions open transactions hold, from the watcher's last
listing of the transactions (watch.look keeps them in Redis), read by the topic and group pages.

The LSO differs from the high watermark only on a partition with an open transaction, so the
console reads it (ListOffsets read_committed) for those partitions alone and takes LSO = HW on every
other one: a cluster of 10,000 topics costs one small Redis read per page, not a ListOffsets per partition.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings

from console import snapshots
from console.gateway.types import TopicPartition

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Held:
    """A partition an open transaction holds: its LSO when last read, and the transactional id whose
    transaction begins there (None when the transactions on it began past the LSO)."""

    lso: int
    transactional_id: str | None
    hanging: bool


def key(cluster: str) -> str:
    return f"transactions:held:{cluster}"


def held_partitions(listed: Iterable[dict[str, Any]]) -> dict[TopicPartition, Held]:
    """From services.list_transactions' rows: each partition of an open transaction whose LSO was read."""
    found: dict[TopicPartition, Held] = {}
    for t in listed:
        for r in t["partitions"]:
            lso = r.get("lso")
            if lso is None:
                continue
            tp = (r["topic"], r["partition"])
            holds = r.get("txn_start_offset") == lso and r.get("high_watermark") is not None and lso < r["high_watermark"]
            was = found.get(tp)
            if was is None or (holds and was.transactional_id is None):
                found[tp] = Held(lso, t["transactional_id"] if holds else None, bool(holds and t["hanging"]))
    return found


def _write(cluster: str, found: dict[TopicPartition, Held]) -> None:
    rows = [[t, p, h.lso, h.transactional_id, h.hanging] for (t, p), h in found.items()]
    # (expiring when the watcher stops looking: LSO = HW then, as the snapshot's offsets go stale too)
    snapshots.redis_client().set(key(cluster), json.dumps(rows), ex=int(settings.TRANSACTION_POLL_INTERVAL * 3 + 30))


def save(cluster: str, listed: Iterable[dict[str, Any]]) -> None:
    """Keep what the watcher's look found."""
    _write(cluster, held_partitions(listed))


def held(cluster: str) -> dict[TopicPartition, Held]:
    """The partitions open transactions held at the watcher's last look (empty when it has not looked
    lately, or Redis does not answer: the pages still show the snapshot's offsets)."""
    try:
        raw = snapshots.redis_client().get(key(cluster))
    except redis.RedisError:
        log.debug("cannot read the held partitions of %s", cluster, exc_info=True)
        return {}
    return {(t, p): Held(lso, tid, hanging) for t, p, lso, tid, hanging in json.loads(raw)} if raw else {}


def forget(cluster: str, partitions: Iterable[TopicPartition]) -> None:
    """Drop partitions whose transaction was just aborted: their LSO is their HW until the next look says otherwise."""
    gone = set(partitions)
    _write(cluster, {tp: h for tp, h in held(cluster).items() if tp not in gone})


def stable_offset(held: Held | None, high_watermark: int | None) -> int | None:
    """A partition's LSO: the one read for a held partition (never above the HW the page shows, read
    later), else its high watermark."""
    if held is None or high_watermark is None:
        return high_watermark
    return min(held.lso, high_watermark)
