"""What every read or write of a topic's messages starts from: a consumer that never joins its
group, the topic's partitions and their low and high watermarks."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

from console.gateway.client import ClusterGateway
from console.gateway.errors import ClusterUnavailable, NotFound
from console.gateway.types import TopicPartition

log = logging.getLogger(__name__)

# librdkafka requires a group id even for assign(); this one is never joined and never committed to.
BROWSER_GROUP = "kafka-console-browser"
GONE = {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC, KafkaError._UNKNOWN_PARTITION}
# Errors that end a read: the rest are reported by librdkafka while it retries on its own.
FATAL_READ = GONE | {KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED}
# A topic the cluster's controller has just created can be unknown to a broker for a moment (KRaft
# brokers learn it from the metadata log): asked again this often, up to this long, when the caller
# knows the topic exists.
CATCH_UP_DELAYS = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)


def browsing_consumer(gateway: ClusterGateway, partition_eof: bool = True) -> Consumer:
    conf: dict[str, Any] = {
        **gateway.config.librdkafka(),
        "group.id": BROWSER_GROUP,
        "client.id": "kafka-console-browser",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": partition_eof,
        # Retention may delete the start of the range meanwhile: carry on from what is left.
        "auto.offset.reset": "earliest",
        "allow.auto.create.topics": False,
        "fetch.wait.max.ms": 20,  # the end of a partition (EOF) is only known from an empty fetch: keep that short
        "max.partition.fetch.bytes": 4 * 1024 * 1024,
        "queued.max.messages.kbytes": 32 * 1024,  # prefetch bound: memory per scan stays modest
        # librdkafka waits 1 s by default before fetching again once its queue is full, which starves a
        # scan whose Python side is only a little slower than the fetch: retry almost at once instead.
        "fetch.queue.backoff.ms": 10,
        "socket.connection.setup.timeout.ms": int(gateway.timeout * 1000),
        "reconnect.backoff.max.ms": 1000,
        "log_level": 2,
        "error_cb": gateway.on_error,  # a failed connection's cause (causes.py)
        "throttle_cb": gateway.throttles.callback("message browser"),
    }
    return gateway._call("connect a message browser", lambda: Consumer(conf))


def close_quietly(consumer: Consumer) -> None:
    try:
        consumer.close()
    except (KafkaException, RuntimeError):
        log.debug("closing a browsing consumer failed", exc_info=True)


def topic_partitions(client: Consumer | Producer, gateway: ClusterGateway, topic: str, exists: bool = False) -> list[int]:
    """The topic's partition ids; NotFound with a sentence when the topic does not exist.
    `exists`: the cluster just said it does (its id was read), so a broker that does not know it
    yet is behind: it is asked again for a few seconds before the answer is NotFound."""

    def run() -> list[int]:
        delays = iter(CATCH_UP_DELAYS if exists else ())
        while True:
            try:
                md = client.list_topics(topic=topic, timeout=gateway.timeout)
            except KafkaException:
                client.poll(0)  # serve its error callbacks: the gateway names the cause from them
                raise
            tm = md.topics.get(topic)
            error = None if tm is None else tm.error
            if tm is None or (error is not None and error.code() in GONE):
                delay = next(delays, None)
                if delay is None:
                    raise NotFound(f"Topic '{topic}' does not exist on cluster '{gateway.name}'.")
                time.sleep(delay)
                continue
            if error is not None and error.code() != 0:
                raise KafkaException(error)
            return sorted(tm.partitions)

    return gateway._call(f"read the partitions of topic '{topic}'", run)


def choose(topic: str, available: list[int], wanted: Iterable[int] | None) -> list[int]:
    """The partitions asked for (every one when None); NotFound naming those the topic lacks."""
    if wanted is None:
        return available
    chosen = sorted(set(wanted))
    missing = [p for p in chosen if p not in available]
    if missing:
        which = ", ".join(map(str, missing))
        have = f"0-{available[-1]}" if available else "none"
        raise NotFound(f"Topic '{topic}' has no partition {which}: its partitions are {have}.")
    return chosen


def watermarks(gateway: ClusterGateway, topic: str, parts: list[int]) -> tuple[dict[int, int], dict[int, int]]:
    """The earliest and latest offset of each partition; ClusterUnavailable naming those with no answer."""
    request = [(topic, p) for p in parts]
    low: dict[TopicPartition, int] = {}
    high: dict[TopicPartition, int] = {}
    deadline = time.monotonic() + gateway.timeout
    for attempt in range(3):
        # A partition whose leader just moved (or a topic just re-created) fails until metadata is
        # refreshed; a short retry hides that instead of failing the page.
        ask = [tp for tp in request if tp not in low or tp not in high]
        if attempt:
            if time.monotonic() + 0.5 > deadline:
                break
            time.sleep(0.5)
        try:
            low.update(gateway.list_offsets(ask, "earliest"))
            high.update(gateway.list_offsets(ask, "latest"))
        except ClusterUnavailable:
            if attempt == 2:
                raise
        if all(tp in low and tp in high for tp in request):
            break
    missing = [p for p in parts if (topic, p) not in low or (topic, p) not in high]
    if missing:
        raise ClusterUnavailable(
            f"Partition(s) {', '.join(map(str, missing))} of topic '{topic}' did not answer on cluster '{gateway.name}' "
            "(no leader?); choose other partitions or try again."
        )
    return {p: low[(topic, p)] for p in parts}, {p: high[(topic, p)] for p in parts}
