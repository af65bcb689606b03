"""The remote size index (topics_app/remote_sizes.py): the bytes of segments copied and not yet deleted,
per partition, as the remote log metadata's records say, in the order Kafka writes them."""

from __future__ import annotations

from typing import Any

from topics_app.remote_sizes import (
    COPY_FINISHED,
    COPY_STARTED,
    DELETE_FINISHED,
    DELETE_STARTED,
    PARTITION_DELETE,
    SEGMENT,
    UPDATE,
    RemoteIndex,
)


def tip(topic: str, partition: int, topic_id: str = "id-a") -> dict[str, Any]:
    return {"name": topic, "id": topic_id, "partition": partition}


def copied(index: RemoteIndex, segment: str, topic: str, partition: int, size: int, at: int, topic_id: str = "id-a") -> None:
    sid = {"topic_id_partition": tip(topic, partition, topic_id), "id": segment}
    index.apply(SEGMENT, {"remote_log_segment_id": sid, "segment_size_in_bytes": size, "remote_log_segment_state": COPY_STARTED,
                          "event_timestamp_ms": at})
    index.apply(UPDATE, {"remote_log_segment_id": sid, "remote_log_segment_state": COPY_FINISHED, "event_timestamp_ms": at + 1})


def update(index: RemoteIndex, segment: str, state: int, topic: str = "t", partition: int = 0) -> None:
    index.apply(UPDATE, {"remote_log_segment_id": {"topic_id_partition": tip(topic, partition), "id": segment},
                         "remote_log_segment_state": state, "event_timestamp_ms": 99})


def test_copied_segments_count_until_their_deletion_finishes() -> None:
    index = RemoteIndex()
    copied(index, "s1", "t", 0, 1000, 1)
    copied(index, "s2", "t", 0, 500, 2)
    copied(index, "s3", "t", 1, 700, 3)
    sid = {"topic_id_partition": tip("t", 1), "id": "s4"}
    index.apply(SEGMENT, {"remote_log_segment_id": sid, "segment_size_in_bytes": 300, "remote_log_segment_state": COPY_STARTED,
                          "event_timestamp_ms": 4})
    assert index.sizes(["t"]) == {"t": {0: {"bytes": 1500, "segments": 2, "copying_bytes": 0},
                                        1: {"bytes": 700, "segments": 1, "copying_bytes": 300}}}
    update(index, "s1", DELETE_STARTED)
    assert index.sizes(["t"])["t"][0]["bytes"] == 1500  # (still there until the deletion finishes)
    update(index, "s1", DELETE_FINISHED)
    assert index.sizes(["t"])["t"][0] == {"bytes": 500, "segments": 1, "copying_bytes": 0}
    update(index, "unknown", COPY_FINISHED)  # (an update whose segment record was never read: left alone)
    assert index.sizes(["other"]) == {}


def test_a_deleted_partition_loses_its_segments_and_a_recreated_topic_counts_its_newest_id_only() -> None:
    index = RemoteIndex()
    copied(index, "old0", "t", 0, 1000, 1, topic_id="id-old")
    copied(index, "old1", "t", 1, 1000, 1, topic_id="id-old")
    copied(index, "new0", "t", 0, 10, 50, topic_id="id-new")
    assert index.sizes(["t"]) == {"t": {0: {"bytes": 10, "segments": 1, "copying_bytes": 0}}}
    for state in (0, 1, 2):  # marked, started, finished
        index.apply(PARTITION_DELETE, {"topic_id_partition": tip("t", 1, "id-old"), "remote_partition_delete_state": state,
                                       "event_timestamp_ms": 60})
    assert {s.partition for s in index.segments.values() if s.topic_id == "id-old"} == {0}


def test_records_are_decoded_by_kafkas_own_schemas_in_their_frame() -> None:
    """A record framed as Kafka frames them (frame version 1, api key, version: unsigned varints) comes
    back with its fields by Kafka's schema; another frame version or an unknown api key is not read."""
    import uuid

    from django.conf import settings
    from kafka.protocol.schemas.fields.codecs.types import UnsignedVarInt32

    from console.gateway import remote_log

    struct = remote_log._structs(settings.KAFKA_LIB_DIR)[SEGMENT]
    fields = {"remote_log_segment_id": {"topic_id_partition": {"name": "orders", "id": uuid.UUID(int=7), "partition": 3},
                                        "id": uuid.UUID(int=9)},
              "start_offset": 0, "end_offset": 103, "broker_id": 2, "max_timestamp_ms": 5, "event_timestamp_ms": 6,
              "segment_leader_epochs": [{"leader_epoch": 0, "offset": 0}], "segment_size_in_bytes": 1_048_000,
              "custom_metadata": None, "remote_log_segment_state": COPY_STARTED, "txn_index_empty": True}
    body = struct.encode(fields, version=0, compact=True, tagged=True)

    def framed(frame: int, key: int) -> bytes:
        return b"".join(UnsignedVarInt32.encode(n) for n in (frame, key, 0)) + body

    found = remote_log.decode(framed(1, SEGMENT))
    assert found is not None and found[0] == SEGMENT
    index = RemoteIndex()
    index.apply(*found)
    assert index.sizes(["orders"]) == {"orders": {3: {"bytes": 0, "segments": 0, "copying_bytes": 1_048_000}}}
    assert remote_log.decode(framed(2, SEGMENT)) is None and remote_log.decode(framed(1, 3)) is None


def test_a_record_written_after_the_read_began_is_left_for_the_next_read(monkeypatch: Any) -> None:
    """The read goes to the end each partition had when it began; a record past it that arrives in the
    same batch is not applied, and the position stays before it, so the next read applies it."""
    from types import SimpleNamespace

    from console.gateway import remote_log

    class Message:
        def __init__(self, partition: int, offset: int) -> None:
            self._p, self._o = partition, offset

        def error(self) -> None:
            return None

        def partition(self) -> int:
            return self._p

        def offset(self) -> int:
            return self._o

        def value(self) -> bytes:
            return f"{self._p}:{self._o}".encode()

    class Consumer:
        def __init__(self, batches: list[list[Message]]) -> None:
            self.batches = batches
            self.assigned: list[tuple[int, int]] = []

        def assign(self, tps: list[Any]) -> None:
            self.assigned = [(tp.partition, tp.offset) for tp in tps]

        def consume(self, num_messages: int, timeout: float) -> list[Message]:
            return self.batches.pop(0) if self.batches else []

    def run(batches: list[list[Message]], positions: dict[int, int], high: dict[int, int]) -> tuple[dict[int, int], list[str]]:
        consumer = Consumer(batches)
        monkeypatch.setattr(remote_log, "browsing_consumer", lambda gw: consumer)
        monkeypatch.setattr(remote_log, "close_quietly", lambda c: None)
        monkeypatch.setattr(remote_log, "topic_partitions", lambda c, gw, topic: [0, 1])
        monkeypatch.setattr(remote_log, "watermarks", lambda gw, topic, parts: ({0: 0, 1: 0}, high))
        monkeypatch.setattr(remote_log, "_structs", lambda lib: {})
        monkeypatch.setattr(remote_log, "decode", lambda value: (SEGMENT, {"seen": value.decode()}))
        applied: list[str] = []
        gateway: Any = SimpleNamespace(timeout=1.0, name="x")
        done = remote_log.read(gateway, positions, lambda key, f: applied.append(f["seen"]))
        return done, applied

    done, applied = run([[Message(0, 0), Message(1, 0), Message(0, 1), Message(0, 2)]], {}, {0: 2, 1: 1})
    assert applied == ["0:0", "1:0", "0:1"] and done == {0: 2, 1: 1}  # (0:2 was written after the read began)
    done, applied = run([[Message(0, 2)]], done, {0: 3, 1: 1})
    assert applied == ["0:2"] and done == {0: 3, 1: 1}
