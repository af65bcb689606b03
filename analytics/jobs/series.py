"""Each topic's samples as matrices: throughput and lag history in one pass per topic.

Spark groups the sample chunks (samples.py) by topic, a topic's own chunks with those of the groups
that read it, and hands each topic to `topic_pass`, which works on samples x partitions matrices
with numpy: the throughput of each partition in each bucket of the finest resolution, and each
group sample's lag and time lag. Nothing is exploded into one row per partition and sample unless
asked for (`detail`, for the jobs that replay every sample: lag status, forecasts).

The figures are those defined in throughput.py and lag.py (their docstrings say how each is
computed); `topic_pass` is a plain function of Arrow tables, so tests call it without Spark.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, IntegerType, LongType, StringType, StructField, StructType

from analytics.jobs.samples import UNKNOWN, Chunk, chunks_of
from analytics.records import GROUP, TOPIC

THROUGHPUT = "throughput"  # per partition, resolution and bucket with a counted interval
TOPIC_THROUGHPUT = "topic_throughput"  # per topic, resolution and bucket: the partitions' sums
LAG = "lag"  # per group, partition and finest bucket with a committed offset: the bucket's last sample and maxima
GROUP_SAMPLE = "group"  # per group sample and topic with a committed offset: the sample's totals
DETAIL = "detail"  # per group sample and partition with a committed offset (only when asked for)

_FIELDS: list[tuple[str, Any, Any]] = [
    ("kind", StringType(), pa.string()),
    ("cluster", StringType(), pa.string()),
    ("topic", StringType(), pa.string()),
    ("group_id", StringType(), pa.string()),
    ("partition", IntegerType(), pa.int32()),
    ("resolution_s", IntegerType(), pa.int32()),  # throughput
    ("start_ms", LongType(), pa.int64()),  # bucket start (throughput, lag)
    ("time_ms", LongType(), pa.int64()),  # the sample (lag: the bucket's last one with a committed offset)
    ("messages", LongType(), pa.int64()),
    ("seconds", DoubleType(), pa.float64()),
    ("bytes", LongType(), pa.int64()),
    ("bytes_seconds", DoubleType(), pa.float64()),
    ("messages_per_s", DoubleType(), pa.float64()),
    ("bytes_per_s", DoubleType(), pa.float64()),
    ("partitions", IntegerType(), pa.int32()),  # topic throughput: partitions with a counted interval
    ("committed", LongType(), pa.int64()),
    ("end_offset", LongType(), pa.int64()),
    ("lag", LongType(), pa.int64()),
    ("time_lag_s", DoubleType(), pa.float64()),
    ("max_lag", LongType(), pa.int64()),
    ("max_time_lag_s", DoubleType(), pa.float64()),
    ("members", IntegerType(), pa.int32()),
    ("samples", IntegerType(), pa.int32()),  # lag: samples in the bucket; group: partitions with a known lag
    ("total_lag", LongType(), pa.int64()),
]
SERIES_SCHEMA = StructType([StructField(name, spark_type) for name, spark_type, _ in _FIELDS])
_ARROW_SCHEMA = pa.schema([(name, arrow_type) for name, _, arrow_type in _FIELDS])


def topic_series(samples: DataFrame, resolutions: Sequence[int], detail: bool = False) -> DataFrame:
    """Rows of kinds THROUGHPUT and TOPIC_THROUGHPUT (at each resolution, seconds), LAG (at the finest)
    and GROUP_SAMPLE (and DETAIL when `detail`) of every topic (SERIES_SCHEMA).

    `samples` as `parse_samples` gives them; both sides of the cogroup read them, so keep them
    (persist: chunks are small) unless reading them twice is cheap. Every kind comes from one pass
    over the data: keep the result (persist) when several are used.
    """
    widths = sorted({int(r) * 1000 for r in resolutions})
    if not widths or widths[0] <= 0 or any(w % widths[0] for w in widths):
        raise ValueError(f"resolutions must be positive seconds, each a multiple of the finest, got {list(resolutions)}")
    chunk = ["samples", "width", "times", "values", "sizes", "members"]
    # Explicit partitions, several per core: the chunks are small, and adaptive execution would
    # otherwise coalesce them into fewer tasks than cores while each topic's pass takes real time.
    parts = samples.sparkSession.sparkContext.defaultParallelism * 8
    topics = samples.filter(F.col("kind") == TOPIC).select("cluster", "topic", *chunk).repartition(parts, "cluster", "topic")
    # Both sides come from `samples`: names of their own keep Spark from binding one side's columns
    # to the other's (a self-cogroup resolves a shared name to the first side).
    groups = samples.filter((F.col("kind") == GROUP) & F.col("topic").isNotNull()).select(
        F.col("cluster").alias("group_cluster"), F.col("topic").alias("group_topic"), "group_id",
        *[F.col(c).alias(f"group_{c}") for c in chunk]).repartition(parts, "group_cluster", "group_topic")

    def apply(key: tuple[Any, ...], left: pa.Table, right: pa.Table) -> pa.Table:
        group_chunks = [(g, c) for g, c in zip(right.column("group_id").to_pylist(),
                                                chunks_of(right.rename_columns([n.removeprefix("group_") for n in right.column_names])),
                                                strict=True)]
        return topic_pass(key[0].as_py(), key[1].as_py(), list(chunks_of(left)), group_chunks, widths, detail)

    return topics.groupBy("cluster", "topic").cogroup(groups.groupBy("group_cluster", "group_topic")).applyInArrow(
        apply, SERIES_SCHEMA)


def topic_pass(cluster: str, topic: str, topic_chunks: list[Chunk], group_chunks: list[tuple[str, Chunk]],
               widths_ms: Sequence[int], detail: bool = False) -> pa.Table:
    """One topic: its own sample chunks and its groups' (group id, chunk); the rows of SERIES_SCHEMA.

    `widths_ms`: the throughput's bucket widths, the first (finest) also the lag history's."""
    times, ends, sizes = _topic_matrices(topic_chunks)
    parts = _throughput_rows(cluster, topic, times, ends, sizes, widths_ms)
    width_ms = widths_ms[0]
    by_group: dict[str, list[Chunk]] = {}
    for group, chunk in group_chunks:
        by_group.setdefault(group, []).append(chunk)
    for group, chunks in sorted(by_group.items()):
        parts.extend(_lag_rows(cluster, topic, group, times, ends, chunks, width_ms, detail))
    return pa.concat_tables(parts) if parts else _ARROW_SCHEMA.empty_table()


def _stack(chunks: list[Chunk], sizes: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """The chunks' samples in time order, a repeated time once: times, values, sizes, members."""
    width = max((c.values.shape[1] for c in chunks), default=0)

    def padded(m: np.ndarray | None, rows: int) -> np.ndarray:
        out = np.full((rows, width), UNKNOWN, dtype=np.int64)
        if m is not None:
            out[:, :m.shape[1]] = m
        return out

    times = np.concatenate([c.times for c in chunks]) if chunks else np.zeros(0, dtype=np.int64)
    values = np.vstack([padded(c.values, len(c.times)) for c in chunks]) if chunks else np.zeros((0, 0), dtype=np.int64)
    size_m = None
    if sizes and any(c.sizes is not None for c in chunks):
        size_m = np.vstack([padded(c.sizes, len(c.times)) for c in chunks])
    members = None
    if any(c.members is not None for c in chunks):
        members = np.concatenate([c.members if c.members is not None else np.full(len(c.times), UNKNOWN) for c in chunks])
    order = np.argsort(times, kind="stable")
    times = times[order]
    first = np.ones(len(times), dtype=bool)
    first[1:] = times[1:] != times[:-1]
    keep = order[first]
    return (times[first], values[keep], None if size_m is None else size_m[keep],
            None if members is None else members[keep])


def _topic_matrices(chunks: list[Chunk]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    times, ends, sizes, _ = _stack(chunks, sizes=True)
    return times, ends, sizes if sizes is not None else np.full(ends.shape, UNKNOWN, dtype=np.int64)


def _last_index(mask: np.ndarray) -> np.ndarray:
    """For each row and column: the last row at or before it where mask holds, -1 where none."""
    idx = np.where(mask, np.arange(mask.shape[0])[:, None], -1)
    return np.maximum.accumulate(idx, axis=0) if len(idx) else idx


def _table(columns: dict[str, Any], rows: int) -> pa.Table:
    """The columns given, every other column of the series schema null."""
    return pa.table([columns.get(f.name, pa.nulls(rows, f.type)) for f in _ARROW_SCHEMA], schema=_ARROW_SCHEMA)


def _repeat(value: str | None, rows: int) -> pa.Array:
    return pa.array([value] * rows, pa.string())


def _runs(keys: np.ndarray) -> np.ndarray:
    """Where each run of equal keys starts (keys sorted)."""
    return np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if len(keys) else np.zeros(0, dtype=np.int64)


def _throughput_rows(cluster: str, topic: str, times: np.ndarray, ends: np.ndarray, sizes: np.ndarray,
                     widths_ms: Sequence[int]) -> list[pa.Table]:
    n, width = ends.shape
    if n < 2 or not width:
        return []
    known = ends != UNKNOWN
    if known.all():  # the usual case: each sample follows the one before
        paired = np.ones_like(known)
        paired[0] = False
        prev_ends = np.vstack([ends[:1], ends[:-1]])
        prev_size = np.vstack([sizes[:1], sizes[:-1]])
        seconds = np.broadcast_to((np.diff(times, prepend=times[0]) / 1000.0)[:, None], ends.shape)
    else:
        last = _last_index(known)
        previous = np.vstack([np.full((1, width), -1), last[:-1]])  # the previous sample that knew the partition
        paired = known & (previous >= 0)
        cols = np.arange(width)[None, :]
        prev_row = np.where(paired, previous, 0)
        prev_ends = ends[prev_row, cols]
        prev_size = sizes[prev_row, cols]
        seconds = (times[:, None] - times[prev_row]) / 1000.0
    messages = ends - prev_ends
    counted = paired & (messages >= 0)  # an end offset going down (topic re-created) says nothing
    size_delta = sizes - prev_size
    # Bytes where both sizes are known and the log did not shrink (retention deleted a segment).
    sized = counted & (sizes != UNKNOWN) & (prev_size != UNKNOWN) & (size_delta >= 0)
    per_interval = np.stack([
        counted.astype(np.float64), np.where(counted, messages, 0).astype(np.float64), np.where(counted, seconds, 0.0),
        sized.astype(np.float64), np.where(sized, size_delta, 0).astype(np.float64), np.where(sized, seconds, 0.0)])
    tables = []
    for width_ms in widths_ms:
        # An interval (a, b] counts in the bucket holding b, so one ending on a boundary counts before it.
        bucket = (times - 1) // width_ms * width_ms
        starts = _runs(bucket)  # times are sorted: buckets are runs
        counts, msg, secs, sized_counts, byt, byt_secs = np.add.reduceat(per_interval, starts, axis=1)
        msg, byt = msg.round().astype(np.int64), byt.round().astype(np.int64)
        k, p = np.nonzero(counts)
        has_bytes = sized_counts[k, p] > 0
        rate = msg[k, p] / secs[k, p]
        with np.errstate(divide="ignore", invalid="ignore"):
            byte_rate = np.where(has_bytes, byt[k, p] / byt_secs[k, p], 0.0)
        rows = len(k)
        resolution = pa.array(np.full(rows, width_ms // 1000, dtype=np.int32))
        bucket_start = pa.array(bucket[starts][k])
        tables.append(_table({
            "kind": _repeat(THROUGHPUT, rows), "cluster": _repeat(cluster, rows), "topic": _repeat(topic, rows),
            "partition": pa.array(p.astype(np.int32)), "resolution_s": resolution, "start_ms": bucket_start,
            "messages": pa.array(msg[k, p]), "seconds": pa.array(secs[k, p]), "messages_per_s": pa.array(rate),
            "bytes": pa.array(byt[k, p], mask=~has_bytes), "bytes_seconds": pa.array(byt_secs[k, p], mask=~has_bytes),
            "bytes_per_s": pa.array(byte_rate, mask=~has_bytes),
        }, rows))
        # The topic: its partitions' buckets summed (rates too: each partition's over its own covered time).
        runs = _runs(k)  # np.nonzero orders by bucket, then partition
        if not len(runs):
            continue
        topic_bytes = np.add.reduceat(np.where(has_bytes, byt[k, p], 0), runs)
        any_bytes = np.logical_or.reduceat(has_bytes, runs)
        t_rows = len(runs)
        tables.append(_table({
            "kind": _repeat(TOPIC_THROUGHPUT, t_rows), "cluster": _repeat(cluster, t_rows), "topic": _repeat(topic, t_rows),
            "resolution_s": pa.array(np.full(t_rows, width_ms // 1000, dtype=np.int32)),
            "start_ms": pa.array(bucket[starts][k[runs]]),
            "partitions": pa.array(np.diff(np.r_[runs, len(k)]).astype(np.int32)),
            "messages": pa.array(np.add.reduceat(msg[k, p], runs)),
            "messages_per_s": pa.array(np.add.reduceat(rate, runs)),
            "bytes": pa.array(topic_bytes, mask=~any_bytes),
            "bytes_per_s": pa.array(np.add.reduceat(byte_rate, runs), mask=~any_bytes),
        }, t_rows))
    return tables


def _lag_rows(cluster: str, topic: str, group: str, times: np.ndarray, ends: np.ndarray, chunks: list[Chunk],
              width_ms: int, detail: bool) -> list[pa.Table]:
    """One group on one topic: LAG rows per partition and bucket, GROUP_SAMPLE rows, DETAIL rows if asked.

    As lag.py defines them: the end offset is the partition's latest one sampled at or before the
    group sample; the time-lag table holds the partition's accepted end-offset points (not below an
    earlier one) up to the sample's time.
    """
    g_times, committed, _, members = _stack(chunks)
    m, width = committed.shape
    if not m or not width:
        return []
    if members is None:
        members = np.full(m, UNKNOWN)
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
    at_row = np.maximum(at, 0)
    any_before = (at >= 0)[:, None]
    if known.all() and (np.diff(e, axis=0) >= 0).all():
        # The usual case: every partition known at every sample, no end offset going down. Then the
        # latest known end offset is the sample's own and every point is accepted.
        accepted = known
        end = np.where(any_before, e[at_row], UNKNOWN)
        has_newest = np.broadcast_to(any_before, (m, width))
        newest_n = np.where(any_before, (at + 1)[:, None], 0)
        newest_off = end.astype(np.float64)
        newest_t = np.broadcast_to(times[at_row].astype(np.float64)[:, None], (m, width))
    else:
        last_known = _last_index(known)
        end_row = np.where(any_before, last_known[at_row[:, None], cols], -1)
        end = np.where(end_row >= 0, e[np.maximum(end_row, 0), cols], UNKNOWN)
        # Accepted points: an end offset not below any earlier one.
        running = np.maximum.accumulate(np.where(known, e, -1), axis=0)
        before = np.vstack([np.full((1, width), -1), running[:-1]])
        accepted = known & (e >= before)
        newest_row = np.where(any_before, _last_index(accepted)[at_row[:, None], cols], -1)
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
    all_points = accepted.all()
    float_times = times.astype(np.float64)
    for p in range(width):
        if all_points:
            offs, ts = e[:, p].astype(np.float64), float_times
        else:
            rows_p = np.flatnonzero(accepted[:, p])
            if not len(rows_p):
                continue
            offs, ts = e[rows_p, p].astype(np.float64), float_times[rows_p]
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
    end_known = has_commit & (end != UNKNOWN)

    out = [_group_sample_rows(cluster, topic, group, g_times, members, has_commit, lag, lag_known, time_lag, time_lag_known),
           _bucket_rows(cluster, topic, group, g_times, members, committed, end, lag, time_lag, has_commit, end_known,
                        lag_known, time_lag_known, width_ms)]
    if detail:
        s, ps = np.nonzero(has_commit)
        r = len(s)
        out.append(_table({
            "kind": _repeat(DETAIL, r), "cluster": _repeat(cluster, r), "topic": _repeat(topic, r),
            "group_id": _repeat(group, r), "partition": pa.array(ps.astype(np.int32)), "time_ms": pa.array(g_times[s]),
            "committed": pa.array(committed[s, ps]),
            "end_offset": pa.array(end[s, ps], mask=~end_known[s, ps]),
            "lag": pa.array(lag[s, ps], mask=~lag_known[s, ps]),
            "time_lag_s": pa.array(time_lag[s, ps], mask=~time_lag_known[s, ps]),
            "members": pa.array(members[s].astype(np.int32), mask=members[s] == UNKNOWN),
        }, r))
    return out


def _group_sample_rows(cluster: str, topic: str, group: str, g_times: np.ndarray, members: np.ndarray,
                       has_commit: np.ndarray, lag: np.ndarray, lag_known: np.ndarray, time_lag: np.ndarray,
                       time_lag_known: np.ndarray) -> pa.Table:
    rows = np.flatnonzero(has_commit.any(axis=1))
    lag_known, time_lag_known = lag_known[rows], time_lag_known[rows]
    lag, time_lag = lag[rows], time_lag[rows]
    partitions = lag_known.sum(axis=1)
    r = len(rows)
    return _table({
        "kind": _repeat(GROUP_SAMPLE, r), "cluster": _repeat(cluster, r), "topic": _repeat(topic, r),
        "group_id": _repeat(group, r), "time_ms": pa.array(g_times[rows]),
        "members": pa.array(members[rows].astype(np.int32), mask=members[rows] == UNKNOWN),
        "samples": pa.array(partitions.astype(np.int32)),
        "total_lag": pa.array(np.where(lag_known, lag, 0).sum(axis=1), mask=partitions == 0),
        "max_lag": pa.array(np.where(lag_known, lag, -1).max(axis=1, initial=-1), mask=partitions == 0),
        "max_time_lag_s": pa.array(np.where(time_lag_known, time_lag, -1.0).max(axis=1, initial=-1.0),
                                   mask=~time_lag_known.any(axis=1)),
    }, r)


def _bucket_rows(cluster: str, topic: str, group: str, g_times: np.ndarray, members: np.ndarray, committed: np.ndarray,
                 end: np.ndarray, lag: np.ndarray, time_lag: np.ndarray, has_commit: np.ndarray, end_known: np.ndarray,
                 lag_known: np.ndarray, time_lag_known: np.ndarray, width_ms: int) -> pa.Table:
    """Per partition and bucket (a sample at time t is in the bucket holding t): the bucket's last sample
    with a committed offset, its figures, and the bucket's largest lag and time lag."""
    bucket = g_times // width_ms * width_ms
    starts = _runs(bucket)
    ends_at = np.r_[starts[1:], len(bucket)] - 1
    samples = np.add.reduceat(has_commit.astype(np.int64), starts, axis=0)
    k, p = np.nonzero(samples)
    last = _last_index(has_commit)[ends_at[k], p]  # within the bucket, since it has a commit
    max_lag = np.maximum.reduceat(np.where(lag_known, lag, -1), starts, axis=0)[k, p]
    max_time_lag = np.maximum.reduceat(np.where(time_lag_known, time_lag, -1.0), starts, axis=0)[k, p]
    r = len(k)
    return _table({
        "kind": _repeat(LAG, r), "cluster": _repeat(cluster, r), "topic": _repeat(topic, r), "group_id": _repeat(group, r),
        "partition": pa.array(p.astype(np.int32)), "start_ms": pa.array(bucket[starts][k]),
        "time_ms": pa.array(g_times[last]),
        "committed": pa.array(committed[last, p]),
        "end_offset": pa.array(end[last, p], mask=~end_known[last, p]),
        "lag": pa.array(lag[last, p], mask=~lag_known[last, p]),
        "time_lag_s": pa.array(time_lag[last, p], mask=~time_lag_known[last, p]),
        "max_lag": pa.array(max_lag, mask=max_lag < 0),
        "max_time_lag_s": pa.array(max_time_lag, mask=max_time_lag < 0),
        "members": pa.array(members[last].astype(np.int32), mask=members[last] == UNKNOWN),
        "samples": pa.array(samples[k, p].astype(np.int32)),
    }, r)
