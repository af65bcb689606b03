"""analytics.jobs on synthetic samples with known answers, in one local Spark session.

Every scenario gets its own cluster, topic or group in one set of sample records (built with
analytics.records, as the watcher will), parsed and computed once; each table is collected once and
the tests read those rows. Spark pays for every distinct query plan on a busy 2-core machine, so
the tests share them rather than starting jobs of their own.
"""

from __future__ import annotations

import json
import logging
import random
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F

from analytics.jobs.lag import lag_rows
from analytics.jobs.pipeline import Params, compute, process
from analytics.jobs.samples import parse_samples, read_samples
from analytics.jobs.series import topic_series
from analytics.records import by_partition, group_record, pack, read_record, topic_record, unpack
from analytics.session import connector_jars, spark_session
from consumers_app.lagstatus import PartitionWindow, evaluate_partition
from consumers_app.timelag import OffsetTimeTable, time_lag
from tests.spark_conf import SMALL_SPARK_CONF

pytestmark = pytest.mark.usefixtures("spark")

T0 = 1_700_000_025_000  # 45 s past a minute: buckets are not aligned with the samples
S = 1000  # ms
DAY = 86_400_000


def t(seconds: float) -> int:
    return T0 + round(seconds * S)


class Samples:
    """Sample records for every scenario, as (key, value) pairs."""

    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes]] = []

    def topic(self, cluster: str, topic: str, time_ms: int, ends: list[int | None], sizes: list[int | None] | None = None,
              version: int = 2) -> None:
        key, value = topic_record(cluster, topic, time_ms, ends, sizes)
        if version == 1:  # what the watcher wrote before packed arrays: plain JSON lists, still read
            value = json.dumps({**read_record(value), "v": 1}).encode()
        self.records.append((key, value))

    def group(self, cluster: str, group: str, time_ms: int, offsets: dict[str, list[int | None]], members: int = 1) -> None:
        self.records.append(group_record(cluster, group, time_ms, offsets, members))


def steady_producer(s: Samples) -> None:
    """Exactly 100 msg/s of 250-byte messages for 60 s, sampled about once a second with jitter."""
    rng = random.Random(1)
    times = [t(0)] + [t(i + rng.uniform(-0.3, 0.3)) for i in range(1, 60)] + [t(60)]
    for at in times:
        sent = 100 * (at - T0) // S
        s.topic("c", "steady", at, [sent], [sent * 250])


def HOT_PARTITION() -> int:
    return zlib.crc32(b"hot-customer") % 4


def keyed_producers(s: Samples) -> None:
    """Two 4-partition topics, 1,000 msg/s each, keys hashed to partitions: in 'keyed' half the
    messages carry one key; in 'even' the keys are uniform."""
    rng = random.Random(2)
    keys = [f"customer-{i}".encode() for i in range(200)]
    counts = {"keyed": [0] * 4, "even": [0] * 4}
    for second in range(11):
        s.topic("c", "keyed", t(second), list(counts["keyed"]))
        s.topic("c", "even", t(second), list(counts["even"]), version=1)
        for _ in range(1000):
            hot = b"hot-customer" if rng.random() < 0.5 else rng.choice(keys)
            counts["keyed"][zlib.crc32(hot) % 4] += 1
            counts["even"][zlib.crc32(rng.choice(keys)) % 4] += 1


def stalled_consumer(s: Samples) -> None:
    """10 msg/s; the group keeps up, commits the same offset from t=200 s to t=390 s, then catches up.
    Samples every 10 s, so the 10-commit window is all stalled commits from t=300 s to t=390 s."""
    for second in range(0, 610, 10):
        end = 10 * second
        committed = 10 * 200 if 200 <= second < 400 else end
        s.topic("c", "stall-topic", t(second), [end])
        s.group("c", "stalled", t(second), {"stall-topic": [committed]})


def idle_and_orphans(s: Samples) -> None:
    """Cluster 'd': nine days sampled every 6 hours."""
    for step in range(37):
        at = T0 + step * DAY // 4
        day = step / 4
        s.topic("d", "quiet", at, [min(step, 4) * 10, 7])  # written on the first day only
        s.topic("d", "busy", at, [step * 100])
        if day >= 5:
            s.topic("d", "young-quiet", at, [3])  # seen 4 days, no writes: not known to be idle for 7
        if day <= 2:
            s.topic("d", "gone", at, [5])  # deleted on day 2: not idle, gone
        s.group("d", "abandoned", at, {"quiet": [40, 7]}, members=0)
        s.group("d", "active", at, {"busy": [step * 100]}, members=1)
        s.group("d", "left-recently", at, {"busy": [100]}, members=1 if day <= 4 else 0)
        s.group("d", "reset-on-day-6", at, {"busy": [100 if day < 6 else 200]}, members=0)


def forecast_groups(s: Samples) -> None:
    """Produced at 50 msg/s; 'gaining' consumes 60 msg/s and lags 600 at the end, 'falling' 40 msg/s."""
    for second in range(0, 305, 5):
        end = 10_000 + 50 * second
        s.topic("c", "fc", t(second), [end])
        s.group("c", "gaining", t(second), {"fc": [end + 300 * 50 - 600 - 60 * 300 + 60 * second - 50 * second]})
        s.group("c", "falling", t(second), {"fc": [6_000 + 40 * second]})


def hand_example(s: Samples) -> None:
    """End offsets 100, 200, 200, 500, 500, 400 at t = 0, 10, ..., 50 s (the last one is below the
    newest, rejected for time lag), and commits worked out by hand in test_lag_and_time_lag_by_hand."""
    for second, end in zip(range(0, 60, 10), [100, 200, 200, 500, 500, 400], strict=True):
        s.topic("h", "hand", t(second), [end])
    for second, committed in zip(range(0, 60, 10), [100, 150, 200, 200, 350, 350], strict=True):
        s.group("h", "reader", t(second), {"hand": [committed]})
    s.group("h", "far-behind", t(10), {"hand": [50]})
    s.group("h", "early", t(-5), {"hand": [0]})


def random_walks(s: Samples) -> list[tuple[str, list[tuple[int, int, int, int]]]]:
    """Cluster 'x': groups going through stretches of keeping up, lagging steadily, stalling, stopping
    (no members), rewinding and wandering, over end offsets that grow unevenly with flat runs,
    sampled every 5 s. Returns, per group, its (time_ms, end, committed, members) so the live
    evaluators can replay them."""
    rng = random.Random(3)
    behaviours = ["follow", "behind", "stall", "follow", "behind", "stop", "rewind", "wander"]
    walks = []
    for g in range(8):
        end, committed = 1000, 1000
        rows: list[tuple[int, int, int, int]] = []
        plan = behaviours[g:] + behaviours[:g]
        for behaviour in plan:
            if behaviour == "rewind":
                committed = max(0, committed - rng.randint(50, 200))
            elif behaviour == "behind":
                end += 100  # a burst the group does not keep up with
            # A stop must outlast the window's span (10 commits 5 s apart) to be one.
            for _ in range(rng.randint(12, 16) if behaviour == "stop" else rng.randint(8, 14)):
                grow = rng.choice([0, 10, 20, 40])
                end += grow
                members = 0 if behaviour == "stop" else 1
                if behaviour == "follow":
                    committed = end
                elif behaviour in ("behind", "rewind"):
                    committed = min(end, committed + grow)
                elif behaviour == "wander":
                    committed = min(end, max(0, committed + rng.randint(-30, 40)))
                at = t(len(rows) * 5)
                rows.append((at, end, committed, members))
                s.topic("x", f"walk-{g}", at, [end])
                s.group("x", f"walker-{g}", at, {f"walk-{g}": [committed]}, members)
        walks.append((f"walker-{g}", rows))
    return walks


def junk() -> list[bytes]:
    return [
        b"not json",
        json.dumps({"v": 3, "kind": "topic", "cluster": "c", "topic": "future", "time": T0, "end": [1]}).encode(),
        json.dumps({"v": 2, "kind": "topic", "cluster": "c", "topic": "bad-packing", "time": T0, "end": "not base64!"}).encode(),
        json.dumps({"v": 1, "kind": "topic", "topic": "no-cluster", "time": T0, "end": [1]}).encode(),
        json.dumps({"v": 1, "kind": "group", "cluster": "c", "time": T0, "offsets": {}}).encode(),
    ]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = spark_session("local[2]", SMALL_SPARK_CONF)
    yield session
    session.stop()
    # py4j logs its connections closing when collected at exit, after pytest has closed the streams.
    logging.getLogger("py4j").setLevel(logging.WARNING)


@pytest.fixture(scope="module")
def run(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    s = Samples()
    for build in (steady_producer, keyed_producers, stalled_consumer, idle_and_orphans, forecast_groups, hand_example):
        build(s)
    walks = random_walks(s)
    path = tmp_path_factory.mktemp("samples") / "samples.jsonl"
    path.write_bytes(b"\n".join([value for _key, value in s.records] + junk()) + b"\n")
    samples = parse_samples(spark.read.text(str(path))).cache()
    results = compute(samples, Params())
    used = ("partition_throughput", "topic_throughput", "lag_history", "group_lag_history", "partition_status", "group_status_intervals", "skew",
            "idle_topics", "orphaned_groups", "forecasts")
    rows = {name: [r.asDict() for r in results[name].collect()] for name in used}
    # Every sample's lag (the lag_history table keeps each minute's last sample and maxima).
    rows["lag_rows"] = [r.asDict() for r in lag_rows(topic_series(samples, [60], detail=True)).collect()]
    clusters = Counter(json.loads(value)["cluster"] for _key, value in s.records)
    return {"records": len(s.records), "clusters": clusters, "samples": samples, "results": results, "rows": rows,
            "walks": walks}


def rows(run: dict[str, Any], table: str, **where: Any) -> list[dict[str, Any]]:
    return [r for r in run["rows"][table] if all(r[k] == v for k, v in where.items())]


def test_records_that_are_not_samples_of_a_known_version_are_skipped(run: dict[str, Any]) -> None:
    # The badly packed record is a sample whose end offsets are unknown; the rest of the junk is none.
    assert run["samples"].agg(F.sum("records")).first()[0] == run["records"] + 1
    assert not rows(run, "partition_throughput", topic="bad-packing")


def test_a_producer_at_exactly_100_per_second_measures_100_per_second_at_every_resolution(run: dict[str, Any]) -> None:
    for resolution in (60, 300, 3600):
        buckets = rows(run, "topic_throughput", cluster="c", topic="steady", resolution_s=resolution)
        assert buckets, resolution
        assert sum(b["messages"] for b in buckets) == 6000
        for b in buckets:
            assert b["messages_per_s"] == pytest.approx(100, abs=1), (resolution, b)
            assert b["bytes_per_s"] == pytest.approx(25_000, abs=250), (resolution, b)
    # 60 s starting 45 s past a minute: two 1-minute buckets, one 5-minute, one hour.
    assert len(rows(run, "topic_throughput", topic="steady", resolution_s=60)) == 2
    assert len(rows(run, "partition_throughput", topic="steady", resolution_s=300)) == 1


def test_topic_throughput_is_the_sum_of_its_partitions(run: dict[str, Any]) -> None:
    (topic,) = rows(run, "topic_throughput", topic="keyed", resolution_s=3600)
    assert topic["partitions"] == 4
    assert topic["messages"] == 10_000
    assert topic["messages_per_s"] == pytest.approx(1000)
    assert topic["bytes_per_s"] is None  # no sizes sampled


def test_a_skewed_key_distribution_flags_only_the_hot_partition(run: dict[str, Any]) -> None:
    keyed = {r["partition"]: r for r in rows(run, "skew", topic="keyed")}
    assert {p for p, r in keyed.items() if r["hot"]} == {HOT_PARTITION()}
    assert keyed[HOT_PARTITION()]["share"] > 0.55
    assert sum(r["share"] for r in keyed.values()) == pytest.approx(1.0)
    assert not [r for r in rows(run, "skew", topic="even") if r["hot"]]
    assert not [r for r in rows(run, "skew", topic="steady") if r["hot"]]  # one partition is all of its topic


def test_a_stalled_group_is_stall_from_a_full_window_of_equal_commits_until_it_moves(run: dict[str, Any]) -> None:
    statuses = {(r["time_ms"] - T0) // S: r["status"] for r in rows(run, "partition_status", group_id="stalled")}
    assert {sec for sec, status in statuses.items() if status == "STALL"} == set(range(300, 400, 10))
    assert {status for sec, status in statuses.items() if not 300 <= sec < 400} == {"OK"}
    runs = sorted(rows(run, "group_status_intervals", group_id="stalled"), key=lambda r: r["start"])
    assert [r["status"] for r in runs] == ["OK", "ERR", "OK"]
    err = runs[1]
    assert (err["start"].timestamp() * 1000 - T0, err["end"].timestamp() * 1000 - T0) == (300 * S, 390 * S)
    assert err["until"].timestamp() * 1000 - T0 == 400 * S
    assert err["samples"] == 10


def test_the_replayed_status_and_time_lag_match_the_live_evaluators(run: dict[str, Any]) -> None:
    statuses = {(r["group_id"], r["time_ms"]): r["status"] for r in rows(run, "partition_status", cluster="x")}
    time_lags = {(r["group_id"], r["time_ms"]): r["time_lag_s"] for r in rows(run, "lag_rows", cluster="x")}
    seen: Counter[str] = Counter()
    for group, walk in run["walks"]:
        window, table = PartitionWindow(), OffsetTimeTable(limit=1000)
        for at_ms, end, committed, members in walk:
            now = at_ms / 1000
            table.add(end, now)
            window.record(committed, end, now, committing=bool(members))
            expected = evaluate_partition(window, now)
            seen[expected] += 1
            assert statuses[(group, at_ms)] == expected, (group, (at_ms - T0) / S)
            assert time_lags[(group, at_ms)] == pytest.approx(time_lag(table, committed, now), abs=1e-6), (group, at_ms)
    # The walks are only a test when they reach the interesting rules.
    assert {"OK", "WARN", "STOP", "STALL", "REWIND"} <= set(seen), seen


def test_lag_and_time_lag_by_hand(run: dict[str, Any]) -> None:
    history = {(r["group_id"], (r["time_ms"] - T0) // S): r for r in rows(run, "lag_rows", cluster="h")}
    expected = {
        # (group, t): (end, lag, time lag)
        ("reader", 0): (100, 0, 0.0),
        ("reader", 10): (200, 50, 5.0),  # 150 lies halfway between (100, 0 s) and (200, 10 s)
        ("reader", 20): (200, 0, 0.0),  # the newest point's offset
        ("reader", 30): (500, 300, 10.0),  # 200 was the end until 20 s, the last point of the flat run
        ("reader", 40): (500, 150, 15.0),  # halfway between (200, 20 s) and (500, 30 s): 25 s
        ("reader", 50): (400, 50, 25.0),  # the lag uses the end offset read; the table rejected 400
        ("far-behind", 10): (200, 150, 15.0),  # below the oldest point: extrapolated to -5 s
        ("early", -5): (None, None, None),  # nothing sampled yet
    }
    got = {key: (r["end_offset"], r["lag"], r["time_lag_s"]) for key, r in history.items()}
    assert got == expected


def test_the_lag_history_keeps_each_minutes_last_sample_and_largest_lags(run: dict[str, Any]) -> None:
    # T0 is 45 s past a minute: the reader's samples at 0 and 10 s fall in one minute, 20-50 s in the next.
    minutes = sorted(rows(run, "lag_history", cluster="h", group_id="reader"), key=lambda r: r["time_ms"])
    got = [((r["time_ms"] - T0) // S, r["end_offset"], r["lag"], r["time_lag_s"], r["max_lag"], r["max_time_lag_s"],
            r["samples"]) for r in minutes]
    assert got == [(10, 200, 50, 5.0, 50, 5.0, 2), (50, 400, 50, 25.0, 300, 25.0, 4)]
    assert [r["start"].timestamp() * 1000 for r in minutes] == [T0 - 45 * S, T0 + 15 * S]
    (early,) = rows(run, "lag_history", cluster="h", group_id="early")
    assert (early["committed"], early["end_offset"], early["lag"], early["max_lag"]) == (0, None, None, None)


def test_the_group_lag_history_adds_up_every_sample(run: dict[str, Any]) -> None:
    by_time = {(r["time_ms"] - T0) // S: r for r in rows(run, "group_lag_history", cluster="h", group_id="reader")}
    assert sorted(by_time) == [0, 10, 20, 30, 40, 50]
    assert [(by_time[t]["partitions"], by_time[t]["total_lag"], by_time[t]["time_lag_s"]) for t in (10, 30, 40)] == [
        (1, 50, 5.0), (1, 300, 10.0), (1, 150, 15.0)]
    walk = {(r["time_ms"], r["total_lag"]) for r in rows(run, "group_lag_history", cluster="x", group_id="walker-0")}
    assert walk == {(at, max(0, end - committed)) for at, end, committed, _m in dict(run["walks"])["walker-0"]}


def test_an_idle_topic_and_an_orphaned_group_are_found_and_nothing_else(run: dict[str, Any]) -> None:
    (idle,) = rows(run, "idle_topics", cluster="d")
    assert idle["topic"] == "quiet"
    assert idle["last_write"].timestamp() * 1000 == T0 + DAY  # the 4th 6-hourly sample wrote last
    assert idle["idle_days"] == pytest.approx(8.0)
    (orphan,) = rows(run, "orphaned_groups", cluster="d")
    assert orphan["group_id"] == "abandoned"
    assert orphan["last_member"] is None and orphan["last_commit"] is None
    assert orphan["quiet_days"] == pytest.approx(9.0)
    assert not rows(run, "idle_topics", cluster="c")  # a minute of samples says nothing about days


def test_a_group_consuming_10_per_second_faster_than_its_producer_with_lag_600_catches_up_in_60_seconds(
        run: dict[str, Any]) -> None:
    (gaining,) = rows(run, "forecasts", group_id="gaining")
    assert gaining["lag"] == 600
    assert gaining["consume_per_s"] == pytest.approx(60)
    assert gaining["produce_per_s"] == pytest.approx(50)
    assert gaining["seconds"] == pytest.approx(60, abs=1)
    assert not gaining["never"]
    (falling,) = rows(run, "forecasts", group_id="falling")
    assert falling["never"] and falling["seconds"] is None
    assert not rows(run, "forecasts", group_id="stalled")  # caught up at the end: not lagging


def test_a_run_writes_every_table_as_parquet_then_a_summary_read_from_them(run: dict[str, Any], spark: Any,
                                                                          tmp_path: Path) -> None:
    samples = run["samples"].filter(F.col("cluster").isin("h", "d"))
    path = process(spark, samples, tmp_path / "run")
    summary = json.loads(path.read_text())
    assert summary["format"] == 1
    assert set(summary["tables"]) == set(run["results"])
    assert all((tmp_path / "run" / name / "_SUCCESS").exists() for name in summary["tables"])
    assert summary["range"]["records"] == run["clusters"]["h"] + run["clusters"]["d"]
    worst = {r["group_id"]: r for r in summary["worst_groups"]}
    assert (worst["reader"]["total_lag"], worst["reader"]["time_lag_s"]) == (50, 25.0)
    assert worst["reader"]["at"] == "2023-11-14T22:14:35.000+00:00"  # T0 + 50 s, UTC
    assert [r["topic"] for r in summary["idle_topics"]] == ["quiet"]
    assert [r["group_id"] for r in summary["orphaned_groups"]] == ["abandoned"]
    assert not list((tmp_path / "run").glob(".summary-*"))


def test_records_list_values_by_partition_with_null_for_the_missing() -> None:
    assert by_partition({0: 5, 2: 7}) == [5, None, 7]
    key, value = group_record("c", "g/1", 42, {"t": by_partition({1: 3})}, members=0)
    assert key == b"c/g/1"
    assert read_record(value) == {"v": 2, "kind": "group", "cluster": "c", "group": "g/1", "time": 42, "members": 0,
                                  "offsets": {"t": [None, 3]}}
    assert json.loads(value)["offsets"]["t"] == pack([None, 3])  # base64 of little-endian int64, -1 for null
    assert unpack(pack([0, None, 2**40])) == [0, None, 2**40]
    assert "bytes" not in json.loads(topic_record("c", "t", 42, [1], [None])[1])


def test_the_session_is_small_local_utc_and_carries_the_connector_jars(spark: Any) -> None:
    assert spark.sparkContext.master == "local[2]"
    assert spark.conf.get("spark.ui.enabled") == "false"
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    jars = connector_jars()
    if not jars:
        pytest.skip("no connector jars: run `make spark-jars`")
    assert set(spark.conf.get("spark.jars").split(",")) == set(jars)
    # Loading resolves the connector's classes and schema; nothing is read before an action.
    raw = read_samples(spark, "127.0.0.1:9", "console-samples", start_ms=T0)
    assert raw.columns[:2] == ["key", "value"]


def test_a_run_slower_than_its_timeout_has_its_spark_jobs_cancelled_and_fails_saying_so(
        spark: Any, db: Any, settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Spark that is slow (here a job whose tasks would sleep for two minutes) does not hold the
    analytics worker: at ANALYTICS_RUN_TIMEOUT its jobs are cancelled in the real session and the run
    fails with a sentence."""
    import time
    from types import SimpleNamespace

    from analytics import tasks
    from analytics.models import AnalyticsRun

    settings.ANALYTICS_RUN_TIMEOUT = 4
    monkeypatch.setattr(tasks, "_spark", spark)
    monkeypatch.setattr(tasks, "notify", lambda run: None)
    from console.gateway.config import ClusterConfig

    monkeypatch.setattr(tasks.gateway, "cluster_config", lambda name: ClusterConfig(name, "127.0.0.1:9"))
    monkeypatch.setattr(tasks.gateway, "for_cluster", lambda name: SimpleNamespace(topic_metadata=lambda topic: None))
    reached: list[bool] = []

    def nap(x: int) -> int:
        time.sleep(120)
        return x

    def slow(session: Any, *args: Any, **kwargs: Any) -> Path:
        reached.append(True)
        session.sparkContext.parallelize(range(2), 2).map(nap).collect()
        raise AssertionError("the slow job was not cancelled")

    monkeypatch.setattr("analytics.jobs.pipeline.run", slow)
    run_row = AnalyticsRun.objects.create(cluster="local", window_start_ms=T0, window_end_ms=T0 + 60_000)
    started = time.monotonic()
    assert tasks.run_analytics(run_row.id) == "failed"
    took = time.monotonic() - started
    run_row.refresh_from_db()
    assert reached, "the run reached Spark"
    assert (run_row.state, run_row.stage) == ("failed", "failed")
    assert run_row.error == "Spark did not finish within 4 s (ANALYTICS_RUN_TIMEOUT); its jobs were cancelled."
    assert took < 60, f"the cancelled run took {took:.0f} s"
    # The session survives the cancel and serves the next run.
    assert spark.range(3).count() == 3
