"""The messages a browse returns and where a produced message was written."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME

TimestampType = Literal["CreateTime", "LogAppendTime", "NoTimestamp"]

_TIMESTAMP_TYPES: dict[int, TimestampType] = {TIMESTAMP_CREATE_TIME: "CreateTime", TIMESTAMP_LOG_APPEND_TIME: "LogAppendTime"}


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    timestamp_ms: int  # -1 when the message has no timestamp
    timestamp_type: TimestampType
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    key_size: int
    value_size: int


@dataclass(frozen=True)
class Produced:
    """Where a produced message was written."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    throttled_ms: int = 0  # how long Kafka held the console back after it, by a quota (0: not at all)


def by_time(r: Record) -> tuple[int, int, int]:
    """The order records are shown in: by timestamp, then partition and offset."""
    return (r.timestamp_ms, r.partition, r.offset)


def to_record(m: Any, key: bytes | None, value: bytes | None) -> Record:
    """A librdkafka message as a Record (its key and value passed in, as the caller has read them)."""
    ts_type, ts = m.timestamp()
    headers = m.headers()
    return Record(
        topic=m.topic(),
        partition=m.partition(),
        offset=m.offset(),
        timestamp_ms=ts if ts_type in _TIMESTAMP_TYPES else -1,
        timestamp_type=_TIMESTAMP_TYPES.get(ts_type, "NoTimestamp"),
        key=key,
        value=value,
        headers=tuple(headers) if headers else (),
        key_size=0 if key is None else len(key),
        value_size=0 if value is None else len(value),
    )
