"""The followers whose lag keeps growing, across metadata cycles (LagWatch), and the
`isr_about_to_shrink` event when one of them is still in the ISR past a share of
replica.lag.time.max.ms: Kafka drops a follower from the ISR when it has not caught up for that long.

A cycle looks only at the topics whose state object changed since its last look (the watcher
carries unchanged topics over as the same objects) and, within a topic carried over, only at the
partitions that changed; the rest is the streaks it already holds, a handful on a healthy cluster.
"""

from __future__ import annotations

import heapq
import logging
from collections import deque
from dataclasses import replace

import redis
from django.conf import settings

from console.snapshots.encoding import broker_key
from console.snapshots.model import PartitionState, Snapshot, TopicState
from console.snapshots.replica_lag import Streak, replica_lags, save_streaks
from console.watcher.diff import WARNING, Change

log = logging.getLogger(__name__)

KEPT = 1000  # streaks stored for the pages at most (the largest lags): a cluster in trouble stays one small key


class LagWatch:
    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self._limit = 0.0  # seconds a streak lasts before it is judged (set each look from the settings)
        # (topic, partition) -> broker -> its streak: a partition's found without a walk of them all
        self._parts: dict[tuple[str, int], dict[int, Streak]] = {}
        # the streaks in the order they began (since, key, broker): those whose time has come are
        # taken from the front, not found by a walk of every streak each cycle
        self._due: deque[tuple[float, tuple[str, int], int]] = deque()
        self._down: set[int] = set()
        self._seen: dict[str, TopicState] = {}
        self._dirty = True
        self._changes: list[Change] = []

    @property
    def streaks(self) -> dict[tuple[str, int, int], Streak]:
        return {(t, p, b): s for (t, p), by in self._parts.items() for b, s in by.items()}

    def look(self, snap: Snapshot, now: float) -> list[Change]:
        if not snap.reachable or snap.taken_at is None:
            return []
        self._limit = settings.REPLICA_LAG_SHRINK_SHARE * settings.REPLICA_LAG_TIME_MAX_MS / 1000
        down = {b for b, s in snap.brokers.items() if not s.up or not s.reachable}
        if down != self._down:
            self._down = down
            for by in self._parts.values():  # (rare: a broker went down or came back)
                for broker, s in by.items():
                    if (broker in down) != s.down:
                        by[broker] = replace(s, down=broker in down)
                        self._dirty = True
        seen, self._seen = self._seen, dict(snap.topics)
        parts = self._parts
        if parts and seen.keys() != snap.topics.keys():
            for k in [k for k in parts if k[0] not in snap.topics]:  # (deleted topics)
                del parts[k]
                self._dirty = True
        for name, t in snap.topics.items():
            before = seen.get(name)
            if before is t:
                continue
            old_parts = before.partitions if before is not None else []
            for i, p in enumerate(t.partitions):
                if i < len(old_parts) and old_parts[i] is p:
                    continue  # (a partition carried over: its sizes did not change)
                self._partition(name, p, now)
        due = self._due
        while due and due[0][0] + self._limit <= now:  # (streaks whose time came with nothing changed)
            since, key, broker = due.popleft()
            found = parts.get(key, {}).get(broker)
            if found is not None and found.since == since:
                self._judge(key, broker, found, now)
        self._save()
        changes, self._changes = self._changes, []
        return changes

    def _partition(self, topic: str, p: PartitionState, now: float) -> None:
        lags = replica_lags(p)
        key = (topic, p.partition)
        was = self._parts.get(key, {})
        kept: dict[int, Streak] = {}
        for broker, lag in lags.items():
            if broker == p.leader or not lag:
                continue
            s = was.get(broker)
            own = p.replica_sizes.get(broker_key(broker), 0)
            in_isr = broker in p.isr
            if s is not None and (lag > s.lag or (lag == s.lag and own == s.size)):
                # Still behind and further (or its log has not moved): the streak goes on.
                if (lag, own, in_isr) != (s.lag, s.size, s.in_isr):
                    s = replace(s, lag=lag, size=own, in_isr=in_isr, grew=s.grew or lag > s.lag)
                kept[broker] = s
                if now - s.since >= self._limit:
                    self._judge(key, broker, s, now, kept)
                    continue
            else:
                kept[broker] = Streak(topic, p.partition, broker, now, lag, own, in_isr, broker in self._down)
                self._due.append((now, key, broker))
        if kept != was:
            self._dirty = True
        if kept:
            self._parts[key] = kept
        elif was:
            del self._parts[key]

    def _judge(self, key: tuple[str, int], broker: int, s: Streak, now: float, into: dict[int, Streak] | None = None) -> None:
        """A streak past the share of replica.lag.time.max.ms: flagged while in the ISR (an event the first time)."""
        about = s.in_isr and s.grew
        if about and not s.about_to_shrink:
            self._changes.append(Change(
                "isr_about_to_shrink", WARNING,
                f"Replica of {s.topic}-{s.partition} on broker {s.broker} is {s.lag} bytes behind its leader and "
                f"has fallen further for {now - s.since:.0f} s: the ISR may drop it "
                f"(replica.lag.time.max.ms {settings.REPLICA_LAG_TIME_MAX_MS})",
                topic=s.topic, partition=s.partition, broker=s.broker,
                details={"bytes_behind": s.lag, "since": s.since}))
        if about != s.about_to_shrink:
            s = replace(s, about_to_shrink=about)
            self._dirty = True
        (into if into is not None else self._parts[key])[broker] = s

    def _save(self) -> None:
        if not self._dirty:
            return
        every = [s for by in self._parts.values() for s in by.values()]
        kept = heapq.nlargest(KEPT, every, key=lambda s: s.lag) if len(every) > KEPT else every
        try:
            save_streaks(self.cluster, kept)
            self._dirty = False
        except redis.RedisError:
            log.debug("cannot save the replica lag streaks of %s", self.cluster, exc_info=True)
