"""Reading and parsing offset samples (format: analytics/records.py, analytics/README.md)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import orjson
import pyarrow as pa

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, IntegerType, LongType, StringType, StructField, StructType

from analytics.records import FORMAT_VERSION, GROUP, TOPIC

SAMPLE_SCHEMA = StructType([
    StructField("kind", StringType()),
    StructField("cluster", StringType()),
    StructField("topic", StringType()),
    StructField("group_id", StringType()),
    StructField("time_ms", LongType()),
    StructField("members", IntegerType()),
    StructField("end", ArrayType(LongType())),
    StructField("bytes", ArrayType(LongType())),
    StructField("committed", ArrayType(LongType())),
    StructField("record", IntegerType()),
])
_ARROW_SCHEMA = pa.schema([
    ("kind", pa.string()), ("cluster", pa.string()), ("topic", pa.string()), ("group_id", pa.string()),
    ("time_ms", pa.int64()), ("members", pa.int32()), ("end", pa.list_(pa.int64())), ("bytes", pa.list_(pa.int64())),
    ("committed", pa.list_(pa.int64())), ("record", pa.int32()),
])

def read_samples(spark: SparkSession, bootstrap_servers: str, topic: str, start_ms: int | None = None,
                 options: Mapping[str, str] | None = None) -> DataFrame:
    """The sample topic's records (Kafka connector's columns: key, value, timestamp, ...), as a batch.

    From `start_ms` (record timestamp) when given, else from the earliest retained record, to the
    end. `options` passes connector options through, e.g. {"kafka.security.protocol": "SSL"}.
    Needs the connector jars (`make spark-jars`); nothing is read until an action runs.
    """
    reader = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap_servers)
        .option("subscribe", topic)
        .option("endingOffsets", "latest")
        # Retention may delete what was planned before it is read: take what is left.
        .option("failOnDataLoss", "false")
    )
    if start_ms is None:
        reader = reader.option("startingOffsets", "earliest")
    else:
        # A partition with nothing at or after the time starts at its end (reads nothing) instead of failing.
        reader = reader.option("startingTimestamp", str(int(start_ms))).option("startingOffsetsByTimestampStrategy", "latest")
    for key, value in (options or {}).items():
        reader = reader.option(key, value)
    return reader.load()


def parse_samples(raw: DataFrame, start_ms: int | None = None, end_ms: int | None = None) -> DataFrame:
    """The sample records as rows (SAMPLE_SCHEMA): one per topic record, one per group record and topic.

    kind, cluster, topic, group_id, time_ms, members, end, bytes (topic records: arrays indexed by
    partition), committed (group records: the group's committed offsets on `topic`, indexed by
    partition), record (1 on the first row of each record, so summing it counts records; a group
    record without offsets is one row with no topic). `raw` needs a `value` column (binary or string
    JSON), as the Kafka connector gives. Records that are not JSON, of another format version, or
    without kind, cluster, name or time are dropped; `start_ms` <= time_ms < `end_ms` when given.
    Decoding runs in Python (orjson) on Arrow batches: Spark's own JSON reader takes several times
    longer on records that are mostly long arrays of numbers.
    """
    low = None if start_ms is None else int(start_ms)
    high = None if end_ms is None else int(end_ms)

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield decode_values(batch.column(0).to_pylist(), low, high)

    return raw.select(F.col("value")).mapInArrow(decode, SAMPLE_SCHEMA)


def decode_values(values: list[bytes | str | None], start_ms: int | None = None, end_ms: int | None = None) -> pa.RecordBatch:
    """Sample record values (JSON) as a batch of SAMPLE_SCHEMA rows, skipping what is not a sample."""
    try:
        return _decode(values, start_ms, end_ms, strict=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        # Some array holds something that is not an offset: check every value this time.
        return _decode(values, start_ms, end_ms, strict=True)


def _decode(values: list[bytes | str | None], start_ms: int | None, end_ms: int | None, strict: bool) -> pa.RecordBatch:
    columns: dict[str, list[Any]] = {f.name: [] for f in _ARROW_SCHEMA}
    offsets_of = _checked_offsets if strict else _offsets

    def add(kind: str, cluster: str, topic: str | None, group: str | None, time_ms: int, members: Any,
            end: Any, sizes: Any, committed: Any, record: int) -> None:
        for name, value in (("kind", kind), ("cluster", cluster), ("topic", topic), ("group_id", group),
                            ("time_ms", time_ms), ("members", members), ("end", end), ("bytes", sizes),
                            ("committed", committed), ("record", record)):
            columns[name].append(value)

    for value in values:
        if value is None:
            continue
        try:
            doc = orjson.loads(value)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(doc, dict) or doc.get("v") != FORMAT_VERSION:
            continue
        cluster, time_ms, kind = doc.get("cluster"), doc.get("time"), doc.get("kind")
        if not isinstance(cluster, str) or not _is_int(time_ms):
            continue
        if (start_ms is not None and time_ms < start_ms) or (end_ms is not None and time_ms >= end_ms):
            continue
        if kind == TOPIC and isinstance(doc.get("topic"), str):
            add(TOPIC, cluster, doc["topic"], None, time_ms, None, offsets_of(doc.get("end")), offsets_of(doc.get("bytes")),
                None, 1)
        elif kind == GROUP and isinstance(doc.get("group"), str):
            members = doc.get("members") if _is_int(doc.get("members")) else None
            offsets = doc.get("offsets")
            by_topic = [(t, offsets_of(o)) for t, o in offsets.items()] if isinstance(offsets, dict) else []
            for i, (topic, committed) in enumerate(by_topic or [(None, None)]):
                add(GROUP, cluster, topic, doc["group"], time_ms, members, None, None, committed, 1 if i == 0 else 0)
    return pa.RecordBatch.from_pydict(columns, schema=_ARROW_SCHEMA)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _offsets(value: Any) -> list[Any] | None:
    return value if isinstance(value, list) else None


def _checked_offsets(value: Any) -> list[int | None] | None:
    """A list of offsets (or sizes) with null for the unknown; anything else is no list."""
    if isinstance(value, list) and all(v is None or (_is_int(v) and 0 <= v < 2**63) for v in value):
        return value
    return None


def topic_offsets(samples: DataFrame) -> DataFrame:
    """End offsets: cluster, topic, partition, time_ms, end_offset, bytes (null when not known).

    One row per partition and sample time; unknown end offsets are left out, a repeated record
    counts once.
    """
    exploded = samples.filter(F.col("kind") == TOPIC).select(
        "cluster", "topic", "time_ms", "bytes", F.posexplode("end").alias("partition", "end_offset"))
    return (
        exploded.filter(F.col("end_offset").isNotNull())
        .select("cluster", "topic", "partition", "time_ms", "end_offset",
                F.get(F.col("bytes"), F.col("partition")).alias("bytes"))
        .dropDuplicates(["cluster", "topic", "partition", "time_ms"])
    )


def group_offsets(samples: DataFrame) -> DataFrame:
    """Committed offsets: cluster, group_id, topic, partition, time_ms, committed, members.

    One row per group, partition and sample time with a committed offset.
    """
    exploded = samples.filter((F.col("kind") == GROUP) & F.col("topic").isNotNull()).select(
        "cluster", "group_id", "topic", "time_ms", "members", F.posexplode("committed").alias("partition", "committed"))
    return (
        exploded.filter(F.col("committed").isNotNull())
        .select("cluster", "group_id", "topic", "partition", "time_ms", "committed", "members")
        .dropDuplicates(["cluster", "group_id", "topic", "partition", "time_ms"])
    )
