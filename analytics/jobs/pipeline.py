"""All the jobs over one range of samples, their Parquet tables and the small JSON summary pages read."""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from analytics.jobs.inventory import idle_topics, orphaned_groups, skew
from analytics.jobs.lag import catch_up_forecast, group_lag_history, lag_history, lag_rows
from analytics.jobs.samples import group_offsets, parse_samples, read_samples, topic_offsets
from analytics.jobs.series import topic_series
from analytics.jobs.status import group_status, lag_status, status_intervals
from analytics.jobs.throughput import DEFAULT_RESOLUTIONS, throughput, topic_throughput

SUMMARY_FILE = "summary.json"
SUMMARY_FORMAT = 1


@dataclass(frozen=True)
class Params:
    resolutions: tuple[int, ...] = DEFAULT_RESOLUTIONS
    status_window: int = 10
    status_min_distance_s: float = 1.0
    allowed_lag: int = 0
    status_min_fullness: float = 1.0
    hot_factor: float = 1.5
    hot_min_messages: int = 100
    idle_days: float = 7.0
    orphan_days: float = 7.0
    rate_window_s: float = 300.0


def compute(samples: DataFrame, params: Params = Params(), now_ms: int | None = None) -> dict[str, DataFrame]:
    """Every result table from parsed samples (`parse_samples`), by name. Nothing runs until they are used."""
    return _compute(samples, topic_series(samples, params.resolutions, detail=True), params, now_ms)


def _compute(samples: DataFrame, series: DataFrame, params: Params, now_ms: int | None) -> dict[str, DataFrame]:
    ends = topic_offsets(samples)
    commits = group_offsets(samples)
    partition_tp = throughput(series)
    per_partition = lag_rows(series)
    statuses = lag_status(per_partition, params.status_window, params.status_min_distance_s, params.allowed_lag,
                          params.status_min_fullness)
    groups = group_status(statuses)
    return {
        "partition_throughput": partition_tp,
        "topic_throughput": topic_throughput(series),
        "lag_history": lag_history(series),
        "group_lag_history": group_lag_history(series),
        "partition_status": statuses,
        "group_status": groups,
        "group_status_intervals": status_intervals(groups, ["cluster", "group_id"]),
        "skew": skew(ends, params.hot_factor, params.hot_min_messages),
        "idle_topics": idle_topics(ends, params.idle_days, now_ms),
        "orphaned_groups": orphaned_groups(commits, params.orphan_days, now_ms),
        "forecasts": catch_up_forecast(per_partition, params.rate_window_s),
    }


def summarize(results: Mapping[str, DataFrame], limit: int = 20) -> dict[str, Any]:
    """The few figures an overview page shows, JSON-ready (at most `limit` rows per list)."""
    partitions = results["partition_throughput"]
    # The widest buckets are the fewest rows to add up; every resolution gives the same averages.
    widest = partitions.agg(F.max("resolution_s")).first()
    per_partition = partitions.filter(F.col("resolution_s") == (widest[0] if widest else 0)).groupBy(
        "cluster", "topic", "partition").agg(
        (F.sum("messages") / F.sum("seconds")).alias("messages_per_s"),
        F.sum("messages").alias("messages"),
        F.sum("bytes").alias("bytes"),
    )
    topics = per_partition.groupBy("cluster", "topic").agg(
        F.sum("messages_per_s").alias("messages_per_s"), F.sum("messages").alias("messages"), F.sum("bytes").alias("bytes"))
    groups = results["group_status"].join(
        results["group_lag_history"].select("cluster", "group_id", "time_ms", "time_lag_s"), ["cluster", "group_id", "time_ms"])
    newest = groups.withColumn("newest", F.max("time_ms").over(Window.partitionBy("cluster", "group_id"))).filter(
        F.col("time_ms") == F.col("newest"))
    return {
        "topics_by_throughput": _rows(topics.orderBy(F.col("messages_per_s").desc(), "cluster", "topic"), limit),
        "worst_groups": _rows(newest.select("cluster", "group_id", "at", "status", "total_lag", "max_lag", "time_lag_s")
                              .orderBy(F.col("total_lag").desc(), "cluster", "group_id"), limit),
        "hot_partitions": _rows(results["skew"].filter(F.col("hot")).orderBy(F.col("ratio").desc()), limit),
        "idle_topics": _rows(results["idle_topics"].orderBy(F.col("idle_days").desc()), limit),
        "orphaned_groups": _rows(results["orphaned_groups"].orderBy(F.col("quiet_days").desc()), limit),
        "forecasts": _rows(results["forecasts"].orderBy(F.col("seconds").desc_nulls_first()), limit),
    }


def write_results(results: Mapping[str, DataFrame], directory: str | os.PathLike[str],
                  summary: Mapping[str, Any] | None = None) -> Path:
    """Each table as Parquet in `directory`/<name>/ (replacing what was there), then summary.json.

    summary.json is written last and atomically, so a reader that waits for it sees whole tables;
    give each run its own directory so readers of the previous run are not disturbed. The
    directory must be reachable at the same path by the Spark executors (local disk with
    `local[*]`). Returns the summary file's path.
    """
    write_tables(results, directory)
    return write_summary(directory, list(results), summary)


def write_tables(results: Mapping[str, DataFrame], directory: str | os.PathLike[str]) -> None:
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    for name, df in results.items():
        df.write.mode("overwrite").parquet(str(root / name))


def read_tables(spark: SparkSession, directory: str | os.PathLike[str], names: Iterable[str]) -> dict[str, DataFrame]:
    return {name: spark.read.parquet(str(Path(directory) / name)) for name in names}


def write_summary(directory: str | os.PathLike[str], tables: Iterable[str], summary: Mapping[str, Any] | None = None) -> Path:
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    document = {
        "format": SUMMARY_FORMAT,
        "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "tables": {name: name for name in tables},
        **(summary or {}),
    }
    path = root / SUMMARY_FILE
    fd, tmp = tempfile.mkstemp(dir=root, prefix=".summary-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(document, f, indent=1, default=_json_value)
    os.replace(tmp, path)
    return path


def process(spark: SparkSession, samples: DataFrame, directory: str | os.PathLike[str], params: Params = Params(),
            now_ms: int | None = None) -> Path:
    """Every table from parsed samples, written to `directory`, then summary.json; returns its path.

    The samples, the per-topic pass, the lag history and the partition statuses feed several tables
    each, so they are kept (memory, spilling to disk) while the tables are written; the summary reads
    the written tables back instead of computing anything again.
    """
    samples = samples.persist()
    series = topic_series(samples, params.resolutions, detail=True).persist()
    results = _compute(samples, series, params, now_ms)
    kept = [samples, series, results["partition_status"].persist()]
    try:
        covered = _range(samples)
        write_tables(results, directory)
    finally:
        for df in kept:
            df.unpersist()
    summary = summarize(read_tables(spark, directory, results))
    return write_summary(directory, list(results), {"params": asdict(params), "range": covered, **summary})


def run(spark: SparkSession, bootstrap_servers: str, topic: str, directory: str | os.PathLike[str],
        start_ms: int | None = None, end_ms: int | None = None, params: Params = Params(),
        options: Mapping[str, str] | None = None) -> Path:
    """Read the samples of [start_ms, end_ms) from the sample topic and `process` them."""
    samples = parse_samples(read_samples(spark, bootstrap_servers, topic, start_ms, options), start_ms, end_ms)
    return process(spark, samples, directory, params, now_ms=end_ms)


def _range(samples: DataFrame) -> dict[str, Any]:
    row = samples.agg(F.min("first_ms"), F.max("last_ms"), F.sum("records")).first()
    if row is None or row[0] is None:
        return {"start": None, "end": None, "records": 0}
    return {"start": _iso_ms(row[0]), "end": _iso_ms(row[1]), "records": int(row[2] or 0)}


def _rows(df: DataFrame, limit: int) -> list[dict[str, Any]]:
    return [{k: _plain(v) for k, v in row.asDict(recursive=True).items()} for row in df.limit(limit).collect()]


def _plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, date):
        return _json_value(value)
    return value


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        # Spark hands timestamps back as naive local times; astimezone reads a naive one as local.
        return value.astimezone(UTC).isoformat(timespec="milliseconds")
    if isinstance(value, date):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def _iso_ms(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")
