"""Moving partitions: replica reassignments (start, cancel, list) and leader elections."""

from __future__ import annotations

from confluent_kafka import ElectionType, KafkaError, KafkaException
from confluent_kafka import TopicPartition as RdTopicPartition

from console.gateway.connections import Connections
from console.gateway.types import OngoingReassignment, TopicPartition


class Reassignments(Connections):
    """Reassignments through kafka-python (librdkafka has no API for them), elections through librdkafka."""

    def alter_reassignments(self, targets: dict[TopicPartition, list[int] | None]) -> dict[TopicPartition, str | None]:
        """Start reassignments (a new replica list) or cancel them (None: Kafka returns the partition to
        its original replicas). Per partition: None when accepted, else Kafka's error in a few words;
        cancelling a partition with nothing in progress counts as accepted."""
        if not targets:
            return {}

        def run() -> dict[TopicPartition, str | None]:
            from kafka.structs import TopicPartition as KpPartition

            wanted = {KpPartition(t, p): r for (t, p), r in targets.items()}
            answer = self._with_kafka_python(
                "reassignments", lambda admin: admin.alter_partition_reassignments(wanted, timeout_ms=int(self.timeout * 1000))
            )
            out: dict[TopicPartition, str | None] = {}
            for tp, err in answer.items():
                key = (tp.topic, tp.partition)
                if err is None or (targets.get(key) is None and getattr(err, "__name__", "") == "NoReassignmentInProgressError"):
                    out[key] = None
                else:
                    name = getattr(err, "__name__", str(err))
                    out[key] = getattr(err, "description", "") or name
            for key in targets:
                out.setdefault(key, "no answer from the controller")
            return out

        return self._call("alter partition reassignments", run)

    def ongoing_reassignments(self) -> dict[TopicPartition, OngoingReassignment]:
        """Every reassignment Kafka is carrying out now (any tool's, not only the console's)."""

        def run() -> dict[TopicPartition, OngoingReassignment]:
            answer = self._with_kafka_python(
                "reassignments", lambda admin: admin.list_partition_reassignments(timeout_ms=int(self.timeout * 1000))
            )
            return {
                (tp.topic, tp.partition): OngoingReassignment(
                    tp.topic, tp.partition, tuple(v.get("replicas") or ()), tuple(v.get("adding_replicas") or ()),
                    tuple(v.get("removing_replicas") or ()),
                )
                for tp, v in answer.items()
            }

        return self._call("list partition reassignments", run)

    def elect_leaders(self, unclean: bool, partitions: list[TopicPartition] | None) -> dict[TopicPartition, str | None]:
        """A preferred (or unclean) leader election over these partitions, None: every partition.
        Per partition: None when a leader was elected, "not needed" when the preferred replica
        already leads, else Kafka's error in a few words."""

        def run() -> dict[TopicPartition, str | None]:
            kind = ElectionType.UNCLEAN if unclean else ElectionType.PREFERRED
            wanted = None if partitions is None else [RdTopicPartition(t, p) for t, p in partitions]
            # confluent-kafka 2.16 documents request_timeout and operation_timeout, but its C side
            # fails on either ("more argument specifiers than keyword list entries"): _result bounds the wait.
            result = self._result(self._admin_client().elect_leaders(kind, wanted))
            out: dict[TopicPartition, str | None] = {}
            for tp, err in result.items():
                error = err.args[0] if isinstance(err, KafkaException) and err.args else err
                if error is None or (isinstance(error, KafkaError) and error.code() == KafkaError.NO_ERROR):
                    out[(tp.topic, tp.partition)] = None
                elif isinstance(error, KafkaError) and error.code() == KafkaError.ELECTION_NOT_NEEDED:
                    out[(tp.topic, tp.partition)] = "not needed"
                else:
                    out[(tp.topic, tp.partition)] = error.str() if isinstance(error, KafkaError) else str(error)
            return out

        return self._call("elect leaders", run)
