"""Tiered storage (KIP-405): where each partition's log starts in remote storage and locally, and how far
remote storage reaches, from ListOffsets' special timestamps.

Kafka's admin API gives no remote size: DescribeLogDirs counts the local log only, and the bytes held
in remote storage are only the brokers' RemoteLogSizeBytes metric (JMX). What ListOffsets does give,
per partition, from its leader: the earliest offset (-2, remote storage included), the earliest local
offset (-4, KIP-405, ListOffsets v8) and the latest tiered offset (-5, KIP-1005, v9). librdkafka asks
neither of the last two, so they are sent with kafka-python's admin client, one request per leader
and offset kind.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka.admin import KafkaAdminClient, OffsetSpec
from kafka.structs import TopicPartition as KpTopicPartition

from console.gateway.connections import Connections

_PURPOSE = "tiered offsets"
_SPECS = {
    "earliest": OffsetSpec.EARLIEST,
    "earliest_local": OffsetSpec.EARLIEST_LOCAL,
    "latest_tiered": OffsetSpec.LATEST_TIERED,
    "latest": OffsetSpec.LATEST,
}


@dataclass(frozen=True)
class TieredOffsets:
    earliest: int  # the log start offset, remote storage included
    earliest_local: int  # the first offset still in the leader's local log
    latest_tiered: int  # the last offset copied to remote storage; -1 while nothing is
    latest: int  # the high watermark


class TieredReads(Connections):
    """The offsets that place a partition's log between remote storage and the brokers' disks."""

    def tiered_offsets(self, topic: str, partitions: list[int]) -> dict[int, TieredOffsets]:
        """Earliest, earliest local, latest tiered and latest offset of each partition, by partition."""
        if not partitions:
            return {}

        def run(admin: KafkaAdminClient) -> dict[int, TieredOffsets]:
            asked = [KpTopicPartition(topic, p) for p in partitions]
            found: dict[str, dict[int, int]] = {}
            for kind, spec in _SPECS.items():
                answer = admin.list_partition_offsets({tp: spec for tp in asked}, timeout_ms=int(self.timeout * 1000))
                found[kind] = {tp.partition: o.offset for tp, o in answer.items()}
            return {p: TieredOffsets(**{kind: found[kind][p] for kind in _SPECS}) for p in partitions}

        return self._call(f"read the tiered offsets of topic '{topic}'",
                          lambda: self._with_kafka_python(_PURPOSE, run))
