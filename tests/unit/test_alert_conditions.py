"""Each alert condition on hand-made snapshots: what it holds for, what it does not, and what a
snapshot that cannot say leaves alone; rule targets and silences' matchers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from alerts_app.conditions import (
    GroupIndex,
    Match,
    MetadataIndex,
    Spec,
    group_lags,
    mapping_end_of,
    passes,
    snapshot_end_of,
)
from alerts_app.evaluation import found_now, rule_matches, spec_of
from alerts_app.models import CONDITIONS
from alerts_app.silences import Labels, matches
from alerts_app.targets import Target
from console.errors import BadParameter
from console.snapshots import (
    BrokerState,
    GroupState,
    PartitionState,
    QuorumMember,
    QuorumState,
    Snapshot,
    TopicState,
)


def healthy(**changes: object) -> Snapshot:
    snap = Snapshot(
        "c", reachable=True, controller_id=1,
        brokers={i: BrokerState(i, "127.0.0.1", 9090 + i, None, True) for i in (1, 2, 3)},
        quorum=QuorumState(1, 3, 500, [QuorumMember(1, 500, 0, 0, 0), QuorumMember(2, 500, 0, 0, 0)], []),
        topics={"orders": TopicState("orders", False, [PartitionState(p, 1, [1, 2, 3], [1, 2, 3], [], 0, 100) for p in range(3)],
                                     min_isr=2, produce_rate=5.0)},
        groups={"g1": GroupState("g1", "Stable", "consumer", "classic", "range", [], {"orders:0": 100, "orders:1": 100},
                                 status="OK", time_lag=0.0, lag_keys=["orders:0", "orders:1"], lag_status=["OK", "OK"],
                                 lag_seconds=[0.0, 0.0])},
        groups_at=1.0)
    for name, value in changes.items():
        setattr(snap, name, value)
    return snap


def keys(snap: Snapshot, condition: str, **fields: object) -> list[str]:
    spec, target = spec_of({"condition": condition, **fields})
    found = found_now(snap, condition, 1000.0)
    return sorted(m.key for m in rule_matches(spec, target, found)) if found is not None else []


def test_every_condition_holds_on_its_subject_and_not_on_a_healthy_cluster() -> None:
    snap = healthy()
    for condition in CONDITIONS:
        if condition not in ("job_failed", "connect_task_failing", "transaction_hanging"):  # (read from the database: tests/web/test_alert_evaluation.py)
            assert keys(snap, condition, status="WARN") == [], condition


def test_offline_under_replicated_and_under_min_isr_partitions() -> None:
    snap = healthy()
    parts = snap.topics["orders"].partitions
    parts[0] = PartitionState(0, -1, [1, 2, 3], [], [1, 2, 3])
    parts[1] = PartitionState(1, 1, [1, 2, 3], [1], [])
    parts[2] = PartitionState(2, 1, [1, 2, 3], [1, 2], [])
    assert keys(snap, "offline") == ["partition:orders:0"]
    assert keys(snap, "under_replicated") == ["partition:orders:1", "partition:orders:2"]
    assert keys(snap, "under_min_isr") == ["partition:orders:1"]


def test_broker_down_when_it_left_or_the_console_cannot_reach_it() -> None:
    snap = healthy()
    snap.brokers[2].up = False
    unreachable = BrokerState(3, "127.0.0.1", 9093, None, True)
    unreachable.reachable = False  # type: ignore[attr-defined]  # (the watcher's connection check, where it has one)
    snap.brokers[3] = unreachable
    assert keys(snap, "broker_down") == ["broker:2", "broker:3"]
    assert keys(snap, "broker_down", target="3") == ["broker:3"]


def test_broker_down_and_no_controller_follow_an_unreachable_clusters_snapshot() -> None:
    snap = healthy(reachable=False, controller_id=None)
    snap.brokers[1].up = False
    assert keys(snap, "broker_down") == ["broker:1"]
    assert keys(snap, "no_controller") == ["cluster"]
    snap.topics["orders"].partitions[0] = PartitionState(0, -1, [1], [], [1])
    assert found_now(snap, "offline", 0.0) is None  # (what an unreachable cluster's snapshot says of partitions is not read)
    first = Snapshot("c", reachable=False)  # (the watcher's first look failed: it knows no broker)
    assert found_now(first, "broker_down", 0.0) is None and found_now(first, "no_controller", 0.0) is None


def test_controller_moved_holds_after_a_move_then_ends() -> None:
    index = MetadataIndex()
    assert not index.update(healthy(), 0.0, ["controller_moved"])["controller_moved"].by_subject
    moved = index.update(healthy(controller_id=2), 10.0, ["controller_moved"])["controller_moved"]
    assert [m.message for m in moved.matches()] == ["The active controller moved from broker 1 to 2."]
    assert not index.update(healthy(controller_id=2), 10.0 + 301, ["controller_moved"])["controller_moved"].by_subject


def test_quorum_lag_above_the_threshold_only() -> None:
    snap = healthy(quorum=QuorumState(1, 3, 500, [QuorumMember(1, 500, 0, 0, 0), QuorumMember(2, 380, 120, 0, 0),
                                                  QuorumMember(3, 495, 5, 0, 0)], []))
    assert keys(snap, "quorum_lag", threshold=100) == ["voter:2"]
    assert keys(snap, "quorum_lag", threshold=1) == ["voter:2", "voter:3"]


def test_produce_rate_zero_and_an_unknown_rate() -> None:
    snap = healthy()
    snap.topics["orders"].produce_rate = 0.0
    assert keys(snap, "produce_rate_zero") == ["topic:orders"]
    index = MetadataIndex()
    index.update(snap, 0.0, ["produce_rate_zero"])
    unknown = TopicState("orders", False, snap.topics["orders"].partitions, 2, None)
    after = index.update(healthy(topics={"orders": unknown}), 1.0, ["produce_rate_zero"])["produce_rate_zero"]
    assert list(after.by_subject) == ["orders"] and after.changed == set()  # (not read: kept as it was)


def test_group_status_at_or_worse_than_the_rules_status() -> None:
    g = healthy().groups["g1"]
    g.status, g.lag_status = "WARN", ["WARN", "OK"]
    snap = healthy(groups={"g1": g})
    assert keys(snap, "group_status", status="WARN") == ["group:g1"]
    assert keys(snap, "group_status", status="ERR") == []
    g.status, g.lag_status = "ERR", ["STOP", "OK"]
    assert keys(snap, "group_status", status="ERR") == ["group:g1"]
    assert keys(snap, "group_status", status="STOP") == ["group:g1"]
    assert keys(snap, "group_status", status="STALL") == []


def test_group_and_partition_lag_from_the_topics_end_offsets() -> None:
    snap = healthy()
    snap.topics["orders"].partitions[1] = PartitionState(1, 1, [1, 2, 3], [1, 2, 3], [], 0, 400)
    assert keys(snap, "group_lag", threshold=299) == ["group:g1"]
    assert keys(snap, "group_lag", threshold=300) == []
    assert keys(snap, "partition_lag", threshold=100) == ["group:g1:partition:orders:1"]
    total, behind = group_lags(snap.groups["g1"], snapshot_end_of(snap))
    assert (total, behind) == (300, [("orders", 1, 300)])
    assert group_lags(snap.groups["g1"], mapping_end_of({("orders", 0): 150}))[0] == 50  # (an unknown end counts nothing)


def test_time_lag_above_the_threshold() -> None:
    g = healthy().groups["g1"]
    g.time_lag = 95.0
    assert keys(healthy(groups={"g1": g}), "time_lag", threshold=60) == ["group:g1"]
    assert keys(healthy(groups={"g1": g}), "time_lag", threshold=120) == []


def test_group_index_looks_again_only_at_groups_that_changed() -> None:
    index = GroupIndex()
    snap = healthy()
    first = index.update(snap.groups, snapshot_end_of(snap), ["group_status"])["group_status"]
    assert first.changed is None and not first.by_subject
    g = GroupState("g1", "Stable", "consumer", "classic", "range", [], {}, status="ERR", lag_keys=["orders:0"], lag_status=["STALL"])
    second = index.update({"g1": g, **{f"idle{i}": snap.groups["g1"] for i in range(3)}}, snapshot_end_of(snap), ["group_status"])
    assert second["group_status"].changed == {"g1"}
    gone = index.update({}, snapshot_end_of(snap), ["group_status"])["group_status"]
    assert gone.changed == {"g1"} and not gone.by_subject


def test_group_index_looks_again_at_a_group_evaluated_anew_in_place() -> None:
    """consumers_app keeps a group's state object across samples and sets its evaluation on it."""
    index = GroupIndex()
    snap = healthy()
    g = snap.groups["g1"]
    assert not index.update({"g1": g}, snapshot_end_of(snap), ["group_status"])["group_status"].by_subject
    g.status, g.lag_keys, g.lag_status = "ERR", ["orders:0"], ["STOP"]
    stopped = index.update({"g1": g}, snapshot_end_of(snap), ["group_status"])["group_status"]
    assert stopped.changed == {"g1"} and [m.key for m in stopped.matches()] == ["group:g1"]
    g.status, g.lag_status = "OK", ["OK"]
    assert not index.update({"g1": g}, snapshot_end_of(snap), ["group_status"])["group_status"].by_subject


def test_targets_by_name_glob_every_and_regex() -> None:
    assert Target("orders").matches("orders") and not Target("orders").matches("orders-eu")
    assert Target("orders-*").matches("orders-eu") and not Target("orders-*").matches("payments")
    assert Target("*").matches("anything") and Target("").every
    assert Target("re:^ord.*s$").matches("orders") and not Target("re:^x").matches("orders")
    with pytest.raises(BadParameter, match="not a valid regular expression"):
        Target("re:(")
    assert not Target("re:(a+)+$").matches("a" * 40 + "!")  # (too slow: not matched, no hang)


def test_thresholds_and_statuses_pick_matches() -> None:
    m = Match("group:g", "g", 10.0, "", {"status": "WARN", "stop": [], "stall": []})
    assert passes(Spec("group_lag", 9.0), m) and not passes(Spec("group_lag", 10.0), m)
    assert passes(Spec("group_status", status="WARN"), m) and not passes(Spec("group_status", status="ERR"), m)


def test_a_silence_matches_its_cluster_fields_and_time() -> None:
    now = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
    labels = Labels("c", "Broker down", 7, "broker_down", "broker:2", "critical", "*")
    silence = SimpleNamespace(cluster="c", matchers=[{"field": "key", "value": "broker:2"}], starts_at=now - timedelta(minutes=1),
                              ends_at=now + timedelta(hours=1), expired_early_by="")
    assert matches(silence, labels, now)  # type: ignore[arg-type]
    assert not matches(silence, labels, now + timedelta(hours=2))  # type: ignore[arg-type]
    assert not matches(SimpleNamespace(**{**vars(silence), "cluster": "other"}), labels, now)  # type: ignore[arg-type]
    assert matches(SimpleNamespace(**{**vars(silence), "cluster": "*"}), labels, now)  # type: ignore[arg-type]
    assert not matches(SimpleNamespace(**{**vars(silence), "expired_early_by": "ann"}), labels, now)  # type: ignore[arg-type]
    regex = [{"field": "rule", "value": "^Broker", "regex": True}, {"field": "severity", "value": "critical"}]
    assert matches(SimpleNamespace(**{**vars(silence), "matchers": regex}), labels, now)  # type: ignore[arg-type]
    assert matches(SimpleNamespace(**{**vars(silence), "matchers": [{"field": "rule", "value": "7"}]}), labels, now)  # type: ignore[arg-type]
    assert not matches(SimpleNamespace(**{**vars(silence), "matchers": [{"field": "key", "value": "broker:3"}]}), labels, now)  # type: ignore[arg-type]


def test_a_groups_lag_is_found_again_when_its_topics_ends_moved_only() -> None:
    index = GroupIndex()
    g = healthy().groups["g1"]
    ends = {("orders", 0): 100, ("orders", 1): 100}
    index.update({"g1": g}, mapping_end_of(ends), ["group_lag"])
    ends[("orders", 1)] = 900
    unseen = index.update({"g1": g}, mapping_end_of(ends), ["group_lag"], moved={"payments"})["group_lag"]
    assert unseen.changed == set() and not unseen.by_subject  # (told its topic did not move: not looked at)
    seen = index.update({"g1": g}, mapping_end_of(ends), ["group_lag"], moved={"orders"})["group_lag"]
    assert seen.changed == {"g1"} and [m.value for m in seen.matches()] == [800.0]


def test_matches_under_every_rules_threshold_are_not_made() -> None:
    index = GroupIndex()
    g = healthy().groups["g1"]
    ends = {("orders", 0): 150, ("orders", 1): 100}
    assert not index.update({"g1": g}, mapping_end_of(ends), ["group_lag"], floors={"group_lag": 50})["group_lag"].by_subject
    lower = index.update({"g1": g}, mapping_end_of(ends), ["group_lag"], floors={"group_lag": 10})["group_lag"]
    assert [m.value for m in lower.matches()] == [50.0]  # (a lower threshold: every group looked at again)
