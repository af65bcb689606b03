"""Producing: one message written and confirmed (produce), and the console's own records sent
without waiting (RecordSink)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from console.gateway.client import ClusterGateway
from console.gateway.config import ClusterConfig
from console.gateway.errors import ClusterUnavailable, InvalidRequest
from console.gateway.messages.reading import choose, topic_partitions
from console.gateway.messages.records import Produced

log = logging.getLogger(__name__)

_producers: dict[ClusterConfig, Producer] = {}
_producers_lock = threading.Lock()


def _producer(gateway: ClusterGateway) -> Producer:
    with _producers_lock:
        producer = _producers.get(gateway.config)
        if producer is None:
            timeout_ms = int(gateway.timeout * 1000)
            conf: dict[str, Any] = {
                **gateway.config.librdkafka(),
                "client.id": "kafka-console",
                "linger.ms": 0,  # one message at a time, sent at once
                "acks": "all",
                "message.timeout.ms": timeout_ms,
                "request.timeout.ms": timeout_ms,
                "socket.connection.setup.timeout.ms": timeout_ms,
                "allow.auto.create.topics": False,  # a typo must not create a topic
                "reconnect.backoff.max.ms": 1000,
                "log_level": 2,
                "error_cb": gateway.on_error,  # a failed connection's cause (causes.py)
                "throttle_cb": gateway.throttles.callback("producer"),
            }
            producer = _producers[gateway.config] = gateway._call("connect a producer", lambda: Producer(conf))
            gateway.keep_drained(producer)
        return producer


# The id of each topic the cached producer has written to. librdkafka keeps a deleted and re-created
# topic's old partition leaders (the new topic's leader epochs start again at 0, and it ignores
# epochs older than the ones it saw: confluentinc/librdkafka#4898), so its messages time out while
# the new leaders are elsewhere. A topic whose id changed gets a new producer.
_topic_ids: dict[tuple[ClusterConfig, str], str] = {}


def _producer_for(gateway: ClusterGateway, topic: str) -> Producer:
    current = gateway.topic_id(topic)
    key = (gateway.config, topic)
    stale = None
    with _producers_lock:
        seen = _topic_ids.get(key)
        if seen is not None and seen != current:
            log.info("topic '%s' on cluster '%s' was re-created: a new producer", topic, gateway.name)
            stale = _producers.pop(gateway.config, None)
            for other in [k for k in _topic_ids if k[0] == gateway.config]:
                del _topic_ids[other]
        _topic_ids[key] = current
    if stale is not None:
        gateway.forget_client(stale)
        stale.flush(0)
    return _producer(gateway)


def produce(gateway: ClusterGateway, topic: str, value: bytes | None, key: bytes | None = None,
            headers: list[tuple[str, bytes]] | None = None, partition: int | None = None) -> Produced:
    """Write one message and wait for the cluster to confirm it (at most the gateway's timeout)."""
    action = f"produce to topic '{topic}'"
    started = time.time()
    producer = _producer_for(gateway, topic)  # (NotFound when the cluster does not have the topic)
    available = topic_partitions(producer, gateway, topic, exists=True)
    if partition is not None:
        choose(topic, available, [partition])
    outcome: list[tuple[KafkaError | None, Any]] = []
    delivered = threading.Event()

    def on_delivery(err: KafkaError | None, msg: Any) -> None:
        outcome.append((err, msg))
        delivered.set()

    extra: dict[str, Any] = {"partition": partition} if partition is not None else {}
    hdrs: list[tuple[str, str | bytes | None]] | None = list(headers) if headers else None
    try:
        producer.produce(topic, value=value, key=key, headers=hdrs, on_delivery=on_delivery, **extra)
    except BufferError:
        raise ClusterUnavailable(f"Cluster '{gateway.name}' is not taking messages fast enough; try again in a moment.") from None
    except KafkaException as exc:
        raise _produce_error(exc, gateway, action, value) from exc
    deadline = time.monotonic() + gateway.timeout + 1
    while not delivered.is_set():
        left = deadline - time.monotonic()
        if left <= 0:
            raise ClusterUnavailable(
                f"Cluster '{gateway.name}' did not confirm the message to topic '{topic}' within {gateway.timeout:g} s; "
                "it may still be written."
            )
        producer.poll(min(0.1, left))
    err, msg = outcome[0]
    if err is not None:
        raise _produce_error(KafkaException(err), gateway, action, value)
    _, ts = msg.timestamp()
    producer.poll(0)  # (hands over a throttle the broker reported with its answer)
    held = gateway.throttles.since(started, "producer")
    return Produced(topic=msg.topic(), partition=msg.partition(), offset=msg.offset(), timestamp_ms=ts,
                    throttled_ms=max((e.throttle_ms for e in held), default=0))


def _produce_error(exc: KafkaException, gateway: ClusterGateway, action: str, value: bytes | None) -> Exception:
    err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
    if err is not None and err.code() in (KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE):
        size = 0 if value is None else len(value)
        return InvalidRequest(f"Could not {action}: the message ({size:,} bytes of value) is larger than the cluster accepts.")
    return gateway.translate(exc, action)


class RecordSink:
    """A fire-and-forget writer for the console's own records (the analytics samples): batched and
    compressed, never waited on; delivery failures are counted and the last one is kept in words."""

    def __init__(self, gateway: ClusterGateway, topic: str) -> None:
        self.gateway, self.topic = gateway, topic
        self.delivered = 0
        self.failed = 0
        self.last_error: str | None = None
        conf: dict[str, Any] = {
            **gateway.config.librdkafka(),
            "client.id": "kafka-console-samples",
            "linger.ms": 200,
            "compression.type": "lz4",
            "acks": "all",
            "enable.idempotence": True,
            "message.timeout.ms": 60_000,
            "queue.buffering.max.kbytes": 65536,
            "allow.auto.create.topics": False,
            "reconnect.backoff.max.ms": 1000,
            "log_level": 2,
        }
        self.producer = gateway._call("connect a producer", lambda: Producer(conf))

    def _on_delivery(self, err: KafkaError | None, msg: Any) -> None:
        if err is None:
            self.delivered += 1
        else:
            self.failed += 1
            self.last_error = err.str()

    def send(self, records: Iterable[tuple[bytes, bytes]]) -> int:
        """Queue the records; returns how many were refused at once (the local queue is full)."""
        refused = 0
        for key, value in records:
            try:
                self.producer.produce(self.topic, value=value, key=key, on_delivery=self._on_delivery)
            except BufferError:
                refused += 1
                self.producer.poll(0)
            except KafkaException as exc:
                refused += 1
                self.last_error = str(exc)
        self.producer.poll(0)
        return refused

    def close(self, timeout: float = 5.0) -> None:
        self.producer.flush(timeout)
