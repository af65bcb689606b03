"""Reading and parsing offset samples (format: analytics/records.py, analytics/README.md)."""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, IntegerType, LongType, MapType, StringType, StructField, StructType

from analytics.records import FORMAT_VERSION, GROUP, TOPIC

SAMPLE_SCHEMA = StructType([
    StructField("v", IntegerType()),
    StructField("kind", StringType()),
    StructField("cluster", StringType()),
    StructField("topic", StringType()),
    StructField("group", StringType()),
    StructField("time", LongType()),
    StructField("end", ArrayType(LongType())),
    StructField("bytes", ArrayType(LongType())),
    StructField("members", IntegerType()),
    StructField("offsets", MapType(StringType(), ArrayType(LongType()))),
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
    """One row per sample record: kind, cluster, topic, group_id, time_ms, end, bytes, members, offsets.

    `raw` needs a `value` column (binary or string JSON), as the Kafka connector gives. Records that
    are not JSON, of another format version, or without kind, cluster, name or time are dropped;
    `start_ms` <= time_ms < `end_ms` when given.
    """
    r = F.from_json(F.col("value").cast("string"), SAMPLE_SCHEMA).alias("r")
    parsed = raw.select(r).select(
        F.col("r.kind").alias("kind"),
        F.col("r.cluster").alias("cluster"),
        F.col("r.topic").alias("topic"),
        F.col("r.group").alias("group_id"),
        F.col("r.time").alias("time_ms"),
        F.col("r.end").alias("end"),
        F.col("r.bytes").alias("bytes"),
        F.col("r.members").alias("members"),
        F.col("r.offsets").alias("offsets"),
        F.col("r.v").alias("v"),
    )
    ok: Column = (
        (F.col("v") == FORMAT_VERSION)
        & F.col("cluster").isNotNull()
        & F.col("time_ms").isNotNull()
        & (((F.col("kind") == TOPIC) & F.col("topic").isNotNull()) | ((F.col("kind") == GROUP) & F.col("group_id").isNotNull()))
    )
    if start_ms is not None:
        ok = ok & (F.col("time_ms") >= F.lit(int(start_ms)))
    if end_ms is not None:
        ok = ok & (F.col("time_ms") < F.lit(int(end_ms)))
    return parsed.filter(ok).drop("v")


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
    by_topic = samples.filter(F.col("kind") == GROUP).select(
        "cluster", "group_id", "time_ms", "members", F.explode("offsets").alias("topic", "committed_list"))
    exploded = by_topic.select(
        "cluster", "group_id", "topic", "time_ms", "members", F.posexplode("committed_list").alias("partition", "committed"))
    return (
        exploded.filter(F.col("committed").isNotNull())
        .select("cluster", "group_id", "topic", "partition", "time_ms", "committed", "members")
        .dropDuplicates(["cluster", "group_id", "topic", "partition", "time_ms"])
    )
