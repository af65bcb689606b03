"""A live tail: the messages written to a topic after it began, pushed batch by batch."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from confluent_kafka import OFFSET_END, KafkaException
from confluent_kafka import TopicPartition as RdTopicPartition

from console.gateway.client import ClusterGateway
from console.gateway.messages.reading import FATAL_READ, browsing_consumer, choose, close_quietly, topic_partitions
from console.gateway.messages.records import Record, by_time, to_record

log = logging.getLogger(__name__)

_TAIL_POLL_S = 0.25


def tail(gateway: ClusterGateway, topic: str, partitions: tuple[int, ...] | None, on_records: Callable[[list[Record]], bool],
         stop: threading.Event, matcher: Callable[[Record], bool] | None = None,
         raw_matcher: Callable[[bytes | None, bytes | None], bool] | None = None,
         on_ready: Callable[[], None] | None = None) -> None:
    """Push messages written after the call began to on_records, until `stop` is set or it returns False.

    Each batch is sorted by (timestamp, partition, offset); empty batches are not pushed. on_ready is
    called once the end offsets are taken: every message written after that will be pushed.
    """
    action = f"follow topic '{topic}'"
    consumer = browsing_consumer(gateway, partition_eof=False)
    try:
        parts = choose(topic, topic_partitions(consumer, gateway, topic), partitions)
        high = gateway.list_offsets([(topic, p) for p in parts], "latest")
        # A partition whose end could not be read starts wherever its end is once it answers.
        consumer.assign([RdTopicPartition(topic, p, high.get((topic, p), OFFSET_END)) for p in parts])
        if on_ready is not None:
            on_ready()
        while not stop.is_set():
            try:
                batch: list[Any] = consumer.consume(num_messages=1000, timeout=_TAIL_POLL_S)
            except KafkaException as exc:
                raise gateway.translate(exc, action) from exc
            records = []
            for m in batch:
                err = m.error()
                if err is not None:
                    if err.code() in FATAL_READ or err.fatal():
                        raise gateway.translate(KafkaException(err), action)
                    log.debug("consumer error while following %s: %s", topic, err)
                    continue
                key, value = m.key(), m.value()
                if raw_matcher is not None and not raw_matcher(key, value):
                    continue
                rec = to_record(m, key, value)
                if matcher is None or matcher(rec):
                    records.append(rec)
            if records:
                records.sort(key=by_time)
                if on_records(records) is False:
                    return
    finally:
        close_quietly(consumer)
