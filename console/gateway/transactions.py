"""Transactions and producers (KIP-664): ListTransactions, DescribeTransactions, DescribeProducers, the
last stable offset (ListOffsets read_committed) and the abort of an open transaction (WriteTxnMarkers).

kafka-python's admin client has the four requests of `kafka-transactions` (its TransactionsAdminMixin);
librdkafka has none of them but does ListOffsets with an isolation level, so the LSO is read there.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from confluent_kafka import IsolationLevel
from confluent_kafka import TopicPartition as RdTopicPartition
from confluent_kafka.admin import OffsetSpec
from kafka.admin import AbortTransactionSpec, KafkaAdminClient, TransactionDescription
from kafka.errors import KafkaError, TransactionalIdNotFoundError
from kafka.structs import TopicPartition as KpTopicPartition

from console.gateway.connections import Connections
from console.gateway.errors import NotFound
from console.gateway.types import TopicPartition

_PURPOSE = "transactions"
# DescribeProducers asked of the whole topic this many times before it is asked partition by partition.
_PRODUCER_ATTEMPTS = 3
# Share of the request timeout after which no further DescribeProducers is sent (one in flight may still
# take a whole timeout, and the call as a whole must end within its limit).
_RETRY_SHARE = 0.3


@dataclass(frozen=True)
class Transaction:
    transactional_id: str
    state: str  # Kafka's: Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, Dead, PrepareEpochFence
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_ms: int  # -1 when no transaction is open
    coordinator: int
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class ActiveProducer:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int  # ms, -1 when unknown
    coordinator_epoch: int
    txn_start_offset: int  # the open transaction's first offset on this partition, -1 when none


def _transaction(tid: str, d: TransactionDescription) -> Transaction:
    return Transaction(
        transactional_id=tid, state=d.state.value, producer_id=d.producer_id, producer_epoch=d.producer_epoch,
        timeout_ms=d.transaction_timeout_ms, start_ms=d.transaction_start_time_ms, coordinator=d.coordinator_id,
        partitions=tuple(sorted((tp.topic, tp.partition) for tp in d.topic_partitions)),
    )


class TransactionAdmin(Connections):
    """The transactions of a cluster and the producers of its partitions."""

    def transactions(self) -> list[Transaction]:
        """Every transactional id the coordinators know (one ListTransactions per broker), described
        (one DescribeTransactions per coordinator), by id."""

        def run(admin: KafkaAdminClient) -> list[Transaction]:
            ids = sorted({t.transactional_id for listed in admin.list_transactions().values() for t in listed})
            described = admin.describe_transactions(ids) if ids else {}
            return [_transaction(tid, d) for tid, d in sorted(described.items())]

        return self._call("list transactions", lambda: self._with_kafka_python(_PURPOSE, run))

    def transaction(self, transactional_id: str) -> Transaction | None:
        """One transactional id described by its coordinator (DescribeTransactions), None when unknown."""

        def run(admin: KafkaAdminClient) -> Transaction | None:
            try:
                d = admin.describe_transactions([transactional_id]).get(transactional_id)
            except TransactionalIdNotFoundError:
                return None
            return None if d is None else _transaction(transactional_id, d)

        return self._call("describe a transaction", lambda: self._with_kafka_python(_PURPOSE, run))

    def producers(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, list[ActiveProducer] | None]:
        """The active producers of each partition, from its leader (DescribeProducers); None for a partition
        whose leader did not answer. kafka-python fails the whole request on one partition's error (a topic
        created a moment ago whose leaders the metadata does not name yet), so the request is asked again
        with fresh metadata, and then partition by partition so the others are still shown."""
        asked = [KpTopicPartition(t, p) for t, p in sorted(set(partitions))]
        if not asked:
            return {}

        def described(admin: KafkaAdminClient, tps: list[KpTopicPartition]) -> dict[TopicPartition, list[ActiveProducer] | None]:
            answer = admin.describe_producers(tps)
            return {
                (tp.topic, tp.partition): [
                    ActiveProducer(p.producer_id, p.producer_epoch, p.last_sequence, p.last_timestamp, p.coordinator_epoch,
                                   p.current_transaction_start_offset)
                    for p in state.active_producers
                ]
                for tp, state in answer.items()
            }

        def run(admin: KafkaAdminClient) -> dict[TopicPartition, list[ActiveProducer] | None]:
            # Retries stop early enough that the answer, partial or not, comes within the call's time limit.
            deadline = time.monotonic() + _RETRY_SHARE * self.timeout
            for attempt in range(_PRODUCER_ATTEMPTS):
                try:
                    return described(admin, asked)
                except KafkaError as exc:
                    if not exc.retriable:
                        raise
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.2 * (attempt + 1))
                    self._fresh_metadata(admin, max_age_ms=0)  # the leaders the metadata named were wrong
            found: dict[TopicPartition, list[ActiveProducer] | None] = {}
            for tp in asked:
                if time.monotonic() > deadline:
                    found[(tp.topic, tp.partition)] = None
                    continue
                try:
                    found.update(described(admin, [tp]))
                except KafkaError as exc:
                    if not exc.retriable:
                        raise
                    found[(tp.topic, tp.partition)] = None
            return found

        return self._call("describe producers", lambda: self._with_kafka_python(_PURPOSE, run))

    def stable_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The last stable offset of each partition: where a read_committed consumer stops (ListOffsets
        latest with read_committed isolation). Partitions whose leader did not answer are left out."""
        asked = sorted(set(partitions))
        if not asked:
            return {}

        def run() -> dict[TopicPartition, int]:
            futures = self._admin_client().list_offsets(
                {RdTopicPartition(t, p): OffsetSpec.latest() for t, p in asked},
                isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=self.timeout)
            found: dict[TopicPartition, int] = {}
            for tp, future in futures.items():
                try:
                    found[(tp.topic, tp.partition)] = int(future.result(timeout=self.timeout + 1).offset)
                except Exception:  # noqa: BLE001, S112 - a partition without an answering leader is left out
                    continue
            return found

        return self._call("list last stable offsets", run)

    def abort_transaction(self, transactional_id: str) -> list[TopicPartition]:
        """Abort the open transaction of `transactional_id` on each of its partitions, as `kafka-transactions
        abort` does: an abort marker written by each partition's leader (WriteTxnMarkers) for the producer
        id and epoch the leader holds for that transaction. Returns the partitions aborted."""

        def run(admin: KafkaAdminClient) -> list[TopicPartition]:
            described = admin.describe_transactions([transactional_id]).get(transactional_id)
            if described is None:
                raise NotFound(f"Transactional id '{transactional_id}' is not known to its coordinator.")
            wanted = sorted(described.topic_partitions)
            states = admin.describe_producers(wanted) if wanted else {}
            aborted: list[TopicPartition] = []
            for tp in wanted:
                state = states.get(tp)
                for p in state.active_producers if state is not None else []:
                    if p.producer_id == described.producer_id and p.current_transaction_start_offset >= 0:
                        admin.abort_transaction(AbortTransactionSpec(tp, p.producer_id, p.producer_epoch,
                                                                     max(p.coordinator_epoch, 0)))
                        aborted.append((tp.topic, tp.partition))
            return aborted

        return self._call("abort a transaction", lambda: self._with_kafka_python(_PURPOSE, run))
