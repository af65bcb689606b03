"""The pure part of a reassignment job: its moves, which to start next under the per-broker limit,
the throttle configs they need, and the progress arithmetic. No Kafka, no database."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from console.gateway.types import TopicPartition

BROKER_RATE_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
TOPIC_REPLICA_KEYS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
THROTTLE_KEYS = frozenset(BROKER_RATE_KEYS + TOPIC_REPLICA_KEYS)

PENDING, MOVING, DONE, REVERTING, REVERTED, SKIPPED = "pending", "moving", "done", "reverting", "reverted", "skipped"


@dataclass(frozen=True)
class Move:
    topic: str
    partition: int
    before: tuple[int, ...]
    after: tuple[int, ...]
    size: int

    @property
    def key(self) -> TopicPartition:
        return (self.topic, self.partition)

    @property
    def added(self) -> tuple[int, ...]:
        return tuple(b for b in self.after if b not in self.before)

    @property
    def removed(self) -> tuple[int, ...]:
        return tuple(b for b in self.before if b not in self.after)

    @property
    def brokers(self) -> set[int]:
        """The brokers a movement loads: those receiving a copy and those giving one up."""
        return set(self.added) | set(self.removed)

    @property
    def bytes(self) -> int:
        return self.size * len(self.added)


def moves_of(plan: dict[str, Any]) -> list[Move]:
    return [Move(p["topic"], p["partition"], tuple(p["before"]), tuple(p["after"]), int(p.get("size") or 0))
            for p in plan.get("partitions", [])]


def next_batch(moves: Sequence[Move], states: Sequence[str], max_per_broker: int,
               startable: str = PENDING, busy: Iterable[str] = (MOVING, REVERTING)) -> list[int]:
    """Indexes of the moves to start now: in plan order, each only while every broker it loads
    has fewer than `max_per_broker` movements in flight (counting the ones started here)."""
    busy = set(busy)
    load: Counter[int] = Counter()
    for m, s in zip(moves, states, strict=True):
        if s in busy:
            load.update(m.brokers)
    chosen = []
    for i, (m, s) in enumerate(zip(moves, states, strict=True)):
        if s != startable:
            continue
        if all(load[b] < max_per_broker for b in m.brokers):
            chosen.append(i)
            load.update(m.brokers)
    return chosen


def throttle_configs(moves: Iterable[Move], rate: int) -> tuple[dict[int, dict[str, str]], dict[str, dict[str, str]]]:
    """The broker rates and topic replica lists for these moves, as Kafka's own tool sets them, but
    listing old and new replicas on both sides so a cancel (copying back) is throttled too.
    Replicas in the ISR are never throttled by Kafka, so listing them costs live traffic nothing."""
    brokers: set[int] = set()
    per_topic: dict[str, set[str]] = {}
    for m in moves:
        if m.before == m.after:
            continue
        involved = dict.fromkeys([*m.before, *m.after])
        brokers |= set(involved)
        per_topic.setdefault(m.topic, set()).update(f"{m.partition}:{b}" for b in involved)
    broker_cfg = {b: {k: str(rate) for k in BROKER_RATE_KEYS} for b in sorted(brokers)}
    topic_cfg = {t: {k: ",".join(sorted(v, key=lambda s: tuple(int(x) for x in s.split(":")))) for k in TOPIC_REPLICA_KEYS}
                 for t, v in sorted(per_topic.items())}
    return broker_cfg, topic_cfg


def rate_and_eta(samples: Sequence[tuple[float, int]], remaining: int) -> tuple[float | None, float | None]:
    """Copy rate (bytes/s) over the samples' window, and the seconds left at that rate."""
    if len(samples) < 2:
        return None, None
    (t0, b0), (t1, b1) = samples[0], samples[-1]
    if t1 <= t0:
        return None, None
    rate = max(0.0, (b1 - b0) / (t1 - t0))
    if remaining <= 0:
        return rate, 0.0
    return rate, (remaining / rate if rate > 0 else None)


def baseline_key(topic: str, partition: int) -> str:
    return f"{topic}\t{partition}"


def sized(m: Move, baseline: dict[str, Any]) -> Move:
    """The move with the size its log had when the job started (when known), not the plan's."""
    row = baseline.get(baseline_key(m.topic, m.partition)) or []
    size = row[2] if len(row) > 2 and row[2] is not None else None
    return m if size is None else Move(m.topic, m.partition, m.before, m.after, int(size))


def refusal(answer: dict[TopicPartition, str | None]) -> str | None:
    """The first partition Kafka refused to reassign and why ("orders-3: ..."), or None."""
    refused = sorted((k, v) for k, v in answer.items() if v)
    if not refused:
        return None
    (t, p), why = refused[0]
    return f"{t}-{p} ({why})"
