"""Per-replica lag: how many bytes each follower's log is behind its leader's, from the replica
sizes the watcher reads (DescribeLogDirs), and the followers whose lag keeps growing (the watcher's
`console/watcher/replica_lag.py` tracks them and keeps them in Redis; the pages read them here).

Kafka's admin API gives no follower's log end offset (DescribeQuorum does, for the metadata log
only; DescribeLogDirs' offset lag is a current log's max(HW - LEO, 0), always 0 on a follower, and
means something only for a future replica), so a follower's lag is its leader's log size minus its
own, in bytes: followers copy the leader's batches as they are, so an in-sync replica's log is the
leader's size (retention and compaction run on each replica apart, so a few segments may differ).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import redis

from console.snapshots.encoding import broker_key
from console.snapshots.model import PartitionState, Snapshot
from console.snapshots.store import client

log = logging.getLogger(__name__)

# What the pages say about how lag is measured (the lag column's and the grid's tooltip).
HOW_MEASURED = ("Bytes behind the leader: the leader's log size minus this replica's, from the brokers' log dirs "
                "(Kafka's admin API gives no follower's log end offset). A broker that does not answer keeps its "
                "last answered size, so its lag grows while the leader's log does.")


def replica_lags(p: PartitionState) -> dict[int, int | None]:
    """Each replica's bytes behind its leader (the leader's own: 0); None when a size is not known
    (the partition is offline, or the sizes were not read yet)."""
    sizes = p.replica_sizes
    leader = sizes.get(broker_key(p.leader)) if p.leader >= 0 else None
    out: dict[int, int | None] = {}
    for r in p.replicas:
        if r == p.leader:
            out[r] = 0 if leader is not None else None
            continue
        own = sizes.get(broker_key(r))
        out[r] = None if leader is None or own is None else max(leader - own, 0)
    return out


def lag_level(lag: int | None, leader_size: int | None) -> str:
    """The layout grid's colour of a follower's lag: none, some (under 1 MiB and 1% of the log) or
    far (beyond either), unknown without sizes."""
    if lag is None:
        return "unknown"
    if lag == 0:
        return "none"
    if lag < 1024 * 1024 and (leader_size is None or lag * 100 < max(leader_size, 1)):
        return "some"
    return "far"


@dataclass(frozen=True)
class Streak:
    """A follower whose lag has grown (or stood above 0 while its own log did not move) since
    `since` (epoch seconds): `about_to_shrink` once that lasts past the share of
    replica.lag.time.max.ms (REPLICA_LAG_SHRINK_SHARE), while it is still in the ISR."""

    topic: str
    partition: int
    broker: int
    since: float
    lag: int
    size: int  # the follower's size as last read (its log did not move: the broker may not answer)
    in_isr: bool
    down: bool  # its broker is fenced or refuses the console's connections
    grew: bool = False  # its lag went up at least once (a constant gap is retention's, not a stall)
    about_to_shrink: bool = False


def key(cluster: str) -> str:
    return f"console:replica_lag:{cluster}"


def save_streaks(cluster: str, streaks: Iterable[Streak]) -> None:
    client().set(key(cluster), json.dumps([asdict(s) for s in streaks]), ex=3600)


_log_dirs_saved: dict[str, Any] = {}


def save_log_dirs(cluster: str, silent: Mapping[int, float], futures: Mapping[tuple[str, int], Mapping[int, int]]) -> None:
    """What the watcher's last read of the log dirs found beside the sizes: the brokers that did not
    answer it (-> their last answer) and the future replicas of intra-broker moves (-> offsets
    behind the current log). Written only when that changes; a Redis error only logged: the sampling goes on."""
    state = {"silent": {str(b): t for b, t in silent.items()},
             "futures": sorted([t, p, b, lag] for (t, p), by in futures.items() for b, lag in by.items())}
    if _log_dirs_saved.get(cluster) == state:
        return
    try:
        client().set(f"console:log_dirs:{cluster}", json.dumps(state), ex=3600)
        _log_dirs_saved[cluster] = state
    except redis.RedisError:
        log.debug("cannot save the log dirs state of %s", cluster, exc_info=True)


def _read(key: str) -> Any:
    """A kept JSON value; None when Redis does not answer (the lag is still read from the snapshot)."""
    try:
        raw = client().get(key)
    except redis.RedisError:
        log.debug("cannot read %s", key, exc_info=True)
        return None
    return json.loads(raw) if raw else None


def _log_dirs(cluster: str) -> dict[str, Any]:
    return _read(f"console:log_dirs:{cluster}") or {}


def silent_brokers(cluster: str) -> dict[int, float]:
    """The brokers that did not answer the watcher's last read of the log dirs -> their last answer."""
    return {int(b): float(t) for b, t in _log_dirs(cluster).get("silent", {}).items()}


def future_lags(cluster: str) -> dict[tuple[str, int], dict[int, int]]:
    """(topic, partition) -> {broker: offsets its future replica (an intra-broker move's copy) is behind}."""
    out: dict[tuple[str, int], dict[int, int]] = {}
    for t, p, b, lag in _log_dirs(cluster).get("futures", []):
        out.setdefault((t, p), {})[b] = lag
    return out


def streaks(cluster: str) -> dict[tuple[str, int, int], Streak]:
    """The followers whose lag grows, as the watcher last kept them (topic, partition, broker)."""
    rows = _read(key(cluster)) or []
    return {(s.topic, s.partition, s.broker): s for s in (Streak(**row) for row in rows)}


def partition_lags(p: PartitionState, kept: Mapping[tuple[str, int, int], Streak], silent: Mapping[int, float],
                   topic: str, futures: Mapping[tuple[str, int], Mapping[int, int]] | None = None) -> list[dict[str, Any]]:
    """Each replica of `p` with its lag as the pages and API show it (`kept`: `streaks`; `silent`:
    `silent_brokers`; `futures`: `future_lags`)."""
    moving = futures.get((topic, p.partition), {}) if futures else {}
    leader_size = p.replica_sizes.get(broker_key(p.leader)) if p.leader >= 0 else None
    rows = []
    for broker, lag in replica_lags(p).items():
        streak = kept.get((topic, p.partition, broker))
        rows.append({
            "broker": broker,
            "leader": broker == p.leader,
            "in_isr": broker in p.isr,
            "bytes_behind": lag,
            "level": "leader" if broker == p.leader else lag_level(lag, leader_size),
            "growing_since": streak.since if streak is not None else None,
            "not_answering_since": silent.get(broker) if broker in silent else (
                streak.since if streak is not None and streak.down else None),
            "about_to_shrink": bool(streak is not None and streak.about_to_shrink and broker in p.isr),
            # (an intra-broker move's future replica: offsets behind this replica's current log)
            "future_offsets_behind": moving.get(broker),
        })
    return rows


def broker_lags(snap: Snapshot, broker: int, kept: Mapping[tuple[str, int, int], Streak], silent: Mapping[int, float],
                top: int, shown: Callable[[str], bool] | None = None) -> list[dict[str, Any]]:
    """The follower replicas on `broker` (of the topics `shown`), most bytes behind first, at most
    `top` of them; those whose lag is not known last."""
    rows = []
    for name, t in snap.topics.items():
        if shown is not None and not shown(name):
            continue
        for p in t.partitions:
            if broker not in p.replicas or broker == p.leader:
                continue
            row = next(r for r in partition_lags(p, kept, silent, name) if r["broker"] == broker)
            rows.append({**row, "topic": name, "partition": p.partition, "leader": p.leader})  # (the leader's id)
    rows.sort(key=lambda r: (r["bytes_behind"] is None, -(r["bytes_behind"] or 0), r["topic"], r["partition"]))
    return rows[:top]
