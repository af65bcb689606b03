"""Throughput per topic and partition from successive end offsets.

`increments` defines what a partition took in between two samples; the per-topic pass (series.py)
sums those intervals per bucket on each topic's samples x partitions matrix, instead of one row per
partition and sample, and `throughput` and `topic_throughput` select its rows.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from analytics.jobs.series import THROUGHPUT, TOPIC_THROUGHPUT

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


def throughput(series: DataFrame) -> DataFrame:
    """Messages/s and bytes/s per partition and time bucket, at each resolution (seconds).

    `series` is `topic_series(samples, resolutions)`, which sums the intervals between consecutive
    samples of each partition (as `increments` defines them) per bucket. cluster, topic, partition,
    resolution_s, start (bucket start, UTC), messages, seconds (the time the samples cover in the
    bucket), messages_per_s, bytes, bytes_per_s (null where sizes are unknown). Each interval
    between two samples counts in the bucket of its later sample, and a rate is what was taken in
    over the time covered, so a bucket the samples only partly cover (the first, the last, a
    watcher restart) still shows the true rate.
    """
    return series.filter(F.col("kind") == THROUGHPUT).select(
        *PARTITION, "resolution_s", F.timestamp_millis(F.col("start_ms")).alias("start"),
        "messages", "seconds", "messages_per_s", "bytes", "bytes_per_s",
    )


def topic_throughput(series: DataFrame) -> DataFrame:
    """The partitions' buckets summed per topic: cluster, topic, resolution_s, start, partitions, messages,
    messages_per_s, bytes, bytes_per_s (null when no partition's sizes are known)."""
    return series.filter(F.col("kind") == TOPIC_THROUGHPUT).select(
        "cluster", "topic", "resolution_s", F.timestamp_millis(F.col("start_ms")).alias("start"),
        "partitions", "messages", "messages_per_s", "bytes", "bytes_per_s",
    )
