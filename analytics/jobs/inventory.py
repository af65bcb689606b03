"""Skew and hot partitions, idle topics, orphaned groups."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from analytics.jobs.throughput import increments

DAY_MS = 86_400_000


def skew(topic_offsets: DataFrame, hot_factor: float = 1.5, min_messages: int = 100) -> DataFrame:
    """Each partition's share of its topic's messages over the samples, against an even split.

    cluster, topic, partition, partitions, messages, share, even_share (1 / partitions), ratio
    (share / even_share), hot (ratio > hot_factor, in a topic that took at least `min_messages`).
    Topics that took nothing are left out.
    """
    if hot_factor <= 1.0:
        raise ValueError(f"hot_factor must be above 1 (an even split), got {hot_factor}")
    seen = topic_offsets.select("cluster", "topic", "partition").distinct()
    taken = increments(topic_offsets).groupBy("cluster", "topic", "partition").agg(F.sum("messages").alias("messages"))
    per_partition = seen.join(taken, ["cluster", "topic", "partition"], "left").fillna(0, ["messages"])
    topic = Window.partitionBy("cluster", "topic")
    total = F.sum("messages").over(topic)
    rows = per_partition.select(
        "cluster", "topic", "partition", "messages",
        F.count("*").over(topic).alias("partitions"),
        total.alias("topic_messages"),
    ).filter(F.col("topic_messages") > 0)
    share = F.col("messages") / F.col("topic_messages")
    even = 1.0 / F.col("partitions")
    return rows.select(
        "cluster", "topic", "partition", "partitions", "messages",
        share.alias("share"), even.alias("even_share"), (share / even).alias("ratio"),
        ((share / even > hot_factor) & (F.col("topic_messages") >= min_messages)).alias("hot"),
    )


def idle_topics(topic_offsets: DataFrame, idle_days: float = 7.0, now_ms: int | None = None,
                seen_within_s: float = 600.0) -> DataFrame:
    """Topics with no writes for `idle_days` as of `now_ms` (default: the cluster's latest sample).

    cluster, topic, partitions, last_write (null when none was seen), idle_since (the last write,
    else the first sample: no write seen since at least then), idle_days, end_offsets (sum). A topic
    is only judged when the samples cover the whole period, and only while it still exists (sampled
    within `seen_within_s` of now).
    """
    writes = increments(topic_offsets).filter(F.col("messages") > 0).groupBy("cluster", "topic").agg(
        F.max("time_ms").alias("last_write_ms"))
    latest = Window.partitionBy("cluster", "topic").orderBy(F.col("time_ms").desc())
    topics = (
        topic_offsets.withColumn("newest", F.rank().over(latest))
        .groupBy("cluster", "topic").agg(
            F.min("time_ms").alias("first_ms"),
            F.max("time_ms").alias("last_seen_ms"),
            F.countDistinct("partition").alias("partitions"),
            F.sum(F.when(F.col("newest") == 1, F.col("end_offset"))).alias("end_offsets"),
        )
        .join(writes, ["cluster", "topic"], "left")
    )
    topics = _with_now(topics, "last_seen_ms", now_ms)
    since = F.coalesce(F.col("last_write_ms"), F.col("first_ms"))
    quiet_days = (F.col("now_ms") - since) / DAY_MS
    return topics.filter(_present(seen_within_s) & (quiet_days >= idle_days)).select(
        "cluster", "topic", "partitions",
        F.timestamp_millis(F.col("last_write_ms")).alias("last_write"),
        F.timestamp_millis(since).alias("idle_since"),
        quiet_days.alias("idle_days"),
        "end_offsets",
    )


def orphaned_groups(group_offsets: DataFrame, orphan_days: float = 7.0, now_ms: int | None = None,
                    seen_within_s: float = 600.0) -> DataFrame:
    """Groups with no members and no commits for `orphan_days` as of `now_ms` (default: the
    cluster's latest sample): their committed offsets are kept by Kafka but nobody uses them.

    cluster, group_id, last_member (last sample with members), last_commit (last sample where a
    committed offset changed), quiet_since (the later of the two, else the first sample),
    quiet_days, topics. Only groups still sampled within `seen_within_s` of now.
    """
    w = Window.partitionBy("cluster", "group_id", "topic", "partition").orderBy("time_ms")
    previous = F.lag("committed").over(w)
    rows = group_offsets.withColumn("moved", previous.isNotNull() & (F.col("committed") != previous))
    groups = rows.groupBy("cluster", "group_id").agg(
        F.min("time_ms").alias("first_ms"),
        F.max("time_ms").alias("last_seen_ms"),
        F.max(F.when(F.col("members") > 0, F.col("time_ms"))).alias("last_member_ms"),
        F.max(F.when(F.col("moved"), F.col("time_ms"))).alias("last_commit_ms"),
        F.countDistinct("topic").alias("topics"),
    )
    groups = _with_now(groups, "last_seen_ms", now_ms)
    since = F.coalesce(F.greatest("last_member_ms", "last_commit_ms"), F.col("first_ms"))
    quiet_days = (F.col("now_ms") - since) / DAY_MS
    return groups.filter(_present(seen_within_s) & (quiet_days >= orphan_days)).select(
        "cluster", "group_id",
        F.timestamp_millis(F.col("last_member_ms")).alias("last_member"),
        F.timestamp_millis(F.col("last_commit_ms")).alias("last_commit"),
        F.timestamp_millis(since).alias("quiet_since"),
        quiet_days.alias("quiet_days"),
        "topics",
    )


def _with_now(df: DataFrame, last_seen: str, now_ms: int | None) -> DataFrame:
    now = F.lit(int(now_ms)) if now_ms is not None else F.max(last_seen).over(Window.partitionBy("cluster"))
    return df.withColumn("now_ms", now)


def _present(seen_within_s: float) -> Column:
    return F.col("last_seen_ms") >= F.col("now_ms") - F.lit(int(seen_within_s * 1000))
