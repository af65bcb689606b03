"""console.watcher.diff: which events a change between two snapshots produces."""

from __future__ import annotations

from collections.abc import Callable
from copy import deepcopy

import pytest

from console.snapshots.model import Snapshot
from console.watcher.diff import CRITICAL, INFO, KINDS, WARNING, Change, diff

from ._build import broker, part, snapshot, topic


def healthy() -> Snapshot:
    """Brokers 1-3 up, controller 1, topic 'orders' with partitions 0-2 fully in sync, min ISR 2."""
    return snapshot(topic("orders", part(0, leader=1), part(1, leader=2), part(2, leader=3), min_isr=2))


def changed(mutate: Callable[[Snapshot], None], old: Snapshot | None = None) -> tuple[Snapshot, Snapshot]:
    old = old or healthy()
    new = deepcopy(old)
    new.taken_at = (old.taken_at or 0) + 5
    mutate(new)
    return old, new


def kinds(changes: list[Change]) -> list[str]:
    return [c.kind for c in changes]


def only(changes: list[Change], kind: str) -> Change:
    found = [c for c in changes if c.kind == kind]
    assert len(found) == 1, f"expected one {kind} in {kinds(changes)}"
    return found[0]


# Baselines ---------------------------------------------------------------------------------------


def test_first_snapshot_emits_no_events():
    assert diff(None, healthy()) == []


def test_first_unreachable_snapshot_emits_no_events():
    assert diff(None, Snapshot(cluster="main", reachable=False, error="timed out")) == []


def test_unchanged_snapshot_emits_no_events():
    old, new = changed(lambda s: None)
    assert diff(old, new) == []


def test_only_timestamps_changing_emits_no_events():
    old, new = changed(lambda s: setattr(s, "checked_at", 99.0))
    new.offsets_at = 42.0
    new.version = 7
    assert diff(old, new) == []


def test_unreachable_to_unreachable_emits_no_events():
    old = Snapshot(cluster="main", reachable=False, error="timed out", taken_at=10.0)
    new = Snapshot(cluster="main", reachable=False, error="still timed out", taken_at=10.0)
    assert diff(old, new) == []


# Cluster reachability ---------------------------------------------------------------------------


def test_cluster_becoming_unreachable_emits_one_critical_cluster_unreachable_event_with_the_error():
    old = healthy()
    new = Snapshot(cluster="main", reachable=False, error="all brokers down")
    changes = diff(old, new)
    assert kinds(changes) == ["cluster_unreachable"]
    assert changes[0].severity == CRITICAL
    assert "all brokers down" in changes[0].message


def test_cluster_unreachable_without_error_says_no_broker_answered():
    changes = diff(healthy(), Snapshot(cluster="main", reachable=False))
    assert "no broker answered" in changes[0].message


def test_cluster_unreachable_hides_broker_and_partition_changes():
    old = healthy()
    new = deepcopy(old)
    new.reachable = False
    for b in new.brokers.values():
        b.up = False
    new.topics.clear()
    assert kinds(diff(old, new)) == ["cluster_unreachable"]


def test_cluster_reachable_again_emits_info_cluster_reachable_event_first():
    down = healthy()
    down.reachable = False
    down.error = "timed out"
    for b in down.brokers.values():
        b.up = False
    up = healthy()
    changes = diff(down, up)
    assert changes[0].kind == "cluster_reachable"
    assert changes[0].severity == INFO
    assert kinds(changes).count("broker_up") == 3


def test_cluster_reachable_for_the_first_time_emits_no_events():
    never_answered = Snapshot(cluster="main", reachable=False, error="refused", taken_at=None)
    assert diff(never_answered, healthy()) == []


def test_snapshot_never_taken_is_not_compared_for_brokers_or_partitions():
    old = healthy()
    old.taken_at = None
    new = healthy()
    new.brokers[2].up = False
    new.topics["orders"].partitions[0].leader = 3
    assert diff(old, new) == []


# Brokers ----------------------------------------------------------------------------------------


def test_broker_killed_emits_critical_broker_down_event_naming_the_broker():
    old, new = changed(lambda s: setattr(s.brokers[2], "up", False))
    change = only(diff(old, new), "broker_down")
    assert change.severity == CRITICAL
    assert change.broker == 2
    assert "kafka-2.example:9092" in change.message
    assert change.topic is None and change.partition is None


def test_broker_restarted_emits_info_broker_up_event():
    old = healthy()
    old.brokers[3].up = False
    _, new = changed(lambda s: setattr(s.brokers[3], "up", True), old)
    change = only(diff(old, new), "broker_up")
    assert change.severity == INFO
    assert change.broker == 3


def test_broker_staying_down_emits_no_event():
    old = healthy()
    old.brokers[3].up = False
    _, new = changed(lambda s: None, old)
    assert diff(old, new) == []


def test_new_live_broker_emits_info_broker_added_event():
    old, new = changed(lambda s: s.brokers.update({4: broker(4)}))
    change = only(diff(old, new), "broker_added")
    assert change.severity == INFO
    assert change.broker == 4
    assert "kafka-4.example:9094" in change.message


def test_new_broker_that_is_down_emits_no_broker_added_event():
    old, new = changed(lambda s: s.brokers.update({4: broker(4, up=False)}))
    assert diff(old, new) == []


def test_broker_events_are_ordered_by_broker_id():
    def kill_all(s: Snapshot) -> None:
        for b in s.brokers.values():
            b.up = False

    old, new = changed(kill_all)
    new.brokers = dict(reversed(list(new.brokers.items())))
    assert [c.broker for c in diff(old, new)] == [1, 2, 3]


# Controller -------------------------------------------------------------------------------------


def test_controller_moving_emits_warning_controller_change_event_with_old_and_new():
    old, new = changed(lambda s: setattr(s, "controller_id", 3))
    change = only(diff(old, new), "controller_change")
    assert change.severity == WARNING
    assert change.broker == 3
    assert change.details == {"old": 1, "new": 3}
    assert "node 1" in change.message and "node 3" in change.message


@pytest.mark.parametrize(("before", "after"), [(None, 2), (1, None), (None, None)])
def test_controller_unknown_on_either_side_emits_no_controller_change(before, after):
    old = healthy()
    old.controller_id = before
    _, new = changed(lambda s: setattr(s, "controller_id", after), old)
    assert "controller_change" not in kinds(diff(old, new))


# Leaders ----------------------------------------------------------------------------------------


def test_leader_moving_emits_warning_leader_change_event_for_the_partition():
    old, new = changed(lambda s: setattr(s.topics["orders"].partitions[1], "leader", 3))
    changes = diff(old, new)
    assert kinds(changes) == ["leader_change"]
    change = changes[0]
    assert change.severity == WARNING
    assert (change.topic, change.partition, change.broker) == ("orders", 1, 3)
    assert change.details == {"old": 2, "new": 3}
    assert "orders-1" in change.message


def test_partition_losing_its_leader_emits_critical_partition_offline_naming_the_old_leader():
    old, new = changed(lambda s: setattr(s.topics["orders"].partitions[2], "leader", -1))
    changes = diff(old, new)
    assert kinds(changes) == ["partition_offline"]
    change = changes[0]
    assert change.severity == CRITICAL
    assert (change.topic, change.partition, change.broker) == ("orders", 2, 3)
    assert change.details == {"old": 3}
    assert "orders-2" in change.message


def test_offline_partition_getting_a_leader_emits_info_partition_online_naming_the_new_leader():
    old = healthy()
    old.topics["orders"].partitions[0].leader = -1
    _, new = changed(lambda s: setattr(s.topics["orders"].partitions[0], "leader", 2), old)
    changes = diff(old, new)
    assert kinds(changes) == ["partition_online"]
    change = changes[0]
    assert change.severity == INFO
    assert (change.topic, change.partition, change.broker) == ("orders", 0, 2)
    assert change.details == {"new": 2}


def test_partition_staying_offline_emits_no_event():
    old = healthy()
    old.topics["orders"].partitions[0].leader = -1
    _, new = changed(lambda s: None, old)
    assert diff(old, new) == []


# ISR and replication ----------------------------------------------------------------------------


def test_follower_dropping_out_of_isr_emits_isr_shrink_naming_it_and_under_replicated():
    old, new = changed(lambda s: setattr(s.topics["orders"].partitions[0], "isr", [1, 3]))
    changes = diff(old, new)
    assert kinds(changes) == ["isr_shrink", "under_replicated"]
    shrink = changes[0]
    assert shrink.severity == WARNING
    assert (shrink.topic, shrink.partition, shrink.broker) == ("orders", 0, 2)
    assert shrink.details == {"old": [1, 2, 3], "new": [1, 3], "removed": [2]}
    urp = changes[1]
    assert urp.severity == WARNING
    assert urp.broker is None
    assert urp.details == {"isr": [1, 3], "replicas": [1, 2, 3]}


def test_isr_shrink_of_several_brokers_names_no_single_broker():
    old, new = changed(lambda s: setattr(s.topics["orders"].partitions[0], "isr", [1]))
    shrink = only(diff(old, new), "isr_shrink")
    assert shrink.broker is None
    assert shrink.details["removed"] == [2, 3]


def test_follower_rejoining_isr_emits_isr_expand_naming_it_and_fully_replicated():
    old = healthy()
    old.topics["orders"].partitions[0].isr = [1, 3]
    _, new = changed(lambda s: setattr(s.topics["orders"].partitions[0], "isr", [1, 3, 2]), old)
    changes = diff(old, new)
    assert kinds(changes) == ["isr_expand", "fully_replicated"]
    expand, full = changes
    assert expand.severity == INFO
    assert (expand.topic, expand.partition, expand.broker) == ("orders", 0, 2)
    assert expand.details == {"old": [1, 3], "new": [1, 3, 2], "added": [2]}
    assert full.severity == INFO
    assert full.details == {"isr": [1, 3, 2], "replicas": [1, 2, 3]}


def test_isr_reordering_emits_no_event():
    old, new = changed(lambda s: setattr(s.topics["orders"].partitions[0], "isr", [3, 2, 1]))
    assert diff(old, new) == []


def test_isr_swapping_one_member_for_another_emits_shrink_and_expand_but_no_replication_event():
    old = healthy()
    old.topics["orders"].partitions[0].isr = [1, 2]
    _, new = changed(lambda s: setattr(s.topics["orders"].partitions[0], "isr", [1, 3]), old)
    changes = diff(old, new)
    assert kinds(changes) == ["isr_shrink", "isr_expand"]
    assert [c.broker for c in changes] == [2, 3]


def test_partition_still_under_replicated_emits_no_second_under_replicated_event():
    old = healthy()
    old.topics["orders"].partitions[0].isr = [1, 2]
    _, new = changed(lambda s: setattr(s.topics["orders"].partitions[0], "isr", [1]), old)
    assert "under_replicated" not in kinds(diff(old, new))


# min.insync.replicas ----------------------------------------------------------------------------


def test_isr_falling_below_min_isr_emits_critical_under_min_isr():
    old, new = changed(lambda s: setattr(s.topics["orders"].partitions[1], "isr", [2]))
    changes = diff(old, new)
    assert kinds(changes) == ["isr_shrink", "under_replicated", "under_min_isr"]
    change = changes[2]
    assert change.severity == CRITICAL
    assert (change.topic, change.partition) == ("orders", 1)
    assert change.details == {"isr": [2], "min_isr": 2}
    assert "min.insync.replicas=2" in change.message


def test_isr_reaching_min_isr_again_emits_info_min_isr_restored():
    old = healthy()
    old.topics["orders"].partitions[1].isr = [2]
    _, new = changed(lambda s: setattr(s.topics["orders"].partitions[1], "isr", [2, 3]), old)
    changes = diff(old, new)
    assert kinds(changes) == ["isr_expand", "min_isr_restored"]
    change = changes[1]
    assert change.severity == INFO
    assert change.details == {"isr": [2, 3], "min_isr": 2}


def test_partition_still_under_min_isr_emits_no_second_under_min_isr():
    old = healthy()
    old.topics["orders"].min_isr = 3
    old.topics["orders"].partitions[0].isr = [1, 2]
    _, new = changed(lambda s: setattr(s.topics["orders"].partitions[0], "isr", [1]), old)
    assert kinds(diff(old, new)) == ["isr_shrink"]


def test_raising_min_isr_above_the_isr_emits_under_min_isr_alone():
    old = healthy()
    old.topics["orders"].partitions[0].isr = [1, 2]
    _, new = changed(lambda s: setattr(s.topics["orders"], "min_isr", 3), old)
    change = only(diff(old, new), "under_min_isr")
    assert change.details["min_isr"] == 3
    assert kinds(diff(old, new)) == ["under_min_isr"]


def test_lowering_min_isr_to_the_isr_emits_min_isr_restored():
    old = healthy()
    old.topics["orders"].min_isr = 3
    old.topics["orders"].partitions[0].isr = [1, 2]
    _, new = changed(lambda s: setattr(s.topics["orders"], "min_isr", 2), old)
    assert kinds(diff(old, new)) == ["min_isr_restored"]


def test_unknown_min_isr_never_emits_under_min_isr():
    old = healthy()
    old.topics["orders"].min_isr = None
    _, new = changed(lambda s: setattr(s.topics["orders"].partitions[0], "isr", [1]), old)
    assert "under_min_isr" not in kinds(diff(old, new))


def test_min_isr_becoming_unknown_emits_no_min_isr_restored():
    old = healthy()
    old.topics["orders"].partitions[0].isr = [1]
    _, new = changed(lambda s: setattr(s.topics["orders"], "min_isr", None), old)
    assert diff(old, new) == []


# Topics -----------------------------------------------------------------------------------------


def test_new_topic_emits_info_topic_created_with_partition_count_and_replication_factor():
    payments = topic("payments", part(0, replicas=(1, 2)), part(1, replicas=(2, 3)))
    old, new = changed(lambda s: s.topics.update({"payments": payments}))
    changes = diff(old, new)
    assert kinds(changes) == ["topic_created"]
    change = changes[0]
    assert change.severity == INFO
    assert change.topic == "payments" and change.partition is None
    assert change.details == {"partitions": 2, "replication_factor": 2}
    assert "payments" in change.message and "2 partitions" in change.message


def test_removed_topic_emits_warning_topic_deleted():
    old, new = changed(lambda s: s.topics.pop("orders"))
    changes = diff(old, new)
    assert kinds(changes) == ["topic_deleted"]
    assert changes[0].severity == WARNING
    assert changes[0].topic == "orders"


def test_topic_events_are_ordered_by_topic_name_created_before_deleted():
    created = [f"new-{c}" for c in "qwertyuiopasdfgh"]
    deleted = [f"old-{c}" for c in "zxcvbnmlkj"]
    old = snapshot(*(topic(n) for n in deleted))

    def recreate(s: Snapshot) -> None:
        s.topics.clear()
        s.topics.update({n: topic(n) for n in created})

    _, new = changed(recreate, old)
    assert [(c.kind, c.topic) for c in diff(old, new)] == [
        *(("topic_created", n) for n in sorted(created)),
        *(("topic_deleted", n) for n in sorted(deleted)),
    ]


def test_more_partitions_emits_info_partitions_added_with_old_and_new_counts():
    old, new = changed(lambda s: s.topics["orders"].partitions.append(part(3, leader=1)))
    changes = diff(old, new)
    assert kinds(changes) == ["partitions_added"]
    change = changes[0]
    assert change.severity == INFO
    assert change.topic == "orders" and change.partition is None
    assert change.details == {"old": 3, "new": 4}
    assert "3 -> 4" in change.message


def test_new_partition_that_is_already_unhealthy_emits_only_partitions_added():
    old, new = changed(lambda s: s.topics["orders"].partitions.append(part(3, leader=-1, isr=[])))
    assert kinds(diff(old, new)) == ["partitions_added"]


# Every kind -------------------------------------------------------------------------------------


def _with(**partition0: object) -> Callable[[Snapshot], None]:
    def mutate(s: Snapshot) -> None:
        for k, v in partition0.items():
            setattr(s.topics["orders"].partitions[0], k, v)

    return mutate


def _unhealthy(**partition0: object) -> Snapshot:
    s = healthy()
    _with(**partition0)(s)
    return s


def _unreachable_old() -> Snapshot:
    s = healthy()
    s.reachable = False
    return s


def _broker_down_old() -> Snapshot:
    s = healthy()
    s.brokers[2].up = False
    return s


def _broker_unreachable_old() -> Snapshot:
    s = healthy()
    s.brokers[2].reachable = False
    return s


# kind: (old snapshot, mutation giving the new one, severity)
SCENARIOS: dict[str, tuple[Callable[[], Snapshot], Callable[[Snapshot], object], str]] = {
    "cluster_unreachable": (healthy, lambda s: setattr(s, "reachable", False), CRITICAL),
    "cluster_reachable": (_unreachable_old, lambda s: setattr(s, "reachable", True), INFO),
    "broker_down": (healthy, lambda s: setattr(s.brokers[2], "up", False), CRITICAL),
    "broker_up": (_broker_down_old, lambda s: setattr(s.brokers[2], "up", True), INFO),
    "broker_unreachable": (healthy, lambda s: setattr(s.brokers[2], "reachable", False), CRITICAL),
    "broker_reachable": (_broker_unreachable_old, lambda s: setattr(s.brokers[2], "reachable", True), INFO),
    "broker_added": (healthy, lambda s: s.brokers.update({9: broker(9)}), INFO),
    "controller_change": (healthy, lambda s: setattr(s, "controller_id", 2), WARNING),
    "leader_change": (healthy, _with(leader=2), WARNING),
    "isr_shrink": (healthy, _with(isr=[1, 2]), WARNING),
    "isr_expand": (lambda: _unhealthy(isr=[1, 2]), _with(isr=[1, 2, 3]), INFO),
    "partition_offline": (healthy, _with(leader=-1), CRITICAL),
    "partition_online": (lambda: _unhealthy(leader=-1), _with(leader=1), INFO),
    "under_replicated": (healthy, _with(isr=[1, 2]), WARNING),
    "fully_replicated": (lambda: _unhealthy(isr=[1, 2]), _with(isr=[1, 2, 3]), INFO),
    "under_min_isr": (healthy, _with(isr=[1]), CRITICAL),
    "min_isr_restored": (lambda: _unhealthy(isr=[1]), _with(isr=[1, 2]), INFO),
    "topic_created": (healthy, lambda s: s.topics.update({"new": topic("new")}), INFO),
    "topic_deleted": (healthy, lambda s: s.topics.pop("orders"), WARNING),
    "partitions_added": (healthy, lambda s: s.topics["orders"].partitions.append(part(3)), INFO),
}


def test_every_event_kind_has_a_scenario_here():
    # Rebalance events come from the consumer group tracker, balance events from the balance watch
    # (tests/unit/test_reassignment_logic.py) and analytics events from the sample writer
    # (tests/unit/test_samples_writer.py), watcher events from `manage.py watch` restarting its child
    # (tests/integration/test_watcher_restart.py) and alerts events from a failing alert channel
    # (tests/web/test_alert_delivery.py), Connect task events from the auto-restart loop
    # (tests/web/test_connect_offsets.py) and transaction events from the transactions side loop
    # (tests/integration/test_transactions.py), and the ISR about to shrink from the replica lag
    # streaks kept across cycles (tests/unit/test_replica_lag.py), not from diffing snapshots.
    assert set(SCENARIOS) == set(KINDS) - {"rebalance", "balance", "analytics", "watcher", "alerts", "connect_task_restarted",
                                           "connect_task_gave_up", "transaction_hanging", "transaction_ended",
                                           "isr_about_to_shrink"}


@pytest.mark.parametrize("kind", sorted(SCENARIOS))
def test_each_event_kind_is_emitted_with_its_severity(kind):
    make_old, mutate, severity = SCENARIOS[kind]
    old, new = changed(mutate, make_old())
    change = only(diff(old, new), kind)
    assert change.severity == severity
    assert change.message


@pytest.mark.parametrize("kind", sorted(SCENARIOS))
def test_each_event_kind_has_a_label(kind):
    assert KINDS[kind].strip()


def test_events_use_only_the_three_severities():
    seen = set()
    for make_old, mutate, _ in SCENARIOS.values():
        old, new = changed(mutate, make_old())
        seen |= {c.severity for c in diff(old, new)}
    assert seen == {INFO, WARNING, CRITICAL}


def test_partitions_are_matched_by_number_when_their_places_differ():
    """Partitions are compared by number: in place when the lists agree, by number where they do not
    (a list in another order, or with a partition missing), never by place alone."""
    old = healthy()
    new = deepcopy(old)
    parts = new.topics["orders"].partitions
    parts[1].leader = 3
    new.topics["orders"].partitions = [parts[2], parts[0], parts[1]]
    assert [(c.kind, c.partition) for c in diff(old, new)] == [("leader_change", 1)]
    shorter = deepcopy(old)
    shorter.topics["orders"].partitions = [shorter.topics["orders"].partitions[0], shorter.topics["orders"].partitions[2]]
    shorter.topics["orders"].partitions[1].leader = 1
    assert [(c.kind, c.partition, c.details) for c in diff(old, shorter)] == [("leader_change", 2, {"old": 3, "new": 1})]


def test_a_partitions_events_with_its_isr_replicas_and_min_isr_as_they_were_are_those_every_kind_looked_at_gives() -> None:
    """`_partition` answers a leader moved alone (most changes at scale) without looking at the
    ISR's, replicas' and min ISR's events: over random pairs of states, what it says equals what
    looking at every kind of event says (`_partition_all`), and leader moves alone are among them."""
    import random

    from console.snapshots.model import PartitionState
    from console.watcher.diff import _partition, _partition_all

    rng = random.Random(11)
    fast = 0
    for _ in range(3000):
        replicas = rng.sample([1, 2, 3, 4, 5], rng.randint(1, 4))

        def state(replicas: list[int], like: PartitionState | None = None) -> PartitionState:
            if like is not None and rng.random() < 0.6:  # (the ISR and replicas as they were: lists equal, not the same)
                leader = rng.choice([-1, *like.replicas])
                return PartitionState(like.partition, leader, list(like.replicas), list(like.isr), [])
            reps = replicas if rng.random() < 0.8 else rng.sample([1, 2, 3, 4, 5], rng.randint(1, 4))
            isr = [r for r in reps if rng.random() < 0.7]
            leader = rng.choice([-1, *isr]) if isr else -1
            return PartitionState(0, leader, list(reps), isr, [])

        old = state(replicas)
        new = state(replicas, old)
        old_min = rng.choice([None, 1, 2, 3])
        new_min = old_min if rng.random() < 0.8 else rng.choice([None, 1, 2, 3])
        got = _partition("t", old, new, old_min, new_min)
        assert got == _partition_all("t", old, new, old_min, new_min), (old, new, old_min, new_min)
        fast += old_min == new_min and old.isr == new.isr and old.replicas == new.replicas and old.leader != new.leader
    assert fast > 500
