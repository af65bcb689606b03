"""Reads of the cluster's layout: brokers, topics and partitions with leader, replicas and ISR."""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterable
from operator import itemgetter
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicCollection

from console.gateway.config import ClusterConfig
from console.gateway.connections import Connections, askable
from console.gateway.errors import NotFound
from console.gateway.types import (
    INTERNAL_TOPICS,
    Broker,
    ClusterMetadata,
    Partition,
    PartitionTable,
    Topic,
    TopicPartition,
    partition_rows,
    shared_ids,
)


def _error_text(error: Any) -> str | None:
    """A librdkafka error of a topic or partition as the gateway's types keep it (None: no error)."""
    return error.str() if error is not None and error.code() != 0 else None


def _says(tm: Any, topic: Topic) -> bool:
    """Whether librdkafka's metadata of a topic says what `topic` (built from an earlier answer)
    says: its error, and each partition's leader, replicas, ISR and error."""
    if _error_text(tm.error) != topic.error or len(tm.partitions) != len(topic.partitions):
        return False
    answered = tm.partitions
    for number, leader, replicas, isr, error in partition_rows(topic.partitions):
        pm = answered.get(number)
        if pm is None or pm.leader != leader or tuple(pm.replicas) != replicas or tuple(pm.isrs) != isr:
            return False
        if (pm.error is not None or error is not None) and _error_text(pm.error) != error:
            return False
    return True


class ClusterReads(Connections):
    """Metadata and topic descriptions."""

    def __init__(self, config: ClusterConfig, timeout: float) -> None:
        super().__init__(config, timeout)
        self._topic_cache: dict[str, Topic] = {}  # topic -> the Topic built from its last answer (`_says`)

    def metadata(self) -> ClusterMetadata:
        """Live brokers, every topic and partition with leader, replicas and ISR."""

        def run() -> ClusterMetadata:
            admin = self._admin_client()
            md = admin.list_topics(timeout=self.timeout)
            # (its cache now holds every topic: _cached_topics; not waited for while another thread
            # fills the cache, which can take a slow cluster's whole timeout: that thread records it)
            if self._warm_lock.acquire(blocking=False):
                try:
                    self._admin_topics = (weakref.ref(admin), askable(md.topics), time.monotonic())
                finally:
                    self._warm_lock.release()
            brokers = tuple(
                sorted(
                    (Broker(id=b.id, host=str(b.host), port=int(b.port), rack=getattr(b, "rack", None)) for b in md.brokers.values()),
                    key=lambda b: b.id,
                )
            )
            topics = []
            cache = self._topic_cache
            fresh: dict[str, Topic] = {}
            for name, tm in md.topics.items():
                # librdkafka hands back new objects every time; comparing their fields with the
                # Topic built last time is cheaper than building a Topic of Partitions, and an
                # unchanged topic then comes back as the same object, which lets the watcher skip it
                # by identity. Only the Topics are kept to compare with: a copy of the raw fields
                # would cost as much memory again as the metadata itself (bench/metadata_compare.py).
                known = cache.get(name)
                if known is not None and _says(tm, known):
                    fresh[name] = known
                    topics.append(known)
                    continue
                parts = PartitionTable.of(name, sorted(
                    ((pm.id, pm.leader, pm.replicas, pm.isrs, _error_text(pm.error)) for pm in tm.partitions.values()),
                    key=itemgetter(0)))
                topic = Topic(name=name, internal=name in INTERNAL_TOPICS, partitions=parts, error=_error_text(tm.error))
                fresh[name] = topic
                topics.append(topic)
            self._topic_cache = fresh
            topics.sort(key=lambda t: t.name)
            return ClusterMetadata(cluster_id=md.cluster_id, brokers=brokers, topics=tuple(topics))

        return self._call("read the cluster metadata", run, silence_is_a_cause=True)

    def topic_metadata(self, name: str) -> Topic:
        """One topic's partitions, asked now (for a name the watcher's snapshot does not show yet);
        NotFound when Kafka does not have it either."""

        def run() -> Topic:
            md = self._admin_client().list_topics(topic=name, timeout=self.timeout)
            tm = md.topics.get(name)
            if tm is None or (tm.error is not None and tm.error.code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC)):
                raise NotFound(f"Topic '{name}' does not exist on cluster '{self.name}'.")
            if tm.error is not None and tm.error.code() != 0:
                raise KafkaException(tm.error)
            parts = tuple(sorted((Partition(topic=name, partition=pm.id, leader=pm.leader, replicas=shared_ids(pm.replicas),
                                            isr=shared_ids(pm.isrs), error=None) for pm in tm.partitions.values()),
                                 key=lambda p: p.partition))
            return Topic(name=name, internal=name in INTERNAL_TOPICS, partitions=parts, error=None)

        return self._call(f"describe topic '{name}'", run)

    def topic_id(self, name: str) -> str:
        """The topic's id: it changes when a topic is deleted and re-created under the same name.
        NotFound when Kafka does not have the topic."""

        def run() -> str:
            futures = self._admin_client().describe_topics(TopicCollection([name]), request_timeout=self.timeout)
            return str(self._result(futures[name]).topic_id)

        return self._call(f"describe topic '{name}'", run)

    def describe_partitions(self, topics: Iterable[str]) -> dict[TopicPartition, Partition]:
        """Leader, replicas and ISR of every partition of these topics, asked of Kafka now."""
        names = sorted(set(topics))
        if not names:
            return {}

        def run() -> dict[TopicPartition, Partition]:
            out: dict[TopicPartition, Partition] = {}
            for start in range(0, len(names), 500):
                futures = self._admin_client().describe_topics(TopicCollection(names[start : start + 500]),
                                                               request_timeout=self.timeout)
                for name, fut in futures.items():
                    try:
                        d = self._result(fut)
                    except KafkaException as exc:
                        error = exc.args[0] if exc.args else None
                        if isinstance(error, KafkaError) and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                            continue  # deleted meanwhile: absent from the answer
                        raise
                    for p in d.partitions:
                        out[(name, p.id)] = Partition(
                            name, p.id, p.leader.id if p.leader is not None else -1,
                            shared_ids(r.id for r in p.replicas), shared_ids(r.id for r in p.isr),
                        )
            return out

        return self._call("describe topics", run)

    def topics_exist(self, topics: Iterable[str]) -> dict[str, bool]:
        """For each topic: does Kafka still have it? Asked of the controller-backed describe API, for
        names a metadata answer left out (a broker answering from a stale cache can)."""
        names = sorted(set(topics))

        def run() -> dict[str, bool]:
            out: dict[str, bool] = {}
            for start in range(0, len(names), 500):
                futures = self._admin_client().describe_topics(TopicCollection(names[start : start + 500]),
                                                               request_timeout=self.timeout)
                for name, fut in futures.items():
                    try:
                        self._result(fut)
                        out[name] = True
                    except KafkaException as exc:
                        error = exc.args[0] if exc.args else None
                        if isinstance(error, KafkaError) and error.code() in (KafkaError.UNKNOWN_TOPIC_OR_PART,
                                                                              KafkaError._UNKNOWN_TOPIC):
                            out[name] = False
                        else:
                            raise
            return out

        return self._call("describe topics", run) if names else {}
