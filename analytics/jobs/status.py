"""Lag status over time: Burrow's rules (ALGORITHMS.md 2) replayed over the group samples.

Each group sample is one refresh of the live evaluation (consumers_app/lagstatus.py) and gets the
status that refresh would have shown: a sample of a group with members counts as a commit; in a
group without members an unchanged offset is no commit (only the end offset is noted), so STOP can
fire; the window holds the last `window` commits with the end offset and lag seen with each. One
difference, for samples closer together than `min_distance_s`: the live window measures that
distance from the stored commit's time, the replay from the previous commit, so only a run of
commits each closer than the distance yet spanning more than it differs (the watcher samples
groups every few seconds, so it does not arise).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

OK, WARN, STOP, STALL, REWIND, ERR = "OK", "WARN", "STOP", "STALL", "REWIND", "ERR"
GROUP_PARTITION = ["cluster", "group_id", "topic", "partition"]


def lag_status(lag_history: DataFrame, window: int = 10, min_distance_s: float = 1.0, allowed_lag: int = 0,
               min_fullness: float = 1.0) -> DataFrame:
    """Each partition's status at each group sample: cluster, group_id, topic, partition, time_ms, at,
    status (OK, WARN, STOP, STALL, REWIND), lag (current), fullness (of the window), committed, end_offset.

    Samples whose end offset is unknown are skipped, as the live evaluation skips them.
    """
    if window < 1:
        raise ValueError(f"window must hold at least 1 commit, got {window}")
    w = Window.partitionBy(*GROUP_PARTITION).orderBy("time_ms")
    upto = w.rowsBetween(Window.unboundedPreceding, 0)
    before = w.rowsBetween(Window.unboundedPreceding, -1)
    rows = lag_history.filter(F.col("end_offset").isNotNull()).select(
        *GROUP_PARTITION, "time_ms", "committed", "end_offset", "members")
    previous = F.lag("committed").over(w)
    rows = rows.withColumn(
        "is_commit", (F.coalesce(F.col("members"), F.lit(1)) > 0) | previous.isNull() | (F.col("committed") != previous))
    previous_commit_ms = F.last(F.when(F.col("is_commit"), F.col("time_ms")), ignorenulls=True).over(before)
    rows = rows.withColumn("new_entry", F.col("is_commit") & (
        previous_commit_ms.isNull() | (F.col("time_ms") - previous_commit_ms >= F.lit(min_distance_s * 1000.0))))
    rows = rows.withColumn("entry_id", F.sum(F.col("new_entry").cast("int")).over(upto)).withColumn(
        "entry_ms", F.last(F.when(F.col("new_entry"), F.col("time_ms")), ignorenulls=True).over(upto))
    # A commit that comes too soon replaces the stored one's offset, lag and end offset but keeps its time.
    rows = rows.withColumn("entry", F.when(F.col("is_commit"), F.struct(
        F.col("committed").alias("o"),
        F.col("entry_ms").alias("at"),
        F.greatest(F.lit(0), F.col("end_offset") - F.col("committed")).alias("lag"),
        F.col("end_offset").alias("e"),
    )))
    rows = rows.withColumn("current", F.last("entry", ignorenulls=True).over(upto))

    # The window at a sample: the last window-1 finished entries before its own, then its own as it stands.
    entries = F.array(F.col("current"))
    if window > 1:
        commits = rows.filter(F.col("is_commit")).withColumn("next_id", F.lead("entry_id").over(w))
        finished = commits.filter(F.col("next_id").isNull() | (F.col("next_id") != F.col("entry_id")))
        by_entry = Window.partitionBy(*GROUP_PARTITION).orderBy("entry_id").rowsBetween(-(window - 2), 0)
        prefixes = finished.select(*GROUP_PARTITION, (F.col("entry_id") + 1).alias("entry_id"),
                                   F.collect_list("entry").over(by_entry).alias("prefix"))
        rows = rows.join(prefixes, on=[*GROUP_PARTITION, "entry_id"], how="left")
        entries = F.when(F.col("prefix").isNull(), entries).otherwise(F.concat(F.col("prefix"), entries))
    rows = rows.withColumn("entries", entries)

    last, first = "element_at(entries, -1)", "element_at(entries, 1)"
    behind_all_along = f"forall(entries, x -> x.lag > {int(allowed_lag)})"
    status = F.expr(f"""
        CASE
          WHEN size(entries) / {window}.0 < {float(min_fullness)} THEN '{OK}'
          WHEN greatest(end_offset - {last}.o, 0) <= {int(allowed_lag)} THEN '{OK}'
          WHEN time_ms - {last}.at > {last}.at - {first}.at AND NOT exists(entries, x -> x.e <= {last}.o) THEN '{STOP}'
          WHEN size(filter(entries, (x, i) -> i > 0 AND x.o < get(entries, i - 1).o
                 AND size(filter(entries, (y, j) -> j > i AND y.o >= get(entries, i - 1).o)) = 0)) > 0 THEN '{REWIND}'
          WHEN {behind_all_along} AND forall(entries, x -> x.o = {first}.o) THEN '{STALL}'
          WHEN {behind_all_along} AND size(filter(entries, (x, i) -> i > 0 AND x.lag < get(entries, i - 1).lag)) = 0
            THEN '{WARN}'
          ELSE '{OK}'
        END""")
    return rows.select(
        *GROUP_PARTITION, "time_ms",
        F.timestamp_millis(F.col("time_ms")).alias("at"),
        status.alias("status"),
        F.greatest(F.lit(0), F.col("end_offset") - F.col("current.o")).alias("lag"),
        (F.size("entries") / float(window)).alias("fullness"),
        "committed", "end_offset",
    )


def group_status(partition_status: DataFrame) -> DataFrame:
    """The group's status at each sample: the worst partition's on the group scale (STOP, STALL and
    REWIND are ERR). cluster, group_id, time_ms, at, status, partitions, total_lag, max_lag,
    max_lag_topic, max_lag_partition, complete (fraction of partitions whose window is full)."""
    rank = F.when(F.col("status") == OK, 1).when(F.col("status") == WARN, 2).otherwise(3)
    worst = F.max(rank)
    return partition_status.groupBy("cluster", "group_id", "time_ms").agg(
        F.when(worst == 1, OK).when(worst == 2, WARN).otherwise(ERR).alias("status"),
        F.count("*").alias("partitions"),
        F.sum("lag").alias("total_lag"),
        F.max("lag").alias("max_lag"),
        F.max_by(F.struct("topic", "partition"), "lag").alias("max_lag_at"),
        F.avg((F.col("fullness") >= 1.0).cast("double")).alias("complete"),
    ).select(
        "cluster", "group_id", "time_ms", F.timestamp_millis(F.col("time_ms")).alias("at"), "status", "partitions",
        "total_lag", "max_lag", F.col("max_lag_at.topic").alias("max_lag_topic"),
        F.col("max_lag_at.partition").alias("max_lag_partition"), "complete",
    )


def status_intervals(status_history: DataFrame, keys: Sequence[str]) -> DataFrame:
    """Runs of one status: keys..., status, start, end (first and last sample with it), until (the
    first sample with the next status, null for the current run), samples."""
    keys = list(keys)
    w = Window.partitionBy(*keys).orderBy("time_ms")
    previous = F.lag("status").over(w)
    changed = (previous.isNull() | (previous != F.col("status"))).cast("int")
    runs = status_history.select(*keys, "time_ms", "status", changed.alias("changed")).withColumn(
        "run", F.sum("changed").over(w.rowsBetween(Window.unboundedPreceding, 0)))
    grouped = runs.groupBy(*keys, "run", "status").agg(
        F.min("time_ms").alias("start_ms"), F.max("time_ms").alias("end_ms"), F.count("*").alias("samples"))
    next_start = F.lead("start_ms").over(Window.partitionBy(*keys).orderBy("run"))
    return grouped.select(
        *keys, "status",
        F.timestamp_millis(F.col("start_ms")).alias("start"),
        F.timestamp_millis(F.col("end_ms")).alias("end"),
        F.timestamp_millis(next_start).alias("until"),
        "samples",
    )
