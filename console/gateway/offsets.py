"""Partition offsets: the earliest and latest offset of each partition, and offsets by time."""

from __future__ import annotations

import time
from collections.abc import Iterable
from concurrent.futures import Future, as_completed
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import TopicPartition as RdTopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from console.gateway.connections import Connections
from console.gateway.errors import ClusterUnavailable, NotFound
from console.gateway.types import TopicPartition

# Errors that mean the client's idea of leaders or partitions is out of date: refresh and retry.
_STALE_METADATA = {
    "NOT_LEADER_FOR_PARTITION",
    "NOT_LEADER_OR_FOLLOWER",
    "LEADER_NOT_AVAILABLE",
    "UNKNOWN_TOPIC_OR_PART",
    "UNKNOWN_LEADER_EPOCH",
    "FENCED_LEADER_EPOCH",
    "REPLICA_NOT_AVAILABLE",
    "OFFSET_NOT_AVAILABLE",
    "_TRANSPORT",
    "_TIMED_OUT",
    "REQUEST_TIMED_OUT",
    "NOT_COORDINATOR",
    "COORDINATOR_NOT_AVAILABLE",
    "BROKER_NOT_AVAILABLE",
    "_UNKNOWN_PARTITION",
    "_UNKNOWN_TOPIC",
    # librdkafka's ListOffsets when its cached metadata gives none of the partitions asked a leader
    # ("no leaders found"): it sends nothing and keeps answering so until that cache is refreshed
    # (every five minutes by default), long after a restarted broker led them again.
    "_NOENT",
}
# Partitions per ListOffsets request (OffsetReads._offsets_once): what one answer holds at once.
OFFSETS_CHUNK = 10_000


class OffsetReads(Connections):
    """ListOffsets, batched per leader by librdkafka, retried once on a fresh client after stale metadata."""

    def list_offsets(self, partitions: Iterable[TopicPartition], which: str) -> dict[TopicPartition, int]:
        """Earliest or latest offset of each partition; librdkafka batches them per leader. The
        answer is keyed by the caller's own (topic, partition) objects, so a caller that shares one
        tuple per partition (the sampling process) is handed no copy of them on each pass.

        Partitions whose leader cannot answer are left out rather than failing the whole call.
        """
        spec = int((OffsetSpec.latest() if which == "latest" else OffsetSpec.earliest())._value)
        asked = [tp if type(tp) is tuple else (tp[0], tp[1]) for tp in partitions]
        if not asked:
            return {}

        def run() -> dict[TopicPartition, int]:
            deadline = time.monotonic() + self.timeout
            result: dict[TopicPartition, int] = {}
            pending = asked
            errors: dict[str, int] = {}
            while True:
                retry, errors = self._offsets_once(pending, spec, deadline, result)
                # A stale leader: ask a fresh client once more, inside this call's deadline.
                if not retry or time.monotonic() + 0.2 > deadline or not self.renew_admin():
                    break
                self.retries += 1
                pending = retry
            if not result:
                why = ", ".join(f"{n} x{c}" for n, c in sorted(errors.items()))
                raise ClusterUnavailable(f"Cluster '{self.name}' returned no offsets ({len(set(asked))} partitions failed: {why}).")
            return result

        return self._call(f"list {which} offsets", run)

    def _offsets_once(self, asked: list[TopicPartition], spec: int, deadline: float,
                      result: dict[TopicPartition, int]) -> tuple[list[TopicPartition], dict[str, int]]:
        """One ListOffsets round over `asked` (offsets into `result`, keyed by the asked objects):
        the partitions to ask again (a stale leader) and the errors by name.

        Sent OFFSETS_CHUNK partitions a request, every request at once (one deadline), each with one
        future for its whole answer, read as it completes. AdminClient.list_offsets makes a
        concurrent.futures.Future per partition, which on a large cluster holds far more memory than
        the answer itself; so the requests go to the client's C call, as AdminClient.list_offsets
        sends them (its `_value` per spec, `_TopicPartition`s)."""
        admin = self._admin_client()
        retry: list[TopicPartition] = []
        errors: dict[str, int] = {}

        def failed(name: str, tps: Iterable[TopicPartition]) -> None:
            for tp in tps:
                errors[name] = errors.get(name, 0) + 1
                if name in _STALE_METADATA:
                    retry.append(tp)

        topics = {t for t, _ in asked}
        cached = self._cached_topics(admin, topics, deadline)
        if len(cached) < len(topics):  # deleted: never asked (librdkafka would wait for them: see _cached_topics)
            failed("_UNKNOWN_TOPIC", dict.fromkeys(tp for tp in asked if tp[0] not in cached))
            asked = [tp for tp in asked if tp[0] in cached]
        timeout = max(0.5, deadline - time.monotonic())
        chunks: dict[Future[Any], list[TopicPartition]] = {}
        for start in range(0, len(asked), OFFSETS_CHUNK):
            chunk = asked[start:start + OFFSETS_CHUNK]
            future: Future[Any] = Future()
            future.set_running_or_notify_cancel()
            super(AdminClient, admin).list_offsets(  # type: ignore[misc]
                [RdTopicPartition(t, int(p), spec) for t, p in dict.fromkeys(chunk)], future, request_timeout=timeout)
            chunks[future] = chunk
        try:
            for future in as_completed(list(chunks), timeout=timeout + 1):
                chunk = chunks.pop(future)
                try:
                    answers = future.result()
                except KafkaException as exc:  # the whole request failed
                    failed(exc.args[0].name() if exc.args and isinstance(exc.args[0], KafkaError) else "UNKNOWN", dict.fromkeys(chunk))
                    continue
                own = {tp: tp for tp in chunk}  # (the caller's objects, found by value)
                for tp, info in answers.items():
                    key = own.get((tp.topic, tp.partition))
                    if key is None:
                        continue
                    if isinstance(info, KafkaError):
                        failed(info.name(), (key,))
                    else:
                        result[key] = info.offset
                del answers, own
        except FutureTimeout:
            for chunk in chunks.values():
                failed("_TIMED_OUT", dict.fromkeys(chunk))
        return retry, errors

    def offsets_for_time(self, partitions: Iterable[TopicPartition], timestamp_ms: int) -> dict[TopicPartition, int]:
        """The first offset at or after a time in each partition (the end offset when there is none)."""
        request = {RdTopicPartition(t, p): OffsetSpec.for_timestamp(timestamp_ms) for t, p in partitions}
        if not request:
            return {}

        def run() -> dict[TopicPartition, int]:
            admin = self._admin_client()
            topics = {tp.topic for tp in request}
            absent = sorted(topics - self._cached_topics(admin, topics, time.monotonic() + self.timeout))
            if absent:  # (never asked: see _cached_topics)
                raise NotFound(f"Topic '{absent[0]}' does not exist on cluster '{self.name}'.")
            futures = admin.list_offsets(request, request_timeout=self.timeout)
            found = {(tp.topic, tp.partition): self._result(f).offset for tp, f in futures.items()}
            missing = [k for k, v in found.items() if v < 0]
            if missing:  # no message at or after the time: the end of the log, as Kafka's own tool does
                ends = self.list_offsets(missing, "latest")
                found.update({k: ends.get(k, 0) for k in missing})
            return found

        return self._call("look up offsets by time", run)
