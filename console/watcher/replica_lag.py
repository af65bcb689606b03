"""The followers whose lag keeps growing, across metadata cycles (LagWatch), and the
`isr_about_to_shrink` event when one of them is still in the ISR past a share of
replica.lag.time.max.ms: Kafka drops a follower from the ISR when it has not caught up for that long.

A cycle looks only at the topics whose state object changed since its last look (the watcher
carries unchanged topics over as the same objects) and, within a topic carried over, only at the
partitions that changed; the rest is the streaks it already holds, a handful on a healthy cluster.
"""

from __future__ import annotations

import logging
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
        self.streaks: dict[tuple[str, int, int], Streak] = {}
        self._seen: dict[str, TopicState] = {}
        self._saved: object = None

    def look(self, snap: Snapshot, now: float) -> list[Change]:
        if not snap.reachable or snap.taken_at is None:
            return []
        seen, self._seen = self._seen, dict(snap.topics)
        streaks = self.streaks
        for name in {k[0] for k in streaks} - snap.topics.keys():  # (deleted topics)
            for k in [k for k in streaks if k[0] == name]:
                del streaks[k]
        for name, t in snap.topics.items():
            before = seen.get(name)
            if before is t:
                continue
            old_parts = before.partitions if before is not None else []
            for i, p in enumerate(t.partitions):
                if i < len(old_parts) and old_parts[i] is p:
                    continue  # (a partition carried over: its sizes did not change)
                self._partition(name, p, now)
        return self._verdicts(snap, now)

    def _partition(self, topic: str, p: PartitionState, now: float) -> None:
        streaks = self.streaks
        lags = replica_lags(p)
        for k in [k for k in streaks if k[0] == topic and k[1] == p.partition and k[2] not in lags] if streaks else ():
            del streaks[k]
        for broker, lag in lags.items():
            k = (topic, p.partition, broker)
            s = streaks.get(k)
            if broker == p.leader or not lag:
                if s is not None:
                    del streaks[k]
                continue
            own = p.replica_sizes.get(broker_key(broker), 0)
            in_isr = broker in p.isr
            if s is not None and (lag > s.lag or (lag == s.lag and own == s.size)):
                # Still behind and further (or its log has not moved): the streak goes on.
                streaks[k] = replace(s, lag=lag, size=own, in_isr=in_isr, grew=s.grew or lag > s.lag)
            else:
                streaks[k] = Streak(topic, p.partition, broker, now, lag, own, in_isr, False)

    def _verdicts(self, snap: Snapshot, now: float) -> list[Change]:
        """Flags the streaks past the share of replica.lag.time.max.ms (an event the first time)."""
        limit = settings.REPLICA_LAG_SHRINK_SHARE * settings.REPLICA_LAG_TIME_MAX_MS / 1000
        down = {b for b, s in snap.brokers.items() if not s.up or not s.reachable}
        changes = []
        for k, s in self.streaks.items():
            about = s.in_isr and s.grew and now - s.since >= limit
            if about and not s.about_to_shrink:
                changes.append(Change(
                    "isr_about_to_shrink", WARNING,
                    f"Replica of {s.topic}-{s.partition} on broker {s.broker} is {s.lag} bytes behind its leader and "
                    f"has fallen further for {now - s.since:.0f} s: the ISR may drop it "
                    f"(replica.lag.time.max.ms {settings.REPLICA_LAG_TIME_MAX_MS})",
                    topic=s.topic, partition=s.partition, broker=s.broker,
                    details={"bytes_behind": s.lag, "since": s.since}))
            if about != s.about_to_shrink or (s.broker in down) != s.down:
                self.streaks[k] = replace(s, about_to_shrink=about, down=s.broker in down)
        self._save()
        return changes

    def _save(self) -> None:
        kept = sorted(self.streaks.values(), key=lambda s: -s.lag)[:KEPT] if len(self.streaks) > KEPT else list(self.streaks.values())
        state = [(s.topic, s.partition, s.broker, s.since, s.about_to_shrink, s.down, s.in_isr, s.lag) for s in kept]
        if state == self._saved:
            return
        try:
            save_streaks(self.cluster, kept)
            self._saved = state
        except redis.RedisError:
            log.debug("cannot save the replica lag streaks of %s", self.cluster, exc_info=True)
