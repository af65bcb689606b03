"""The watcher's offset samples, appended to a topic of the console's own for the Spark jobs.

One record per sampling cycle per topic and per group (analytics/records.py builds them). The topic
is created on first use (retention ANALYTICS_RETENTION_HOURS, default 7 days). A cluster that refuses
it (ACLs, policy, no space) gets one event saying so and is asked again every few minutes; the live
console never waits on any of this.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from django.conf import settings

from analytics.records import by_partition, group_record, topic_record
from console.gateway.errors import GatewayError, InvalidRequest
from console.snapshots import GroupState

log = logging.getLogger(__name__)
RETRY_SECONDS = 300.0


def build_records(cluster: str, time_s: float, ends: Mapping[tuple[str, int], int],
                  sizes: Mapping[tuple[str, int], Mapping[Any, int]] | None,
                  groups: Mapping[str, GroupState] | None, skip: str = "") -> list[tuple[bytes, bytes]]:
    """One record per topic with end offsets this cycle, and one per (non-share) group when the groups
    were read this cycle; `sizes` is each replica's log size: the largest replica's is the partition's."""
    time_ms = int(time_s * 1000)
    per_topic: dict[str, dict[int, int]] = {}
    for (t, p), end in ends.items():
        if t != skip:
            per_topic.setdefault(t, {})[p] = end
    records = []
    for t, offsets in sorted(per_topic.items()):
        size_list = None
        if sizes:
            largest = getattr(sizes, "largest", None)  # (columns.SizeColumns: without making each mapping)
            known = {p: n for p in offsets if (n := largest((t, p))) is not None} if largest is not None else \
                {p: max(v.values()) for p in offsets if (v := sizes.get((t, p)))}
            if known:
                size_list = by_partition(known)
                size_list += [None] * (len(by_partition(offsets)) - len(size_list))
        records.append(topic_record(cluster, t, time_ms, by_partition(offsets), size_list))
    for gid, g in sorted((groups or {}).items()):
        if g.group_type == "share" or g.error:
            continue
        committed: dict[str, dict[int, int]] = {}
        for key, offset in g.offsets.items():
            name, _, number = key.rpartition(":")
            committed.setdefault(name, {})[int(number)] = offset
        records.append(group_record(cluster, gid, time_ms, {t: by_partition(v) for t, v in sorted(committed.items())},
                                    len(g.members)))
    return records


class SampleWriter:
    def __init__(self, cluster: str, gateway: Any) -> None:
        self.cluster, self.gateway = cluster, gateway
        self.topic: str = settings.ANALYTICS_SAMPLES_TOPIC
        self.sink: Any = None
        self.refused: str | None = None  # why the cluster refused the topic, while it does
        self.next_try = 0.0
        self.records = 0
        self.seconds = 0.0

    def enabled(self) -> bool:
        return bool(settings.ANALYTICS_SAMPLES)

    def _ensure_topic(self, live_brokers: int) -> str | None:
        """None when the topic is there (or was made); else why not, in a sentence."""
        from console.gateway.messages.produce import RecordSink

        try:
            self.gateway.topic_metadata(self.topic)
        except GatewayError as exc:
            if "does not exist" not in exc.message:
                raise
            try:
                self.gateway.create_topic(self.topic, 3, max(1, min(3, live_brokers)), {
                    "retention.ms": str(int(settings.ANALYTICS_RETENTION_HOURS * 3600 * 1000)),
                    "cleanup.policy": "delete",
                })
            except InvalidRequest as exc2:
                if "already exists" not in exc2.message:
                    return exc2.message
            except GatewayError as exc2:
                if exc2.http_status < 500:
                    return exc2.message
                raise
        self.sink = RecordSink(self.gateway, self.topic)
        return None

    def write(self, time_s: float, ends: Mapping[tuple[str, int], int], sizes: Any, groups: Any,
              live_brokers: int) -> str | None:
        """Queue this cycle's records. Returns a sentence when the cluster newly refuses the topic
        (the caller raises it as an event), else None."""
        if not self.enabled():
            return None
        now = time.monotonic()
        if self.sink is None:
            if now < self.next_try:
                return None
            try:
                why = self._ensure_topic(live_brokers)
            except GatewayError:
                self.next_try = now + 10  # unreachable: the live console says so already; ask again soon
                return None
            if why is not None:
                self.next_try = now + RETRY_SECONDS
                first = self.refused is None
                self.refused = why
                return (f"The console cannot keep analytics samples in topic '{self.topic}': {why} History and reports "
                        f"stop here; the live console is not affected. Asked again every {RETRY_SECONDS / 60:.0f} minutes.") if first else None
            self.refused = None
        if not ends:
            return None  # the topic is there (made even for an empty cluster): nothing to write this cycle
        started = time.perf_counter()
        records = build_records(self.cluster, time_s, ends, sizes, groups, skip=self.topic)
        self.sink.send(records)
        self.records += len(records)
        self.seconds += time.perf_counter() - started
        return None
