"""Per-replica lag (console/snapshots/replica_lag.py) and the streaks of growing lag that raise
`isr_about_to_shrink` (console/watcher/replica_lag.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from django.test import override_settings

from console.gateway.errors import GatewayError
from console.snapshots.model import Snapshot
from console.snapshots.replica_lag import Streak, lag_level, partition_lags, replica_lags
from console.watcher import replica_lag
from console.watcher import sampler as sampler_module
from console.watcher.replica_lag import LagWatch
from console.watcher.sampler import Sampler
from console.watcher.size_columns import SizeColumns

from ._build import TAKEN_AT, broker, part, snapshot, topic


@pytest.fixture(autouse=True)
def no_redis(monkeypatch):
    saved: list[list[Streak]] = []
    monkeypatch.setattr(replica_lag, "save_streaks", lambda cluster, streaks: saved.append(list(streaks)))
    return saved


def sized(leader: int = 1, isr=(1, 2, 3), **sizes: int):
    p = part(0, leader=leader, isr=isr)
    p.replica_sizes = {b.removeprefix("b"): n for b, n in sizes.items()}
    return p


def test_a_follower_is_its_leaders_size_minus_its_own_behind():
    assert replica_lags(sized(b1=1000, b2=1000, b3=400)) == {1: 0, 2: 0, 3: 600}


def test_a_follower_larger_than_its_leader_is_not_behind():
    # (the leader's retention deleted a segment first)
    assert replica_lags(sized(b1=500, b2=900, b3=500)) == {1: 0, 2: 0, 3: 0}


def test_lag_is_unknown_without_the_leaders_size_or_the_followers():
    assert replica_lags(sized(b2=10, b3=5)) == {1: None, 2: None, 3: None}
    assert replica_lags(sized(b1=10, b2=10)) == {1: 0, 2: 0, 3: None}
    offline = sized(leader=-1, b1=10, b2=10, b3=10)
    assert set(replica_lags(offline).values()) == {None}


def test_lag_levels_colour_the_layout_grid():
    assert lag_level(None, 10) == "unknown"
    assert lag_level(0, 10) == "none"
    assert lag_level(10, 100_000) == "some"
    assert lag_level(10, 100) == "far"  # (a tenth of the log)
    assert lag_level(5 * 1024 * 1024, 10**12) == "far"


def test_the_pages_rows_name_the_streak_and_a_silent_broker():
    p = sized(b1=1000, b2=1000, b3=400)
    kept = {("t", 0, 3): Streak("t", 0, 3, 100.0, 600, 400, True, False, True, True)}
    rows = {r["broker"]: r for r in partition_lags(p, kept, {2: 50.0}, "t")}
    assert rows[1]["leader"] and rows[1]["level"] == "leader"
    assert rows[3]["bytes_behind"] == 600 and rows[3]["growing_since"] == 100.0 and rows[3]["about_to_shrink"]
    assert rows[2]["not_answering_since"] == 50.0 and rows[2]["bytes_behind"] == 0
    assert rows[3]["not_answering_since"] is None


def snap_at(t: float, follower_size: int, leader_size: int, isr=(1, 2, 3), up3: bool = True) -> Snapshot:
    p = sized(isr=isr, b1=leader_size, b2=leader_size, b3=follower_size)
    return snapshot(topic("orders", p), brokers=[broker(1), broker(2), broker(3, up=up3)], taken_at=TAKEN_AT + t)


@override_settings(REPLICA_LAG_TIME_MAX_MS=10_000, REPLICA_LAG_SHRINK_SHARE=0.5)
def test_a_follower_falling_further_behind_past_half_the_lag_time_raises_isr_about_to_shrink():
    watch = LagWatch("main")
    assert watch.look(snap_at(0, 100, 100), TAKEN_AT) == []
    assert watch.look(snap_at(1, 100, 200), TAKEN_AT + 1) == []  # (behind: a streak begins)
    assert watch.look(snap_at(3, 100, 400), TAKEN_AT + 3) == []
    changes = watch.look(snap_at(7, 100, 800), TAKEN_AT + 7)  # (6 s > 5 s)
    assert [(c.kind, c.severity, c.topic, c.partition, c.broker) for c in changes] == [
        ("isr_about_to_shrink", "warning", "orders", 0, 3)]
    assert "700 bytes behind" in changes[0].message
    assert watch.look(snap_at(8, 100, 900), TAKEN_AT + 8) == []  # (raised once)
    assert watch.streaks[("orders", 0, 3)].about_to_shrink


@override_settings(REPLICA_LAG_TIME_MAX_MS=10_000, REPLICA_LAG_SHRINK_SHARE=0.5)
def test_a_follower_that_catches_up_ends_its_streak_and_one_out_of_the_isr_is_not_about_to_shrink():
    watch = LagWatch("main")
    watch.look(snap_at(0, 100, 200), TAKEN_AT)
    watch.look(snap_at(1, 100, 300), TAKEN_AT + 1)
    assert watch.look(snap_at(2, 300, 300), TAKEN_AT + 2) == []
    assert watch.streaks == {}
    watch.look(snap_at(3, 300, 400, isr=(1, 2)), TAKEN_AT + 3)
    assert watch.look(snap_at(20, 300, 900, isr=(1, 2)), TAKEN_AT + 20) == []  # (Kafka dropped it already)


@override_settings(REPLICA_LAG_TIME_MAX_MS=10_000, REPLICA_LAG_SHRINK_SHARE=0.5)
def test_a_lag_that_shrinks_as_the_follower_moves_starts_again_and_a_constant_gap_never_warns():
    watch = LagWatch("main")
    watch.look(snap_at(0, 100, 300), TAKEN_AT)
    watch.look(snap_at(1, 250, 400), TAKEN_AT + 1)  # (fetching: 150 behind, down from 200)
    assert watch.streaks[("orders", 0, 3)].since == TAKEN_AT + 1
    # An idle topic whose follower's retention deleted a segment first: behind by as much, for ever.
    idle = LagWatch("main")
    for t in (0, 5, 10, 20):
        assert idle.look(snap_at(t, 100, 300), TAKEN_AT + t) == []


@override_settings(REPLICA_LAG_TIME_MAX_MS=10_000, REPLICA_LAG_SHRINK_SHARE=0.5)
def test_a_fenced_brokers_streak_says_it_does_not_answer_and_deleted_topics_drop_theirs(no_redis):
    watch = LagWatch("main")
    watch.look(snap_at(0, 100, 200, up3=False), TAKEN_AT)
    assert watch.streaks[("orders", 0, 3)].down and no_redis[-1][0].down
    gone = snapshot(topic("other"), taken_at=TAKEN_AT + 1)
    watch.look(gone, TAKEN_AT + 1)
    assert watch.streaks == {}


def test_a_cycle_looks_only_at_the_partitions_that_changed(monkeypatch):
    watch = LagWatch("main")
    first = snap_at(0, 100, 200)
    watch.look(first, TAKEN_AT)
    looked: list[object] = []
    monkeypatch.setattr(replica_lag, "replica_lags", lambda p: looked.append(p) or {})
    carried = snapshot(first.topics["orders"], taken_at=TAKEN_AT + 1)  # (the same topic object)
    watch.look(carried, TAKEN_AT + 1)
    assert looked == []
    moved = snapshot(replace(first.topics["orders"], partitions=list(first.topics["orders"].partitions)),
                     taken_at=TAKEN_AT + 2)
    watch.look(moved, TAKEN_AT + 2)
    assert looked == []  # (a new topic object whose partitions are the same objects)


def test_a_silent_brokers_replicas_are_carried_from_the_last_read():
    before = SizeColumns.read([{("t", 0): {1: 100, 2: 90}, ("t", 1): {2: 50, 3: 50}}], None)
    assert before.replicas_on({2}) == {("t", 0): {2: 90}, ("t", 1): {2: 50}}
    assert before.replicas_on({7}) == {}


class Gateway:
    """Answers DescribeLogDirs for the brokers in `answering` (each a size per replica)."""

    def __init__(self) -> None:
        self.answering = {1, 2, 3}
        self.size = 100
        self.asked: list[list[int]] = []

    def log_dir_sizes(self, brokers: list[int]):
        self.asked.append(list(brokers))
        if not set(brokers) <= self.answering:
            raise GatewayError("timed out")
        return {("t", 0): {b: self.size for b in brokers}}


def test_a_broker_no_longer_listed_keeps_its_last_size_while_the_others_grow(monkeypatch):
    saved: list[dict[int, float]] = []
    monkeypatch.setattr(sampler_module, "save_log_dirs", lambda cluster, silent, futures: saved.append(dict(silent)))
    gw = Gateway()
    sampler = Sampler("main", gw, True, lambda rows: None)  # type: ignore[arg-type]
    first = sampler._read_sizes([1, 2, 3], None)
    assert dict(first[("t", 0)]) == {"1": 100, "2": 100, "3": 100}
    answered_at = sampler._answered_at[3]
    gw.answering, gw.size = {1, 2}, 500
    with pytest.raises(GatewayError):  # (still listed but silent: the read fails, the last sizes stay)
        sampler._read_sizes([1, 2, 3], first)
    second = sampler._read_sizes([1, 2], first)  # (fenced: no longer listed)
    assert dict(second[("t", 0)]) == {"1": 500, "2": 500, "3": 100}
    assert saved[-1] == {3: answered_at}  # (since its last answer: its lag has grown since then)
    gw.size = 700
    third = sampler._read_sizes([1, 2], second)
    assert dict(third[("t", 0)]) == {"1": 700, "2": 700, "3": 100}
    gw.answering = {1, 2, 3}
    fourth = sampler._read_sizes([1, 2, 3], third)
    assert dict(fourth[("t", 0)]) == {"1": 700, "2": 700, "3": 700} and saved[-1] == {}


def test_a_future_replica_is_not_counted_in_its_replicas_size_but_kept_as_its_offset_lag(monkeypatch):
    from console.gateway.brokers import BrokerReads

    answer = [{"broker": 1, "log_dirs": [
        {"topics": [{"name": "t", "partitions": [{"partition_index": 0, "partition_size": 100, "offset_lag": 0, "is_future_key": False}]}]},
        {"topics": [{"name": "t", "partitions": [{"partition_index": 0, "partition_size": 60, "offset_lag": 7, "is_future_key": True}]}]},
    ]}]
    reads = BrokerReads.__new__(BrokerReads)
    monkeypatch.setattr(reads, "_with_kafka_python", lambda purpose, fn: answer, raising=False)
    monkeypatch.setattr(reads, "_call", lambda what, run: run(), raising=False)
    got = reads.log_dir_sizes([1])
    assert dict(got) == {("t", 0): {1: 100}} and got.futures == {("t", 0): {1: 7}}
