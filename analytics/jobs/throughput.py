"""Throughput per topic and partition from successive end offsets.

`increments` defines what a partition took in between two samples; `throughput` reads those
intervals already summed per finest bucket by the per-topic pass (series.py), which computes them
on each topic's samples x partitions matrix instead of one row per partition and sample.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from analytics.jobs.series import THROUGHPUT

DEFAULT_RESOLUTIONS = (60, 300, 3600)  # seconds: 1 min, 5 min, 1 h
PARTITION = ["cluster", "topic", "partition"]


def increments(topic_offsets: DataFrame) -> DataFrame:
    """What each partition took in between consecutive samples.

    cluster, topic, partition, time_ms (the later sample), seconds, messages, bytes. An interval
    whose end offset went down (the topic was re-created) says nothing and is left out; bytes is
    null where either size is unknown or the log shrank (retention deleted a segment).
    """
    w = Window.partitionBy(*PARTITION).orderBy("time_ms")
    pairs = topic_offsets.select(
        *PARTITION, "time_ms",
        (F.col("time_ms") - F.lag("time_ms").over(w)).alias("dt_ms"),
        (F.col("end_offset") - F.lag("end_offset").over(w)).alias("messages"),
        (F.col("bytes") - F.lag("bytes").over(w)).alias("dbytes"),
    )
    return pairs.filter(F.col("dt_ms").isNotNull() & (F.col("messages") >= 0)).select(
        *PARTITION, "time_ms",
        (F.col("dt_ms") / 1000.0).alias("seconds"),
        "messages",
        F.when(F.col("dbytes") >= 0, F.col("dbytes")).alias("bytes"),
    )


def throughput(series: DataFrame, resolutions: Sequence[int] = DEFAULT_RESOLUTIONS) -> DataFrame:
    """Messages/s and bytes/s per partition and time bucket, at each resolution (seconds).

    `series` is `topic_series(samples, min(resolutions))`: the intervals between consecutive
    samples of each partition (as `increments` defines them) already summed per bucket of the finest
    resolution. cluster, topic, partition, resolution_s, start (bucket start, UTC), messages,
    seconds (the time the samples cover in the bucket), messages_per_s, bytes, bytes_per_s (null
    where sizes are unknown). Each interval between two samples counts in the bucket of its later
    sample, and a rate is what was taken in over the time covered, so a bucket the samples only
    partly cover (the first, the last, a watcher restart) still shows the true rate.
    """
    check_resolutions(resolutions)
    # The finest buckets added up into the coarser ones: the same figures, since buckets of
    # multiples of the finest width share its boundaries.
    fine = series.filter(F.col("kind") == THROUGHPUT).select(
        *PARTITION, "start_ms", "messages", "seconds", "bytes", "bytes_seconds")
    widths = F.explode(F.array(*[F.lit(int(r)) for r in sorted(set(resolutions))]))
    every = fine.withColumn("resolution_s", widths).withColumn(
        "start_ms", _bucket_start(F.col("start_ms"), F.col("resolution_s")))
    return _sums(every, ["resolution_s"]).select(
        *PARTITION, "resolution_s",
        F.timestamp_millis(F.col("start_ms")).alias("start"),
        "messages", "seconds",
        (F.col("messages") / F.col("seconds")).alias("messages_per_s"),
        "bytes",
        (F.col("bytes") / F.col("bytes_seconds")).alias("bytes_per_s"),
    )


def check_resolutions(resolutions: Sequence[int]) -> int:
    """The finest of the resolutions (seconds), after checking each is a positive multiple of it."""
    if not resolutions or any(r <= 0 for r in resolutions):
        raise ValueError(f"resolutions must be positive seconds, got {list(resolutions)}")
    finest = min(resolutions)
    if any(r % finest for r in resolutions):
        raise ValueError(f"every resolution must be a multiple of the finest ({finest} s), got {list(resolutions)}")
    return finest


def _bucket_start(time_ms: Column, resolution_s: Column) -> Column:
    width = resolution_s.cast("long") * 1000
    return F.floor(time_ms / width) * width


def _sums(rows: DataFrame, keys: list[str]) -> DataFrame:
    return rows.groupBy(*PARTITION, *keys, "start_ms").agg(
        F.sum("messages").alias("messages"),
        F.sum("seconds").alias("seconds"),
        F.sum("bytes").alias("bytes"),
        F.sum("bytes_seconds").alias("bytes_seconds"),
    )


def topic_throughput(partition_throughput: DataFrame) -> DataFrame:
    """The partitions' buckets summed per topic: cluster, topic, resolution_s, start, partitions, messages,
    messages_per_s, bytes, bytes_per_s (null when no partition's sizes are known)."""
    return partition_throughput.groupBy("cluster", "topic", "resolution_s", "start").agg(
        F.count("*").alias("partitions"),
        F.sum("messages").alias("messages"),
        F.sum("messages_per_s").alias("messages_per_s"),
        F.sum("bytes").alias("bytes"),
        F.sum("bytes_per_s").alias("bytes_per_s"),
    )
