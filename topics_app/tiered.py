"""Tiered storage (KIP-405) of one topic: local and remote extent per partition and per topic, local
retention beside total retention, and the tiering lag.

Where each figure comes from (the page and the API say the same):
- local bytes: the brokers' log dirs (DescribeLogDirs, read by the watcher), the local log only;
- offsets: ListOffsets from each partition's leader: earliest (-2, remote storage included),
  earliest local (-4) and latest tiered (-5), beside the high watermark (-1);
- remote bytes: not offered by Kafka's admin API (only the brokers' RemoteLogSizeBytes metric): read
  from the remote log metadata, each copied segment's size as its record in __remote_log_metadata
  says, by the watcher's tiered side loop (remote_sizes.py, tiered_watch.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.conf import settings

from console import gateway
from console.gateway.errors import GatewayError
from console.gateway.tiered import TieredOffsets
from console.gateway.types import ConfigValue
from topics_app import remote_sizes

ENABLE = "remote.storage.enable"
# Kafka's sentinel for local.retention.*: keep locally as long as in total (retention.*).
SAME_AS_TOTAL = "-2"
SOURCES = {
    "local_bytes": "the brokers' log dirs (DescribeLogDirs, as kafka-log-dirs --describe)",
    "offsets": "ListOffsets from each partition's leader: earliest (-2), earliest local (-4), latest tiered (-5), "
               "latest (-1), as kafka-get-offsets --time",
    "remote_bytes": "the remote log metadata (__remote_log_metadata: each copied segment's size, as the brokers' "
                    "RemoteLogSizeBytes metric counts them; Kafka's admin API offers none), the watcher's last look",
}


def enabled(configs: Iterable[ConfigValue]) -> bool:
    return any(c.name == ENABLE and (c.value or "").lower() == "true" for c in configs)


def retention(configs: Iterable[ConfigValue]) -> list[dict[str, Any]]:
    """Local retention beside total retention, in time and in bytes; -2 locally means as long as in total."""
    values = {c.name: c.value for c in configs}
    rows = []
    for unit in ("ms", "bytes"):
        total, local = values.get(f"retention.{unit}"), values.get(f"local.retention.{unit}")
        rows.append({"unit": unit, "total": total, "local": local,
                     "local_effective": total if local == SAME_AS_TOTAL else local})
    return rows


def _partition(p: Mapping[str, Any], o: TieredOffsets | None, remote: Mapping[int, Mapping[str, int]] | None) -> dict[str, Any]:
    held = None if remote is None else remote.get(p["partition"], {"bytes": 0, "segments": 0, "copying_bytes": 0})
    row: dict[str, Any] = {"partition": p["partition"], "leader": p["leader"], "local_bytes": p["size"],
                           "replica_local_bytes": dict(p["replica_sizes"]),
                           "remote_bytes": None if held is None else held["bytes"],
                           "remote_segments": None if held is None else held["segments"],
                           "remote_copying_bytes": None if held is None else held["copying_bytes"]}
    if o is None:
        return {**row, "earliest_offset": None, "earliest_local_offset": None, "latest_tiered_offset": None,
                "high_watermark": None, "remote_only_records": None, "tiered_records": None, "local_records": None,
                "untiered_records": None}
    tiered_end = o.latest_tiered + 1 if o.latest_tiered >= 0 else o.earliest  # (first offset not in remote storage)
    return {
        **row,
        "earliest_offset": o.earliest,
        "earliest_local_offset": o.earliest_local,
        "latest_tiered_offset": o.latest_tiered if o.latest_tiered >= 0 else None,
        "high_watermark": o.latest,
        "remote_only_records": max(0, o.earliest_local - o.earliest),
        "tiered_records": max(0, tiered_end - o.earliest),
        "local_records": max(0, o.latest - o.earliest_local),
        "untiered_records": max(0, o.latest - max(tiered_end, o.earliest)),
    }


def _total(rows: list[dict[str, Any]], key: str) -> int | None:
    values = [r[key] for r in rows if r[key] is not None]
    return sum(values) if values else None


def summary(configs: Iterable[ConfigValue], partitions: Sequence[Mapping[str, Any]],
            offsets: Mapping[int, TieredOffsets] | None, offsets_error: str | None = None,
            remote: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The tiered storage section of a topic whose remote storage is enabled; `offsets` None when they
    could not be read (`offsets_error` says why; the local figures still stand); `remote` the watcher's
    last look at its remote sizes (remote_sizes.stored), None when there is none."""
    configs = list(configs)
    held = remote["partitions"] if remote is not None and remote["error"] is None else None
    rows = [_partition(p, (offsets or {}).get(p["partition"]), held) for p in partitions]
    totals = {k: _total(rows, k) for k in ("local_bytes", "remote_only_records", "tiered_records", "local_records",
                                           "untiered_records", "remote_bytes", "remote_segments", "remote_copying_bytes")}
    # (unknown, not 0 B, before the watcher has read any replica's size)
    known = [n for r in rows for n in r["replica_local_bytes"].values()]
    totals["replica_local_bytes"] = sum(known) if known else None
    return {
        "enabled": True,
        "remote_bytes": totals["remote_bytes"],
        "remote_as_of": None if remote is None else remote["as_of"],
        "remote_error": None if remote is None else remote["error"],
        "configs": {c.name: c.value for c in configs if c.name in {ENABLE, "remote.log.copy.disable",
                                                                    "remote.log.delete.on.disable", "segment.bytes"}},
        "segment_bytes": next((c.value for c in configs if c.name == "segment.bytes"), None),
        "retention": retention(configs),
        "partitions": rows,
        "totals": totals,
        "offsets_error": offsets_error,
        "sources": SOURCES,
    }


def tiered_storage(cluster: str, topic: str, configs: list[ConfigValue], partitions: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The topic's tiered storage section, None when its remote storage is not enabled."""
    if not enabled(configs):
        return None
    try:
        offsets: dict[int, TieredOffsets] | None = gateway.for_cluster(cluster).tiered_offsets(
            topic, [p["partition"] for p in partitions])
        error = None
    except GatewayError as exc:
        offsets, error = None, exc.message
    section = summary(configs, partitions, offsets, error, remote_sizes.stored(cluster, topic))
    section["remote_interval"] = settings.TIERED_POLL_INTERVAL  # (how often the watcher reads the remote sizes)
    return section


def read(cluster: str, topic: str, partitions: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """For the API: the section as `tiered_storage`, or why the topic's configs could not be read."""
    try:
        configs = gateway.for_cluster(cluster).describe_topic_configs(topic)
    except GatewayError as exc:
        return {"enabled": None, "error": exc.message}
    return tiered_storage(cluster, topic, configs, partitions)
