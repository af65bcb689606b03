"""What the brokers report about themselves: their racks, the KRaft quorum and their log dirs."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from console.gateway.connections import Connections
from console.gateway.errors import ClusterUnavailable
from console.gateway.types import Quorum, QuorumReplica, TopicPartition


class LogDirSizes(dict[TopicPartition, dict[int, int]]):
    """(topic, partition) -> {broker: bytes}; `futures`: (topic, partition) -> {broker: how many
    offsets its future replica is behind the current log} (DescribeLogDirs' offset lag, which
    means something only for a future replica: for a current one it is max(HW - LEO, 0), 0 on a follower)."""

    def __init__(self) -> None:
        super().__init__()
        self.futures: dict[TopicPartition, dict[int, int]] = {}


def _replicas(items: Iterable[dict[str, Any]]) -> tuple[QuorumReplica, ...]:
    return tuple(
        sorted(
            (
                QuorumReplica(
                    replica_id=r["replica_id"],
                    log_end_offset=r["log_end_offset"],
                    last_fetch_timestamp=r.get("last_fetch_timestamp", -1),
                    last_caught_up_timestamp=r.get("last_caught_up_timestamp", -1),
                )
                for r in items
            ),
            key=lambda r: r.replica_id,
        )
    )


class BrokerReads(Connections):
    """Racks, the quorum and log dir sizes."""

    def broker_racks(self) -> dict[int, str | None]:
        """Rack of every live broker (librdkafka's metadata does not carry racks)."""

        def run() -> dict[int, str | None]:
            desc = self._result(self._admin_client().describe_cluster(request_timeout=self.timeout))
            return {node.id: node.rack for node in desc.nodes}

        return self._call("describe the cluster", run)

    def quorum(self) -> Quorum:
        """The KRaft metadata quorum: leader (the active controller), voters and observers."""

        def run() -> Quorum:
            raw = self._with_kafka_python("quorum", lambda admin: admin.describe_metadata_quorum())
            part = raw["topics"][0]["partitions"][0]
            if part.get("error"):
                raise ClusterUnavailable(f"Cluster '{self.name}' could not describe its quorum: {part['error']}")
            return Quorum(
                leader_id=part["leader_id"],
                leader_epoch=part["leader_epoch"],
                high_watermark=part["high_watermark"],
                voters=_replicas(part["current_voters"]),
                observers=_replicas(part["observers"]),
            )

        return self._call("describe the KRaft quorum", run)

    def log_dir_sizes(self, brokers: list[int]) -> LogDirSizes:
        """Size in bytes of every partition replica on the given brokers (from their log dirs); a
        future replica (the copy an intra-broker move is making in another log dir) is not counted
        in its replica's size: its offset lag behind the current log is in `.futures`."""

        def run() -> LogDirSizes:
            sizes = LogDirSizes()
            answers = self._with_kafka_python("log dirs", lambda admin: admin.describe_log_dirs(brokers=brokers))
            for answer in answers:
                broker = answer["broker"]
                for log_dir in answer["log_dirs"]:
                    for topic in log_dir.get("topics", []):
                        for part in topic.get("partitions", []):
                            key = (topic["name"], part["partition_index"])
                            if part.get("is_future_key"):
                                sizes.futures.setdefault(key, {})[broker] = part.get("offset_lag", 0)
                                continue
                            sizes.setdefault(key, {})[broker] = sizes.get(key, {}).get(broker, 0) + part["partition_size"]
            return sizes

        return self._call("describe the brokers' log dirs", run)
