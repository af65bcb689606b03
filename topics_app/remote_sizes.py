"""Bytes each partition holds in remote storage (KIP-405), from the remote log metadata
(console/gateway/remote_log.py): the segments whose copy has finished and whose deletion has not, by the
size their own record carries, as the brokers' RemoteLogSizeBytes counts them.

The watcher's tiered side loop (tiered_watch.py) keeps one index per cluster, reads only the records
added since its last look, and stores the sizes of the tiered topics in Redis; the topic page and its
API read them from there.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Mapping
from typing import Any

import redis

from console import snapshots

# RemoteLogSegmentState and RemotePartitionDeleteState ids (Kafka's remote storage API).
COPY_STARTED, COPY_FINISHED, DELETE_STARTED, DELETE_FINISHED = 0, 1, 2, 3
PARTITION_DELETE_FINISHED = 2
SEGMENT, UPDATE, PARTITION_DELETE = 0, 1, 2  # the records' api keys


class _Segment:
    __slots__ = ("event_ms", "partition", "size", "state", "topic", "topic_id")

    def __init__(self, topic: str, topic_id: str, partition: int, size: int, state: int, event_ms: int) -> None:
        self.topic, self.topic_id, self.partition = topic, topic_id, partition
        self.size, self.state, self.event_ms = size, state, event_ms


class RemoteIndex:
    """Every remote segment the metadata names and its last state; `positions` is where the next read
    of the metadata topic starts (by its partition)."""

    def __init__(self) -> None:
        self.positions: dict[int, int] = {}
        self.segments: dict[str, _Segment] = {}

    def apply(self, key: int, fields: Mapping[str, Any]) -> None:
        if key == SEGMENT:
            sid = fields["remote_log_segment_id"]
            tip = sid["topic_id_partition"]
            self.segments[str(sid["id"])] = _Segment(tip["name"], str(tip["id"]), tip["partition"], fields["segment_size_in_bytes"],
                                                     fields["remote_log_segment_state"], fields["event_timestamp_ms"])
        elif key == UPDATE:
            sid = str(fields["remote_log_segment_id"]["id"])
            segment = self.segments.get(sid)
            if segment is None:
                return
            if fields["remote_log_segment_state"] == DELETE_FINISHED:
                del self.segments[sid]
            else:
                segment.state, segment.event_ms = fields["remote_log_segment_state"], fields["event_timestamp_ms"]
        elif key == PARTITION_DELETE and fields["remote_partition_delete_state"] == PARTITION_DELETE_FINISHED:
            tip = fields["topic_id_partition"]
            gone = (str(tip["id"]), tip["partition"])
            self.segments = {sid: s for sid, s in self.segments.items() if (s.topic_id, s.partition) != gone}

    def sizes(self, topics: Collection[str]) -> dict[str, dict[int, dict[str, int]]]:
        """Per topic of `topics`, per partition: `bytes` and `segments` held in remote storage (copied,
        not yet deleted), `copying_bytes` of segments being copied. A name re-created since has its
        old topic id's segments until Kafka deletes them: only the newest topic id of a name counts."""
        wanted = set(topics)
        newest: dict[str, tuple[int, str]] = {}
        for s in self.segments.values():
            if s.topic in wanted and (s.topic not in newest or s.event_ms > newest[s.topic][0]):
                newest[s.topic] = (s.event_ms, s.topic_id)
        found: dict[str, dict[int, dict[str, int]]] = {}
        for s in self.segments.values():
            if s.topic not in newest or s.topic_id != newest[s.topic][1]:
                continue
            row = found.setdefault(s.topic, {}).setdefault(s.partition, {"bytes": 0, "segments": 0, "copying_bytes": 0})
            if s.state == COPY_STARTED:
                row["copying_bytes"] += s.size
            else:  # (copied; a deletion started still holds the bytes until it finishes)
                row["bytes"] += s.size
                row["segments"] += 1
        return found


def key(cluster: str) -> str:
    return f"topics:tiered:remote:{cluster}"


def store(cluster: str, sizes: Mapping[str, Mapping[int, Mapping[str, int]]] | None, error: str | None, keep_s: int) -> None:
    data = {"as_of": time.time(), "error": error, "topics": sizes or {}}
    snapshots.redis_client().set(key(cluster), json.dumps(data), ex=keep_s)


def stored(cluster: str, topic: str) -> dict[str, Any] | None:
    """The watcher's last look at `topic`: `as_of`, `error` and `partitions` (by partition number); None
    when it has not looked lately or Redis does not answer."""
    try:
        raw = snapshots.redis_client().get(key(cluster))
    except redis.RedisError:
        return None
    if not raw:
        return None
    data = json.loads(raw)
    parts = data["topics"].get(topic, {})
    return {"as_of": data["as_of"], "error": data["error"], "partitions": {int(p): row for p, row in parts.items()}}
