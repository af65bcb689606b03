"""The offset sample records the watcher writes for the Spark jobs; pure Python, no pyspark, no Django.

One record per sampling cycle per topic and per group (never one per partition), JSON with the
per-partition arrays packed, format version 2. analytics/README.md describes the format for
readers; this module is the one place that builds records, so the watcher and the tests write
exactly what `analytics.jobs.samples` parses (which still reads version 1, the same with plain JSON
arrays).

    key   "<cluster>/<topic>"  or  "<cluster>/<group>"   (UTF-8; only spreads and orders records,
                                                          readers take everything from the value)
    topic {"v": 2, "kind": "topic", "cluster": "local", "topic": "orders", "time": 1732363200000,
           "end": <packed [1200, 1180, null]>, "bytes": <packed [50311, 49877, null]>}
    group {"v": 2, "kind": "group", "cluster": "local", "group": "billing", "time": 1732363200000,
           "members": 2, "offsets": {"orders": <packed [1100, 1180, null]>}}

A packed array is a base64 string of little-endian signed 64-bit integers, -1 for null: reading
one is a copy, where parsing a JSON array of numbers costs the jobs most of their time (an hour of
10,000 partitions sampled every second is 72 million numbers).

`end[p]` is partition p's end offset (high watermark); `bytes[p]` its log size in bytes where the
watcher knows it (the key is left out when it knows none); `offsets[topic][p]` the group's committed
offset for partition p. null means not known this cycle (no leader, no commit). `time` is the cycle's
time in milliseconds since the epoch: the topic and group records of one cycle carry the same time,
the time the end offsets were read, as the live lag evaluation uses one `now` per cycle.
"""

from __future__ import annotations

import base64
import json
import sys
from array import array
from collections.abc import Mapping, Sequence
from typing import Any

FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
TOPIC, GROUP = "topic", "group"
NULL = -1


def pack(values: Sequence[int | None]) -> str:
    """Offsets (None for unknown) as a packed array: base64 of little-endian int64, -1 for None."""
    packed = array("q", (NULL if v is None else int(v) for v in values))
    if sys.byteorder != "little":
        packed.byteswap()
    return base64.b64encode(packed.tobytes()).decode("ascii")


def unpack(text: str) -> list[int | None]:
    """A packed array back as a list, None where it holds -1."""
    values = array("q")
    values.frombytes(base64.b64decode(text, validate=True))
    if sys.byteorder != "little":
        values.byteswap()
    return [None if v == NULL else v for v in values]


def read_record(value: bytes | str) -> dict[str, Any]:
    """A record's value as a dict with its packed arrays unpacked (version 1 records as they are)."""
    doc: dict[str, Any] = json.loads(value)
    if doc.get("v") == 2:
        for name in ("end", "bytes"):
            if isinstance(doc.get(name), str):
                doc[name] = unpack(doc[name])
        if isinstance(doc.get("offsets"), dict):
            doc["offsets"] = {t: unpack(o) for t, o in doc["offsets"].items()}
    return doc


def topic_record(cluster: str, topic: str, time_ms: int, end_offsets: Sequence[int | None],
                 sizes: Sequence[int | None] | None = None) -> tuple[bytes, bytes]:
    """(key, value) of one topic's sample: end offsets (and log sizes) indexed by partition."""
    value: dict[str, object] = {"v": FORMAT_VERSION, "kind": TOPIC, "cluster": cluster, "topic": topic,
                                "time": int(time_ms), "end": pack(end_offsets)}
    if sizes is not None and any(s is not None for s in sizes):
        value["bytes"] = pack(sizes)
    return _encode(cluster, topic, value)


def group_record(cluster: str, group: str, time_ms: int, committed: Mapping[str, Sequence[int | None]],
                 members: int) -> tuple[bytes, bytes]:
    """(key, value) of one group's sample: committed offsets per topic, indexed by partition."""
    value: dict[str, object] = {"v": FORMAT_VERSION, "kind": GROUP, "cluster": cluster, "group": group,
                                "time": int(time_ms), "members": int(members),
                                "offsets": {t: pack(offsets) for t, offsets in committed.items()}}
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
