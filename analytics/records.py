"""The offset sample records the watcher writes for the Spark jobs; pure Python, no pyspark, no Django.

One record per sampling cycle per topic and per group (never one per partition), JSON, format
version 1. analytics/README.md describes the format for readers; this module is the one place that
builds records, so the watcher and the tests write exactly what `analytics.jobs.samples` parses.

    key   "<cluster>/<topic>"  or  "<cluster>/<group>"   (UTF-8; only spreads and orders records,
                                                          readers take everything from the value)
    topic {"v": 1, "kind": "topic", "cluster": "local", "topic": "orders", "time": 1732363200000,
           "end": [1200, 1180, null], "bytes": [50311, 49877, null]}
    group {"v": 1, "kind": "group", "cluster": "local", "group": "billing", "time": 1732363200000,
           "members": 2, "offsets": {"orders": [1100, 1180, null]}}

`end[p]` is partition p's end offset (high watermark); `bytes[p]` its log size in bytes where the
watcher knows it (the key is left out when it knows none); `offsets[topic][p]` the group's committed
offset for partition p. null means not known this cycle (no leader, no commit). `time` is the cycle's
time in milliseconds since the epoch: the topic and group records of one cycle carry the same time,
the time the end offsets were read, as the live lag evaluation uses one `now` per cycle.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

FORMAT_VERSION = 1
TOPIC, GROUP = "topic", "group"


def topic_record(cluster: str, topic: str, time_ms: int, end_offsets: Sequence[int | None],
                 sizes: Sequence[int | None] | None = None) -> tuple[bytes, bytes]:
    """(key, value) of one topic's sample: end offsets (and log sizes) indexed by partition."""
    value: dict[str, object] = {"v": FORMAT_VERSION, "kind": TOPIC, "cluster": cluster, "topic": topic,
                                "time": int(time_ms), "end": list(end_offsets)}
    if sizes is not None and any(s is not None for s in sizes):
        value["bytes"] = list(sizes)
    return _encode(cluster, topic, value)


def group_record(cluster: str, group: str, time_ms: int, committed: Mapping[str, Sequence[int | None]],
                 members: int) -> tuple[bytes, bytes]:
    """(key, value) of one group's sample: committed offsets per topic, indexed by partition."""
    value: dict[str, object] = {"v": FORMAT_VERSION, "kind": GROUP, "cluster": cluster, "group": group,
                                "time": int(time_ms), "members": int(members),
                                "offsets": {t: list(offsets) for t, offsets in committed.items()}}
    return _encode(cluster, group, value)


def by_partition(values: Mapping[int, int]) -> list[int | None]:
    """A {partition: value} mapping as the record's list indexed by partition, null where missing."""
    if not values:
        return []
    out: list[int | None] = [None] * (max(values) + 1)
    for partition, v in values.items():
        out[partition] = v
    return out


def _encode(cluster: str, name: str, value: Mapping[str, object]) -> tuple[bytes, bytes]:
    return f"{cluster}/{name}".encode(), json.dumps(value, separators=(",", ":")).encode()
