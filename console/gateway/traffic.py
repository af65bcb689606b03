"""Clients that make traffic on a cluster (the demo's producers and group members), not browsing."""

from __future__ import annotations

from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, ShareConsumer

from console.gateway.connections import Connections
from console.gateway.refusals import principal
from console.gateway.translate import translate


class MessageProducer:
    """A cached librdkafka producer for one cluster."""

    def __init__(self, gateway: Connections, **extra: Any) -> None:
        self._cluster = gateway.name
        self._principal = principal(gateway.config)
        self._producer = Producer({**gateway.config.librdkafka(), "client.id": "kafka-console", "linger.ms": 20,
                                   "log_level": 2, **extra})

    def send(self, topic: str, value: bytes, key: bytes | None = None) -> None:
        try:
            self._producer.produce(topic, value=value, key=key)
        except BufferError:
            self._producer.poll(0.5)
            self._producer.produce(topic, value=value, key=key)
        except KafkaException as exc:
            raise translate(exc, self._cluster, f"produce to '{topic}'", self._principal) from exc
        self._producer.poll(0)

    def flush(self, timeout: float = 10.0) -> int:
        return int(self._producer.flush(timeout))


class GroupConsumer:
    """A consumer in a consumer group, committing offsets explicitly."""

    def __init__(self, gateway: Connections, group: str, topics: list[str], **extra: Any) -> None:
        self._cluster = gateway.name
        self._principal = principal(gateway.config)
        self._consumer = Consumer({**gateway.config.librdkafka(), "group.id": group, "client.id": group,
                                   "enable.auto.commit": False, "auto.offset.reset": "earliest", "log_level": 2, **extra})
        self._consumer.subscribe(topics)

    def poll(self, max_messages: int, timeout: float) -> int:
        """Consume up to max_messages; returns how many arrived (the demo does not need contents)."""
        try:
            messages = self._consumer.consume(num_messages=max_messages, timeout=timeout)
        except KafkaException as exc:
            raise translate(exc, self._cluster, "consume", self._principal) from exc
        return sum(1 for m in messages if m.error() is None)

    def commit(self) -> None:
        try:
            self._consumer.commit(asynchronous=False)
        except KafkaException as exc:
            if exc.args and isinstance(exc.args[0], KafkaError) and exc.args[0].code() == KafkaError._NO_OFFSET:
                return  # nothing consumed since the last commit
            raise translate(exc, self._cluster, "commit offsets", self._principal) from exc

    def close(self) -> None:
        self._consumer.close()


class ShareGroupConsumer:
    """A member of a share group (KIP-932): records are acknowledged implicitly by the next poll."""

    def __init__(self, gateway: Connections, group: str, topics: list[str]) -> None:
        self._cluster = gateway.name
        self._principal = principal(gateway.config)
        self._consumer = ShareConsumer({**gateway.config.librdkafka(), "group.id": group, "client.id": group, "log_level": 2})
        self._consumer.subscribe(topics)

    def poll(self, timeout: float) -> int:
        try:
            return len(self._consumer.poll(timeout))
        except KafkaException as exc:
            raise translate(exc, self._cluster, "consume", self._principal) from exc

    def close(self) -> None:
        self._consumer.close()
