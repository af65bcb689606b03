"""Reading and decoding offset samples (format: analytics/records.py, analytics/README.md).

The records are decoded into **chunks**: one row per topic (or group and topic) holding up to
CHUNK_SAMPLES consecutive samples as numpy matrices in binary columns (samples x partitions, int64,
UNKNOWN = -1 where a value is null), not one row per partition and sample. An hour of 10,000
partitions sampled every second is 36 million offsets: as rows Spark would sort and shuffle 36
million of them; as chunks it moves a few hundred binary values, and the per-topic pass (series.py)
works on the matrices with numpy. `topic_offsets` and `group_offsets` give the per-partition rows
for the jobs that want them.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType

from analytics.records import GROUP, READABLE_VERSIONS, TOPIC

UNKNOWN = -1  # offsets, sizes and member counts are never negative
CHUNK_SAMPLES = 1024

SAMPLE_SCHEMA = StructType([
    StructField("kind", StringType()),
    StructField("cluster", StringType()),
    StructField("topic", StringType()),  # null on a group chunk of records without offsets
    StructField("group_id", StringType()),
    StructField("records", IntegerType()),  # records counted here (a group record once, with its first topic)
    StructField("samples", IntegerType()),
    StructField("width", IntegerType()),  # partitions
    StructField("first_ms", LongType()),
    StructField("last_ms", LongType()),
    StructField("times", BinaryType()),  # int64[samples]
    StructField("values", BinaryType()),  # packed int64[samples x width]: end offsets, or committed offsets
    StructField("sizes", BinaryType()),  # packed int64[samples x width] log sizes (topic chunks with sizes), else null
    StructField("members", BinaryType()),  # int64[samples] member counts (group chunks)
])
_ARROW_SCHEMA = pa.schema([
    ("kind", pa.string()), ("cluster", pa.string()), ("topic", pa.string()), ("group_id", pa.string()),
    ("records", pa.int32()), ("samples", pa.int32()), ("width", pa.int32()), ("first_ms", pa.int64()),
    ("last_ms", pa.int64()), ("times", pa.binary()), ("values", pa.binary()), ("sizes", pa.binary()),
    ("members", pa.binary()),
])


@dataclass(frozen=True)
class Chunk:
    """One chunk's matrices, as `chunk_of` reads a row (or an Arrow table's row) back."""

    times: np.ndarray
    values: np.ndarray
    sizes: np.ndarray | None
    members: np.ndarray | None


def pack(matrix: np.ndarray) -> bytes:
    """A samples x partitions int64 matrix as bytes: each row's difference from the one before, LZ4.

    Offsets and sizes change little between samples, so the differences are small numbers that
    compress about a hundredfold; the chunks Spark shuffles are that much smaller. (int64
    arithmetic wraps the same way both ways, so any values come back exactly.)
    """
    deltas = np.diff(matrix, axis=0, prepend=np.zeros((1, matrix.shape[1]), dtype=np.int64))
    return bytes(pa.compress(deltas.tobytes(), codec="lz4", asbytes=True))


def unpack(data: bytes, samples: int, width: int) -> np.ndarray:
    raw = pa.decompress(data, decompressed_size=samples * width * 8, codec="lz4", asbytes=True)
    return np.cumsum(np.frombuffer(raw, dtype=np.int64).reshape(samples, width), axis=0)


def chunk_of(samples: int, width: int, times: bytes, values: bytes, sizes: bytes | None, members: bytes | None) -> Chunk:
    return Chunk(
        np.frombuffer(times, dtype=np.int64),
        unpack(values, samples, width),
        None if sizes is None else unpack(sizes, samples, width),
        None if members is None else np.frombuffer(members, dtype=np.int64),
    )


def chunks_of(table: pa.Table | pa.RecordBatch) -> Iterator[Chunk]:
    columns = {name: table.column(name).to_pylist() for name in ("samples", "width", "times", "values", "sizes", "members")}
    for i in range(table.num_rows):
        yield chunk_of(*(columns[name][i] for name in ("samples", "width", "times", "values", "sizes", "members")))


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
    """The sample records as chunks (SAMPLE_SCHEMA), `start_ms` <= time < `end_ms` when given.

    `raw` needs a `value` column (binary or string JSON), as the Kafka connector gives. Records that
    are not JSON, of another format version, or without kind, cluster, name or time are dropped.
    Each Spark partition chunks what it reads, in the order it reads it, so one topic's samples may
    be spread over several chunks and partitions; readers put them back in time order. Decoding
    runs in Python (orjson) on Arrow batches: Spark's own JSON reader takes several times longer on
    records that are mostly long arrays of numbers.
    """
    low = None if start_ms is None else int(start_ms)
    high = None if end_ms is None else int(end_ms)

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        chunker = Chunker(low, high)
        for batch in batches:
            ready = chunker.add(batch.column(0).to_pylist())
            if ready is not None:
                yield ready
        yield chunker.finish()

    return raw.select(F.col("value")).mapInArrow(decode, SAMPLE_SCHEMA)


@dataclass
class _Pending:
    records: int = 0
    times: list[int] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)
    sizes: list[Any] = field(default_factory=list)
    members: list[Any] = field(default_factory=list)


class Chunker:
    """Sample record values in, chunk rows out (an Arrow batch of SAMPLE_SCHEMA)."""

    def __init__(self, start_ms: int | None = None, end_ms: int | None = None, chunk_samples: int = CHUNK_SAMPLES) -> None:
        self.start_ms, self.end_ms, self.chunk_samples = start_ms, end_ms, chunk_samples
        self.pending: dict[tuple[str, str, str | None, str | None], _Pending] = {}
        self.full: list[tuple[tuple[str, str, str | None, str | None], _Pending]] = []

    def add(self, values: list[bytes | str | None]) -> pa.RecordBatch | None:
        """Take record values; a batch of the chunks that filled up, if any."""
        for value in values:
            self._add(value)
        return self._batch(self.full) if self.full else None

    def finish(self) -> pa.RecordBatch:
        """Every chunk still open."""
        rest = list(self.pending.items())
        self.pending.clear()
        return self._batch(self.full + rest)

    def _add(self, value: bytes | str | None) -> None:
        if value is None:
            return
        try:
            doc = orjson.loads(value)
        except orjson.JSONDecodeError:
            return
        if not isinstance(doc, dict) or doc.get("v") not in READABLE_VERSIONS:
            return
        cluster, time_ms, kind = doc.get("cluster"), doc.get("time"), doc.get("kind")
        if not isinstance(cluster, str) or not isinstance(time_ms, int) or isinstance(time_ms, bool):
            return
        if (self.start_ms is not None and time_ms < self.start_ms) or (self.end_ms is not None and time_ms >= self.end_ms):
            return
        if kind == TOPIC and isinstance(doc.get("topic"), str):
            self._append((TOPIC, cluster, doc["topic"], None), 1, time_ms, _offsets(doc.get("end")), _offsets(doc.get("bytes")), None)
        elif kind == GROUP and isinstance(doc.get("group"), str):
            members = doc["members"] if _is_int(doc.get("members")) else None
            offsets = doc.get("offsets")
            by_topic = [(t, _offsets(o)) for t, o in offsets.items()] if isinstance(offsets, dict) else []
            for i, (topic, committed) in enumerate(by_topic or [(None, [])]):
                self._append((GROUP, cluster, topic, doc["group"]), 1 if i == 0 else 0, time_ms, committed, None, members)

    def _append(self, key: tuple[str, str, str | None, str | None], records: int, time_ms: int, values: Any, sizes: Any,
                members: Any) -> None:
        chunk = self.pending.get(key)
        if chunk is None:
            chunk = self.pending[key] = _Pending()
        chunk.records += records
        chunk.times.append(time_ms)
        chunk.values.append(values)
        chunk.sizes.append(sizes)
        chunk.members.append(members)
        if len(chunk.times) >= self.chunk_samples:
            self.full.append((key, self.pending.pop(key)))

    def _batch(self, chunks: list[tuple[tuple[str, str, str | None, str | None], _Pending]]) -> pa.RecordBatch:
        columns: dict[str, list[Any]] = {f.name: [] for f in _ARROW_SCHEMA}
        for (kind, cluster, topic, group), chunk in chunks:
            values = _matrix(chunk.values)
            width = values.shape[1]
            has_sizes = any(s is not None for s in chunk.sizes)
            row = {
                "kind": kind, "cluster": cluster, "topic": topic, "group_id": group, "records": chunk.records,
                "samples": len(chunk.times), "width": width, "first_ms": min(chunk.times), "last_ms": max(chunk.times),
                "times": np.asarray(chunk.times, dtype=np.int64).tobytes(), "values": pack(values),
                "sizes": pack(_matrix(chunk.sizes, width)) if has_sizes else None,
                "members": np.asarray([UNKNOWN if m is None else m for m in chunk.members], dtype=np.int64).tobytes()
                if kind == GROUP else None,
            }
            for name, value in row.items():
                columns[name].append(value)
        self.full = []
        return pa.RecordBatch.from_pydict(columns, schema=_ARROW_SCHEMA)


def _matrix(rows: list[Any], width: int | None = None) -> np.ndarray:
    """Arrays of offsets (packed strings, or JSON lists with None; None for a missing one) as a
    samples x width int64 matrix, UNKNOWN where not known."""
    if rows and all(isinstance(r, str) for r in rows) and len({len(r) for r in rows}) == 1:
        # The usual case, packed arrays of one length: decoded in one go.
        try:
            raw = b"".join([base64.b64decode(r, validate=True) for r in rows])
        except ValueError:
            raw = b""
        if raw and len(raw) % (8 * len(rows)) == 0:
            full = np.frombuffer(raw, dtype="<i8").astype(np.int64).reshape(len(rows), -1)
            full = np.where(full < 0, UNKNOWN, full)
            if width is None or width == full.shape[1]:
                return full
    rows = [_unpacked(r) if isinstance(r, str) else r for r in rows]
    lengths = [len(r) if r is not None else 0 for r in rows]
    if width is None:
        width = max(lengths, default=0)
    rows = [r.tolist() if isinstance(r, np.ndarray) else r for r in rows]
    if all(n == width for n in lengths) and width:
        try:
            return np.array(rows, dtype=np.int64)
        except (TypeError, ValueError, OverflowError):
            pass  # a None (or something that is no offset) in some list: the careful way
    out = np.full((len(rows), width), UNKNOWN, dtype=np.int64)
    for i, r in enumerate(rows):
        for p, v in enumerate((r or [])[:width]):
            if _is_int(v) and 0 <= v < 2**63:
                out[i, p] = v
    return out


def _unpacked(text: str) -> np.ndarray | None:
    """A packed array (analytics.records.pack) as int64, UNKNOWN for null or anything negative; None if malformed."""
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError:
        return None
    if len(raw) % 8:
        return None
    values = np.frombuffer(raw, dtype="<i8").astype(np.int64)
    return np.where(values < 0, UNKNOWN, values)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _offsets(value: Any) -> Any:
    """A record's array as it stands (a packed string, or a JSON list of version 1); None for anything else."""
    return value if isinstance(value, (list, str)) else None


def topic_offsets(samples: DataFrame) -> DataFrame:
    """End offsets: cluster, topic, partition, time_ms, end_offset, bytes (null when not known).

    One row per partition and sample time; unknown end offsets are left out, a repeated record
    counts once.
    """
    def rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for (cluster, topic), chunk in zip(zip(batch.column("cluster").to_pylist(), batch.column("topic").to_pylist(),
                                                   strict=True), chunks_of(batch), strict=True):
                s, p = np.nonzero(chunk.values != UNKNOWN)
                sizes = None if chunk.sizes is None else chunk.sizes[s, p]
                yield pa.RecordBatch.from_pydict({
                    "cluster": pa.array([cluster] * len(s), pa.string()),
                    "topic": pa.array([topic] * len(s), pa.string()),
                    "partition": pa.array(p.astype(np.int32)),
                    "time_ms": pa.array(chunk.times[s]),
                    "end_offset": pa.array(chunk.values[s, p]),
                    "bytes": pa.nulls(len(s), pa.int64()) if sizes is None else pa.array(sizes, mask=sizes == UNKNOWN),
                })

    schema = "cluster string, topic string, partition int, time_ms long, end_offset long, bytes long"
    return samples.filter(F.col("kind") == TOPIC).mapInArrow(rows, schema).dropDuplicates(
        ["cluster", "topic", "partition", "time_ms"])


def group_offsets(samples: DataFrame) -> DataFrame:
    """Committed offsets: cluster, group_id, topic, partition, time_ms, committed, members.

    One row per group, partition and sample time with a committed offset.
    """
    def rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            keys = zip(batch.column("cluster").to_pylist(), batch.column("group_id").to_pylist(),
                       batch.column("topic").to_pylist(), strict=True)
            for (cluster, group, topic), chunk in zip(keys, chunks_of(batch), strict=True):
                s, p = np.nonzero(chunk.values != UNKNOWN)
                members = chunk.members[s] if chunk.members is not None else np.full(len(s), UNKNOWN)
                yield pa.RecordBatch.from_pydict({
                    "cluster": pa.array([cluster] * len(s), pa.string()),
                    "group_id": pa.array([group] * len(s), pa.string()),
                    "topic": pa.array([topic] * len(s), pa.string()),
                    "partition": pa.array(p.astype(np.int32)),
                    "time_ms": pa.array(chunk.times[s]),
                    "committed": pa.array(chunk.values[s, p]),
                    "members": pa.array(members.astype(np.int32), mask=members == UNKNOWN),
                })

    schema = "cluster string, group_id string, topic string, partition int, time_ms long, committed long, members int"
    return samples.filter((F.col("kind") == GROUP) & F.col("topic").isNotNull()).mapInArrow(rows, schema).dropDuplicates(
        ["cluster", "group_id", "topic", "partition", "time_ms"])

