"""Lag and time-lag history per group and partition, and the catch-up forecast (ALGORITHMS.md 1 and 3).

Time lag interpolates the partition's end-offset history as kafka-lag-exporter does, with its
table rules: a point not newer than the newest, or with an offset below the newest, is rejected.
The live watcher keeps the last 60 points; here the table is the partition's whole sample history
up to the group sample's time, so a consumer further behind than that window is interpolated
between real points where the live figure extrapolates. (Keeping only the first and last point of
a flat run, the live table's space saving, changes no answer, so it is not replayed.)
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

PARTITION = ["cluster", "topic", "partition"]
GROUP_PARTITION = ["cluster", "group_id", "topic", "partition"]
_POINT = 0  # sort order at equal keys: the partition's own points before the group samples they serve
_SAMPLE = 1


def lag_history(topic_offsets: DataFrame, group_offsets: DataFrame) -> DataFrame:
    """One row per group sample and partition: cluster, group_id, topic, partition, time_ms, at,
    committed, end_offset, lag, time_lag_s, members.

    end_offset is the partition's latest end offset sampled at or before the group sample (null
    when none was); lag = max(0, end_offset - committed); time_lag_s = seconds between the sample
    and when `committed` was the end of the log, never negative, null when it cannot be told.
    """
    by_time = Window.partitionBy(*PARTITION).orderBy("time_ms")
    upto = by_time.rowsBetween(Window.unboundedPreceding, 0)
    newest_before = F.max("end_offset").over(by_time.rowsBetween(Window.unboundedPreceding, -1))
    ends = topic_offsets.select(*PARTITION, "time_ms", "end_offset").withColumn(
        "accepted", newest_before.isNull() | (F.col("end_offset") >= newest_before))
    # The table as of each end sample: its newest point (this sample when accepted), how many points
    # it holds and its oldest point.
    ends = ends.withColumn("n", F.sum(F.col("accepted").cast("int")).over(upto)).withColumn(
        "first", F.first(F.when(F.col("accepted"), F.struct(F.col("end_offset").alias("off"), F.col("time_ms").alias("t"))),
                         ignorenulls=True).over(upto))
    ends = ends.select(
        *PARTITION, "time_ms", F.col("end_offset").alias("raw_end"),
        F.when(F.col("accepted"), F.struct(
            F.col("end_offset").alias("off"), F.col("time_ms").alias("t"), F.col("n").alias("n"),
            F.col("first.off").alias("first_off"), F.col("first.t").alias("first_t"))).alias("point"),
    )
    samples = group_offsets.select(*GROUP_PARTITION, "time_ms", "committed", "members")

    # As of each group sample's time: the partition's end offset and the newest point of its table.
    as_of_time = Window.partitionBy(*PARTITION).orderBy("time_ms", "kind").rowsBetween(Window.unboundedPreceding, 0)
    step_a = (
        ends.withColumn("kind", F.lit(_POINT))
        .unionByName(samples.withColumn("kind", F.lit(_SAMPLE)), allowMissingColumns=True)
        .select(
            "*",
            F.last("raw_end", ignorenulls=True).over(as_of_time).alias("end_offset"),
            F.last("point", ignorenulls=True).over(as_of_time).alias("newest"),
        )
        .filter(F.col("kind") == _SAMPLE)
        .drop("raw_end", "point")
    )

    # The table's last point at or below the committed offset, and the point after it: the end
    # offsets only grow, so ordering by offset finds it, and it is older than the sample whenever
    # the committed offset is below the newest point's.
    points = ends.filter(F.col("point").isNotNull()).select(
        *PARTITION, "time_ms", F.col("point.off").alias("off"),
        F.struct(
            F.col("point.off").alias("off"), F.col("point.t").alias("t"),
            F.lead("point.off").over(by_time).alias("next_off"), F.lead("point.t").over(by_time).alias("next_t"),
        ).alias("point"),
    )
    as_of_offset = Window.partitionBy(*PARTITION).orderBy("off", "kind", "time_ms").rowsBetween(Window.unboundedPreceding, 0)
    step_b = (
        points.withColumn("kind", F.lit(_POINT))
        .unionByName(step_a.withColumn("off", F.col("committed")), allowMissingColumns=True)
        .select("*", F.last("point", ignorenulls=True).over(as_of_offset).alias("left"))
        .filter(F.col("kind") == _SAMPLE)
    )

    o = F.col("committed").cast("double")
    now = F.col("time_ms").cast("double")
    newest, left = F.col("newest"), F.col("left")
    interpolated = left["next_t"] - (left["next_off"] - o) * (left["next_t"] - left["t"]) / (left["next_off"] - left["off"])
    extrapolated = newest["t"] - (newest["off"] - o) * (newest["t"] - newest["first_t"]) / (newest["off"] - newest["first_off"])
    predicted = (
        F.when(newest["off"].isNull() | (newest["n"] < 2), None)
        .when((o >= newest["first_off"]) & (o < newest["off"]), interpolated)
        # The whole table is one flat run: an offset below it was the end before the oldest point
        # (at least that long ago); one above it never was (no time lag).
        .when(newest["off"] == newest["first_off"], F.when(o < newest["first_off"], newest["first_t"]).otherwise(now))
        .otherwise(extrapolated)
    )
    # greatest() skips nulls, so unknowns are kept unknown explicitly.
    time_lag_s = (
        F.when(newest["off"].isNull(), None)
        .when(o == newest["off"], 0.0)
        .when(predicted.isNull(), None)
        .otherwise(F.greatest(F.lit(0.0), (now - predicted) / 1000.0))
    )
    lag = F.when(F.col("end_offset").isNotNull(), F.greatest(F.lit(0), F.col("end_offset") - F.col("committed")))
    return step_b.select(
        *GROUP_PARTITION, "time_ms",
        F.timestamp_millis(F.col("time_ms")).alias("at"),
        "committed", "end_offset",
        lag.alias("lag"),
        time_lag_s.alias("time_lag_s"),
        "members",
    )


def group_lag_history(lag_history: DataFrame) -> DataFrame:
    """Per group and sample time: cluster, group_id, time_ms, at, partitions, total_lag, max_lag,
    time_lag_s (the worst partition's), members. Partitions of unknown lag are left out of the figures."""
    return lag_history.groupBy("cluster", "group_id", "time_ms").agg(
        F.count("lag").alias("partitions"),
        F.sum("lag").alias("total_lag"),
        F.max("lag").alias("max_lag"),
        F.max("time_lag_s").alias("time_lag_s"),
        F.max("members").alias("members"),
    ).select("cluster", "group_id", "time_ms", F.timestamp_millis(F.col("time_ms")).alias("at"),
             "partitions", "total_lag", "max_lag", "time_lag_s", "members")


def catch_up_forecast(lag_history: DataFrame, rate_window_s: float = 300.0) -> DataFrame:
    """For each group lagging at its latest sample: when it will reach the end of the log.

    cluster, group_id, at (latest sample), lag (total), consume_per_s, produce_per_s, seconds,
    eta, never. Rates are the committed and end offsets' growth per partition over the last
    `rate_window_s` of the group's samples, summed over its partitions. seconds = lag /
    (consume - produce) when the group gains on the log; otherwise never is true and seconds and
    eta are null.
    """
    known = lag_history.filter(F.col("end_offset").isNotNull())
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
