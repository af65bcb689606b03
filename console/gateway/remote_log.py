"""The remote log metadata of a cluster with tiered storage (KIP-405): the records Kafka's topic-based
remote log metadata manager keeps in `__remote_log_metadata`, one per segment copied to remote storage
and per change of its state, each with the segment's size in bytes. Kafka's admin API offers no remote
size; these records are where the brokers themselves take it from.

The records are Kafka's own messages (RemoteLogSegmentMetadataRecord and its update and partition
delete records) framed as its metadata records are (frame version, api key and version as unsigned
varints, AbstractApiMessageSerde). They are decoded with Kafka's own message schemas, read from the
kafka-storage sources jar fetched from Maven Central at setup (kafka/pom.xml), by kafka-python's
schema-driven codec: nothing of the format is written out here.
"""

from __future__ import annotations

import functools
import io
import json
import re
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError
from confluent_kafka import TopicPartition as RdTopicPartition
from django.conf import settings
from kafka.protocol.schemas.fields.codecs.types import UnsignedVarInt32
from kafka.protocol.schemas.fields.struct import StructField

from console.gateway.client import ClusterGateway
from console.gateway.errors import ClusterUnavailable
from console.gateway.messages.reading import browsing_consumer, close_quietly, topic_partitions, watermarks

TOPIC = "__remote_log_metadata"
# Kafka's messages in that topic, by api key (RemoteLogMetadataSerde); the snapshot record (3) is only
# ever in the brokers' own files.
MESSAGES = {0: "RemoteLogSegmentMetadataRecord", 1: "RemoteLogSegmentMetadataUpdateRecord",
            2: "RemotePartitionDeleteMetadataRecord"}
_FRAME_VERSION = 1
_COMMENTS = re.compile(r"(?m)^\s*//.*\n?")
_BATCH = 5_000


class SchemasMissing(Exception):
    """Kafka's message schemas are not installed (no kafka-storage sources jar in KAFKA_LIB_DIR)."""


@functools.cache
def _structs(lib_dir: Path) -> dict[int, StructField]:
    jars = sorted(lib_dir.glob("kafka-storage-*-sources.jar"))
    if not jars:
        raise SchemasMissing(f"Kafka's remote log metadata schemas are not installed (no kafka-storage sources jar in {lib_dir}; "
                             "run 'make kafka-jars').")
    with zipfile.ZipFile(jars[-1]) as jar:
        return {key: StructField(json.loads(_COMMENTS.sub("", jar.read(f"message/{name}.json").decode())))
                for key, name in MESSAGES.items()}


def decode(value: bytes) -> tuple[int, dict[str, Any]] | None:
    """(api key, fields by Kafka's field names) of one record's value; None for a record of a kind or
    frame version this console does not know. ValueError (or the codec's own error) on bad bytes."""
    data = io.BytesIO(value)
    frame, key, version = (UnsignedVarInt32.decode(data) for _ in range(3))
    struct = _structs(Path(settings.KAFKA_LIB_DIR)).get(key)
    if frame != _FRAME_VERSION or struct is None:
        return None
    fields: dict[str, Any] = struct.decode(data, version=version, compact=True, tagged=True)
    return key, fields


def read(gateway: ClusterGateway, positions: dict[int, int], on_record: Callable[[int, dict[str, Any]], None]) -> dict[int, int]:
    """Hand each record of `__remote_log_metadata` from `positions` (metadata partition -> next offset;
    the beginning where absent) up to the end at the start of the call to `on_record`, in order per
    partition; returns the positions after it. NotFound when the cluster has no such topic (remote
    storage not enabled on it), SchemasMissing when the schemas are not installed."""
    _structs(Path(settings.KAFKA_LIB_DIR))  # (fails first, before anything is read)
    consumer = browsing_consumer(gateway)
    try:
        parts = topic_partitions(consumer, gateway, TOPIC)
        low, high = watermarks(gateway, TOPIC, parts)
        starts = {p: max(positions.get(p, low[p]), low[p]) for p in parts}
        pending = {p: high[p] for p in parts if starts[p] < high[p]}
        done = dict(starts)
        if not pending:
            return done
        ends = dict(pending)
        consumer.assign([RdTopicPartition(TOPIC, p, starts[p]) for p in pending])
        for record in _records(consumer, gateway, pending):
            p, offset = record.partition(), record.offset()
            # A record past the end read at the start (written meanwhile) is the next call's: skipped
            # here, and not counted as done.
            if offset < ends[p]:
                found = decode(record.value() or b"")
                if found is not None:
                    on_record(*found)
                done[p] = offset + 1
        return done
    finally:
        close_quietly(consumer)


def _records(consumer: Any, gateway: ClusterGateway, pending: dict[int, int]) -> Iterator[Any]:
    """The assigned partitions' records until each reaches its end in `pending` (emptied as they do);
    ClusterUnavailable when nothing arrives for the gateway's timeout."""
    quiet_since = time.monotonic()
    while pending:
        batch = consumer.consume(num_messages=_BATCH, timeout=0.2)
        for m in batch:
            err = m.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    pending.pop(m.partition(), None)
                continue
            yield m
            if m.offset() + 1 >= pending.get(m.partition(), 0):
                pending.pop(m.partition(), None)
        if batch:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > gateway.timeout:
            raise ClusterUnavailable(f"Partition(s) {', '.join(map(str, sorted(pending)))} of {TOPIC} sent nothing for "
                                     f"{gateway.timeout:g} s on cluster '{gateway.name}'.")
