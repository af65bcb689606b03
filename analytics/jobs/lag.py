"""Lag and time-lag history per group and partition, and the catch-up forecast (ALGORITHMS.md 1 and 3).

Time lag interpolates the partition's end-offset history as kafka-lag-exporter does, with its
table rules: a point not newer than the newest, or with an offset below the newest, is rejected.
The live watcher keeps the last 60 points; here the table is the partition's whole sample history
up to the group sample's time, so a consumer further behind than that window is interpolated
between real points where the live figure extrapolates. (Keeping only the first and last point of
a flat run, the live table's space saving, changes no answer, so it is not replayed.)

The figures are computed per topic on samples x partitions matrices by series.py; the functions
here select and shape its rows.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from analytics.jobs.series import DETAIL, GROUP_SAMPLE, LAG

PARTITION = ["cluster", "topic", "partition"]
GROUP_PARTITION = ["cluster", "group_id", "topic", "partition"]


def lag_history(series: DataFrame) -> DataFrame:
    """Per group, partition and bucket of the finest resolution: cluster, group_id, topic, partition,
    start (bucket), time_ms and at (the bucket's last sample with a committed offset), committed,
    end_offset, lag, time_lag_s (at that sample), max_lag, max_time_lag_s (the bucket's largest),
    members, samples (in the bucket).

    `series` is `topic_series(samples, ...)`. At each group sample, for each partition with a
    committed offset: end_offset is the partition's latest end offset sampled at or before the
    sample (null when none was); lag = max(0, end_offset - committed); time_lag_s = seconds between
    the sample and when the committed offset was the end of the log, never negative, null when it
    cannot be told. `lag_rows` gives every sample; `group_lag_history` every sample per group.
    """
    return series.filter(F.col("kind") == LAG).select(
        *GROUP_PARTITION, F.timestamp_millis(F.col("start_ms")).alias("start"), "time_ms",
        F.timestamp_millis(F.col("time_ms")).alias("at"), "committed", "end_offset", "lag", "time_lag_s",
        "max_lag", "max_time_lag_s", "members", "samples",
    )


def lag_rows(series: DataFrame) -> DataFrame:
    """Every group sample and partition with a committed offset (`series` made with detail=True):
    cluster, group_id, topic, partition, time_ms, at, committed, end_offset, lag, time_lag_s, members."""
    return series.filter(F.col("kind") == DETAIL).select(
        *GROUP_PARTITION, "time_ms", F.timestamp_millis(F.col("time_ms")).alias("at"),
        "committed", "end_offset", "lag", "time_lag_s", "members",
    )


def group_lag_history(series: DataFrame) -> DataFrame:
    """Per group and sample time: cluster, group_id, time_ms, at, partitions, total_lag, max_lag,
    time_lag_s (the worst partition's), members. Partitions of unknown lag are left out of the figures."""
    return series.filter(F.col("kind") == GROUP_SAMPLE).groupBy("cluster", "group_id", "time_ms").agg(
        F.sum("samples").cast("long").alias("partitions"),
        F.sum("total_lag").alias("total_lag"),
        F.max("max_lag").alias("max_lag"),
        F.max("max_time_lag_s").alias("time_lag_s"),
        F.max("members").alias("members"),
    ).select("cluster", "group_id", "time_ms", F.timestamp_millis(F.col("time_ms")).alias("at"),
             "partitions", "total_lag", "max_lag", "time_lag_s", "members")


def catch_up_forecast(lag_rows: DataFrame, rate_window_s: float = 300.0) -> DataFrame:
    """For each group lagging at its latest sample: when it will reach the end of the log.

    cluster, group_id, at (latest sample), lag (total), consume_per_s, produce_per_s, seconds,
    eta, never. Rates are the committed and end offsets' growth per partition over the last
    `rate_window_s` of the group's samples, summed over its partitions. seconds = lag /
    (consume - produce) when the group gains on the log; otherwise never is true and seconds and
    eta are null.
    """
    known = lag_rows.filter(F.col("end_offset").isNotNull())
    latest = Window.partitionBy("cluster", "group_id")
    recent = known.withColumn("latest_ms", F.max("time_ms").over(latest)).filter(
        F.col("time_ms") >= F.col("latest_ms") - F.lit(int(rate_window_s * 1000)))
    per_partition = recent.groupBy(*GROUP_PARTITION).agg(
        F.first("latest_ms").alias("latest_ms"),
        F.min("time_ms").alias("t0"),
        F.max("time_ms").alias("t1"),
        F.min_by("committed", "time_ms").alias("c0"),
        F.max_by("committed", "time_ms").alias("c1"),
        F.min_by("end_offset", "time_ms").alias("e0"),
        F.max_by("end_offset", "time_ms").alias("e1"),
        F.max_by("lag", "time_ms").alias("lag"),
    )
    seconds = (F.col("t1") - F.col("t0")) / 1000.0
    rates = per_partition.filter(F.col("t1") == F.col("latest_ms")).select(
        "cluster", "group_id", "latest_ms", "lag",
        F.when(seconds > 0, (F.col("c1") - F.col("c0")) / seconds).alias("consume"),
        F.when(seconds > 0, (F.col("e1") - F.col("e0")) / seconds).alias("produce"),
    )
    groups = rates.groupBy("cluster", "group_id").agg(
        F.first("latest_ms").alias("latest_ms"),
        F.sum("lag").alias("lag"),
        F.sum("consume").alias("consume_per_s"),
        F.sum("produce").alias("produce_per_s"),
    ).filter(F.col("lag") > 0)
    gaining = F.col("consume_per_s") > F.col("produce_per_s")
    forecast = F.when(gaining, F.col("lag") / (F.col("consume_per_s") - F.col("produce_per_s")))
    return groups.select(
        "cluster", "group_id",
        F.timestamp_millis(F.col("latest_ms")).alias("at"),
        "lag", "consume_per_s", "produce_per_s",
        forecast.alias("seconds"),
        F.timestamp_millis(F.col("latest_ms") + F.round(forecast * 1000).cast("long")).alias("eta"),
        (~F.coalesce(gaining, F.lit(False))).alias("never"),
    )
