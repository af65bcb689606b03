"""Each topic's samples as matrices: throughput buckets and lag history in one pass per topic.

The sample records hold one array per topic (or group and topic) per cycle; exploding them into one
row per partition and sample before any work multiplies the rows Spark sorts by the partition
count (36 million rows for an hour of 10,000 partitions at 1 s). Here Spark only groups the
records by topic (a topic's own records with the group records that read it) and hands each topic
to `topic_pass`, which works on samples x partitions matrices with numpy: the throughput of each
partition in each bucket of the finest resolution, and each group sample's lag and time lag, still
one row per group sample with arrays indexed by partition.

The figures are those defined in throughput.py and lag.py (the module docstrings there say how each
is computed); `topic_pass` is a plain function of Arrow tables, so tests call it without Spark.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DoubleType, IntegerType, LongType, StringType, StructField, StructType

from analytics.records import GROUP, TOPIC

THROUGHPUT, LAG = "throughput", "lag"
UNKNOWN = -1  # offsets and sizes are never negative

SERIES_SCHEMA = StructType([
    StructField("kind", StringType()),
    StructField("cluster", StringType()),
    StructField("topic", StringType()),
    # throughput rows: one per partition and bucket of the finest resolution with a counted interval
    StructField("partition", IntegerType()),
    StructField("start_ms", LongType()),
    StructField("messages", LongType()),
    StructField("seconds", DoubleType()),
    StructField("bytes", LongType()),
    StructField("bytes_seconds", DoubleType()),
    # lag rows: one per group sample (of this topic) with at least one committed offset
    StructField("group_id", StringType()),
    StructField("time_ms", LongType()),
    StructField("members", IntegerType()),
    StructField("committed", ArrayType(LongType())),
    StructField("end_offset", ArrayType(LongType())),
    StructField("lag", ArrayType(LongType())),
    StructField("time_lag_s", ArrayType(DoubleType())),
    StructField("lag_partitions", IntegerType()),
    StructField("lag_total", LongType()),
    StructField("lag_max", LongType()),
    StructField("time_lag_max", DoubleType()),
])
_ARROW_SCHEMA = pa.schema([
    ("kind", pa.string()), ("cluster", pa.string()), ("topic", pa.string()),
    ("partition", pa.int32()), ("start_ms", pa.int64()), ("messages", pa.int64()), ("seconds", pa.float64()),
    ("bytes", pa.int64()), ("bytes_seconds", pa.float64()),
    ("group_id", pa.string()), ("time_ms", pa.int64()), ("members", pa.int32()),
    ("committed", pa.list_(pa.int64())), ("end_offset", pa.list_(pa.int64())), ("lag", pa.list_(pa.int64())),
    ("time_lag_s", pa.list_(pa.float64())),
    ("lag_partitions", pa.int32()), ("lag_total", pa.int64()), ("lag_max", pa.int64()), ("time_lag_max", pa.float64()),
])


def topic_series(samples: DataFrame, finest_s: int) -> DataFrame:
    """Throughput rows (kind 'throughput') and lag rows (kind 'lag') of every topic (SERIES_SCHEMA).

    `samples` as `parse_samples` gives them. Both kinds come from one pass over the data: keep the
    result (persist) when both are used.
    """
    if finest_s <= 0:
        raise ValueError(f"the finest resolution must be positive seconds, got {finest_s}")
    topics = samples.filter(F.col("kind") == TOPIC).select("cluster", "topic", "time_ms", "end", "bytes")
    # Both sides come from `samples`: names of their own keep Spark from binding one side's columns
    # to the other's (a self-cogroup resolves a shared name to the first side).
    groups = samples.filter((F.col("kind") == GROUP) & F.col("topic").isNotNull()).select(
        F.col("cluster").alias("group_cluster"), F.col("topic").alias("group_topic"), "group_id",
        F.col("time_ms").alias("group_time_ms"), "members", "committed")
    width_ms = int(finest_s) * 1000

    def apply(key: tuple[Any, ...], left: pa.Table, right: pa.Table) -> pa.Table:
        return topic_pass(key[0].as_py(), key[1].as_py(), left, right, width_ms)

    return topics.groupBy("cluster", "topic").cogroup(groups.groupBy("group_cluster", "group_topic")).applyInArrow(apply, SERIES_SCHEMA)


def topic_pass(cluster: str, topic: str, topic_rows: pa.Table, group_rows: pa.Table, width_ms: int) -> pa.Table:
    """One topic: its records (time_ms, end, bytes) and its groups' (group_id, group_time_ms, members, committed)."""
    times, ends, sizes = _topic_matrices(topic_rows)
    parts = [_throughput_rows(cluster, topic, times, ends, sizes, width_ms)]
    if group_rows.num_rows:
        parts.append(_lag_rows(cluster, topic, times, ends, group_rows))
    return pa.concat_tables(parts)


def _matrix(column: pa.ChunkedArray | pa.Array, rows: int, width: int | None = None) -> np.ndarray:
    """A list<long> column as a rows x width matrix, UNKNOWN where a value or a whole list is null."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    lengths = arr.value_lengths().fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    if width is None:
        width = int(lengths.max()) if len(lengths) else 0
    out = np.full((rows, width), UNKNOWN, dtype=np.int64)
    if rows and width:
        values = arr.flatten().fill_null(UNKNOWN).to_numpy(zero_copy_only=False)
        row = np.repeat(np.arange(rows), lengths)
        col = np.arange(len(values)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        keep = col < width
        out[row[keep], col[keep]] = values[keep]
    return out


def _topic_matrices(rows: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Times (sorted, a repeated time counts once), end offsets and sizes, samples x partitions."""
    if not rows.num_rows:
        empty = np.zeros((0, 0), dtype=np.int64)
        return np.zeros(0, dtype=np.int64), empty, empty
    times = rows.column("time_ms").to_numpy()
    ends = _matrix(rows.column("end"), rows.num_rows)
    sizes = _matrix(rows.column("bytes"), rows.num_rows, ends.shape[1])
    order = np.argsort(times, kind="stable")
    times = times[order]
    first = np.ones(len(times), dtype=bool)
    first[1:] = times[1:] != times[:-1]
    keep = order[first]
    return times[first], ends[keep], sizes[keep]


def _last_index(mask: np.ndarray) -> np.ndarray:
    """For each row and column: the last row at or before it where mask holds, -1 where none."""
    idx = np.where(mask, np.arange(mask.shape[0])[:, None], -1)
    return np.maximum.accumulate(idx, axis=0) if len(idx) else idx


def _with_all_columns(columns: dict[str, pa.Array], rows: int) -> pa.Table:
    """The columns given, every other column of the series schema null."""
    return pa.table([columns.get(f.name, pa.nulls(rows, f.type)) for f in _ARROW_SCHEMA], schema=_ARROW_SCHEMA)


def _throughput_rows(cluster: str, topic: str, times: np.ndarray, ends: np.ndarray, sizes: np.ndarray,
                     width_ms: int) -> pa.Table:
    n, width = ends.shape
    if n < 2 or not width:
        return _ARROW_SCHEMA.empty_table()
    known = ends != UNKNOWN
    last = _last_index(known)
    previous = np.vstack([np.full((1, width), -1), last[:-1]])  # the previous sample that knew the partition
    paired = known & (previous >= 0)
    cols = np.arange(width)[None, :]
    prev_row = np.where(paired, previous, 0)
    messages = ends - ends[prev_row, cols]
    counted = paired & (messages >= 0)  # an end offset going down (topic re-created) says nothing
    seconds = (times[:, None] - times[prev_row]) / 1000.0
    prev_size = sizes[prev_row, cols]
    size_delta = sizes - prev_size
    # Bytes where both sizes are known and the log did not shrink (retention deleted a segment).
    sized = counted & (sizes != UNKNOWN) & (prev_size != UNKNOWN) & (size_delta >= 0)

    # An interval (a, b] counts in the bucket holding b, so one ending on a boundary counts before it.
    bucket = (times - 1) // width_ms * width_ms
    starts = np.flatnonzero(np.r_[True, bucket[1:] != bucket[:-1]])  # times are sorted: buckets are runs

    def per_bucket(values: np.ndarray) -> np.ndarray:
        return np.add.reduceat(values, starts, axis=0)

    counts = per_bucket(counted.astype(np.int64))
    sized_counts = per_bucket(sized.astype(np.int64))
    k, p = np.nonzero(counts)
    no_bytes = sized_counts[k, p] == 0
    rows = len(k)
    return _with_all_columns({
        "kind": pa.array([THROUGHPUT] * rows, pa.string()),
        "cluster": pa.array([cluster] * rows, pa.string()),
        "topic": pa.array([topic] * rows, pa.string()),
        "partition": pa.array(p.astype(np.int32)),
        "start_ms": pa.array(bucket[starts][k]),
        "messages": pa.array(per_bucket(np.where(counted, messages, 0))[k, p]),
        "seconds": pa.array(per_bucket(np.where(counted, seconds, 0.0))[k, p]),
        "bytes": pa.array(per_bucket(np.where(sized, size_delta, 0))[k, p], mask=no_bytes),
        "bytes_seconds": pa.array(per_bucket(np.where(sized, seconds, 0.0))[k, p], mask=no_bytes),
    }, rows)


def _lag_rows(cluster: str, topic: str, times: np.ndarray, ends: np.ndarray, group_rows: pa.Table) -> pa.Table:
    """One row per group sample: the committed offsets, the end offsets as of the sample, lag and time lag.

    As lag.py defines them: the end offset is the partition's latest one sampled at or before the
    group sample; the time-lag table holds the partition's accepted end-offset points (not below an
    earlier one) up to the sample's time.
    """
    group_rows = _deduplicated(group_rows)
    m = group_rows.num_rows
    committed = _matrix(group_rows.column("committed"), m)
    g_times = group_rows.column("group_time_ms").to_numpy()
    width = committed.shape[1]
    # The topic's matrices, as wide as the committed offsets (a partition the topic record lacks is unknown).
    if not len(times):  # no end offsets sampled for the topic: lag and time lag unknown
        times, ends = np.array([np.iinfo(np.int64).max]), np.zeros((1, 0), dtype=np.int64)
    n = len(times)
    e = np.full((n, width), UNKNOWN, dtype=np.int64)
    shared = min(width, ends.shape[1])
    e[:, :shared] = ends[:, :shared]
    known = e != UNKNOWN
    cols = np.arange(width)[None, :]
    # The last topic sample at or before each group sample (a topic sample at the same time is seen).
    at = np.searchsorted(times, g_times, side="right") - 1
    at_row = np.maximum(at, 0)[:, None]
    any_before = (at >= 0)[:, None]

    last_known = _last_index(known)
    end_row = np.where(any_before, last_known[at_row, cols], -1)
    end = np.where(end_row >= 0, e[np.maximum(end_row, 0), cols], UNKNOWN)

    # Accepted points: an end offset not below any earlier one.
    running = np.maximum.accumulate(np.where(known, e, -1), axis=0)
    before = np.vstack([np.full((1, width), -1), running[:-1]])
    accepted = known & (e >= before)
    last_accepted = _last_index(accepted)
    newest_row = np.where(any_before, last_accepted[at_row, cols], -1)
    count = np.cumsum(accepted, axis=0)
    newest_n = np.where(newest_row >= 0, count[np.maximum(newest_row, 0), cols], 0)
    has_newest = newest_row >= 0
    safe_newest = np.maximum(newest_row, 0)
    newest_off = e[safe_newest, cols].astype(np.float64)
    newest_t = times[safe_newest].astype(np.float64)

    o = committed.astype(np.float64)
    now = g_times.astype(np.float64)[:, None]
    has_commit = committed != UNKNOWN
    first_off = np.zeros(width)
    first_t = np.zeros(width)
    interpolated = np.full((m, width), np.nan)
    for p in range(width):
        rows_p = np.flatnonzero(accepted[:, p])
        if not len(rows_p):
            continue
        offs, ts = e[rows_p, p].astype(np.float64), times[rows_p].astype(np.float64)
        first_off[p], first_t[p] = offs[0], ts[0]
        # The last point at or below the committed offset and the point after it.
        left = np.searchsorted(offs, o[:, p], side="right") - 1
        ok = has_commit[:, p] & (left >= 0) & (left + 1 < len(offs))
        li = np.where(ok, left, 0)
        ri = np.where(ok, left + 1, 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            value = ts[ri] - (offs[ri] - o[:, p]) * (ts[ri] - ts[li]) / (offs[ri] - offs[li])
        interpolated[:, p] = np.where(ok, value, np.nan)

    with np.errstate(divide="ignore", invalid="ignore"):
        extrapolated = newest_t - (newest_off - o) * (newest_t - first_t) / (newest_off - first_off)
    flat = newest_off == first_off
    predicted = np.where(
        newest_n < 2, np.nan,
        np.where((o >= first_off) & (o < newest_off), interpolated,
                 np.where(flat, np.where(o < first_off, first_t, now), extrapolated)))
    time_lag = np.where(o == newest_off, 0.0, np.maximum(0.0, (now - predicted) / 1000.0))
    time_lag_known = has_commit & has_newest & ((o == newest_off) | ~np.isnan(predicted))
    lag = np.maximum(0, end - committed)
    lag_known = has_commit & (end != UNKNOWN)

    rows = np.flatnonzero(has_commit.any(axis=1))
    committed, end, lag, time_lag = committed[rows], end[rows], lag[rows], time_lag[rows]
    has_commit, lag_known, time_lag_known = has_commit[rows], lag_known[rows], time_lag_known[rows]
    r = len(rows)
    lag_partitions = lag_known.sum(axis=1)
    return _with_all_columns({
        "kind": pa.array([LAG] * r, pa.string()),
        "cluster": pa.array([cluster] * r, pa.string()),
        "topic": pa.array([topic] * r, pa.string()),
        "group_id": group_rows.column("group_id").take(pa.array(rows)).combine_chunks() if r else pa.array([], pa.string()),
        "time_ms": pa.array(g_times[rows]),
        "members": group_rows.column("members").take(pa.array(rows)).combine_chunks().cast(pa.int32()) if r
        else pa.array([], pa.int32()),
        "committed": _lists(committed, has_commit),
        "end_offset": _lists(end, has_commit & (end != UNKNOWN)),
        "lag": _lists(lag, lag_known),
        "time_lag_s": _lists(time_lag, time_lag_known),
        "lag_partitions": pa.array(lag_partitions.astype(np.int32)),
        "lag_total": pa.array(np.where(lag_known, lag, 0).sum(axis=1), mask=lag_partitions == 0),
        "lag_max": pa.array(np.where(lag_known, lag, -1).max(axis=1, initial=-1), mask=lag_partitions == 0),
        "time_lag_max": pa.array(np.where(time_lag_known, time_lag, -1.0).max(axis=1, initial=-1.0),
                                 mask=~time_lag_known.any(axis=1)),
    }, r)


def _deduplicated(group_rows: pa.Table) -> pa.Table:
    """The group rows ordered by group and time, a repeated (group, time) once."""
    ordered = group_rows.sort_by([("group_id", "ascending"), ("group_time_ms", "ascending")])
    ids = ordered.column("group_id").combine_chunks().dictionary_encode().indices.to_numpy(zero_copy_only=False)
    times = ordered.column("group_time_ms").to_numpy()
    first = np.ones(len(ids), dtype=bool)
    first[1:] = (ids[1:] != ids[:-1]) | (times[1:] != times[:-1])
    return ordered if first.all() else ordered.filter(pa.array(first))


def _lists(values: np.ndarray, known: np.ndarray) -> pa.Array:
    """A rows x width matrix as a list column, null where not known."""
    rows, width = values.shape
    offsets = pa.array(np.arange(rows + 1, dtype=np.int32) * width)
    flat = pa.array(values.reshape(-1), mask=~known.reshape(-1))
    return pa.ListArray.from_arrays(offsets, flat)

