"""brokers_app.placement.planner: minimal-movement reassignment plans (ALGORITHMS.md section 5)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from brokers_app.placement.generate import kafka_generate_expected
from brokers_app.placement.model import Broker, ClusterLayout, Kind, PartitionInfo, PlanError, PlanRequest, layout_from_snapshot
from brokers_app.placement.planner import plan
from brokers_app.placement.result import spread
from tests.unit._build import broker, part, snapshot, topic
from tests.unit._placement import after_all, cluster, leader_counts, replica_counts, round_robin

ROOT = Path(__file__).resolve().parents[2]


# Decommission ------------------------------------------------------------------------------------


def test_decommission_moves_exactly_the_replicas_on_the_retired_broker():
    layout = cluster([1, 2, 3, 4], *round_robin("orders", 12, 3, [1, 2, 3, 4]), *round_robin("audit", 8, 2, [1, 2, 3, 4]))
    on_four = sum(4 in p.replicas for p in layout.partitions)
    p = plan(layout, PlanRequest.decommission([4]))
    assert p.replicas_to_move == on_four == p.required_replicas
    assert all(4 not in replicas for replicas in after_all(layout, p).values())
    counts = replica_counts(after_all(layout, p))
    assert max(counts[b] for b in (1, 2, 3)) - min(counts[b] for b in (1, 2, 3)) <= 1


def test_decommission_keeps_the_current_leader_when_it_stays():
    layout = cluster([1, 2, 3, 4], ("orders", 0, [1, 4, 2], 10, 2), ("orders", 1, [3, 4], 10, 3))
    p = plan(layout, PlanRequest.decommission([4]))
    lists = p.assignment()
    assert lists[("orders", 0)][0] == 2  # the current leader, not the first replica of before
    assert lists[("orders", 1)][0] == 3


def test_decommission_puts_a_new_replica_in_the_place_of_the_one_it_replaces():
    layout = cluster([1, 2, 3, 4], ("orders", 0, [1, 4, 2], 10))
    after = plan(layout, PlanRequest.decommission([4])).assignment()[("orders", 0)]
    assert after == (1, 3, 2)


def test_decommission_of_a_leader_hands_leadership_to_a_replica_that_has_the_data():
    layout = cluster([1, 2, 3], ("orders", 0, [3, 1], 10))
    after = plan(layout, PlanRequest.decommission([3])).assignment()[("orders", 0)]
    assert after == (1, 2)


def test_decommission_bytes_are_the_sizes_of_the_partitions_that_had_a_replica_there():
    layout = cluster([1, 2, 3], ("a", 0, [1, 3], 500), ("a", 1, [2, 1], 7), ("b", 0, [3], 40))
    p = plan(layout, PlanRequest.decommission([3]))
    assert p.bytes_to_move == 540
    assert {c.key: c.bytes_to_move for c in p.changes} == {("a", 0): 500, ("b", 0): 40}


def test_decommissioning_every_broker_is_refused():
    layout = cluster([1, 2], ("orders", 0, [1], 1))
    with pytest.raises(PlanError, match="^Decommissioning brokers 1 and 2 would leave no broker to hold the replicas.$"):
        plan(layout, PlanRequest.decommission([1, 2]))


def test_decommissioning_so_many_brokers_that_a_topic_cannot_keep_its_replication_factor_is_refused():
    layout = cluster([1, 2, 3], ("orders", 0, [1, 2, 3], 1))
    with pytest.raises(PlanError, match="^Decommissioning broker 3 leaves 2 brokers, too few for topic orders with replication factor 3.$"):
        plan(layout, PlanRequest.decommission([3]))


def test_decommissioning_an_unknown_broker_is_refused():
    layout = cluster([1, 2, 3], ("orders", 0, [1, 2], 1))
    with pytest.raises(PlanError, match="^Broker 9 is not in the cluster.$"):
        plan(layout, PlanRequest.decommission([9]))


def test_a_broker_that_left_the_cluster_is_moved_off_with_a_note():
    layout = cluster([1, 2, 3], ("orders", 0, [1, 9], 1), ("orders", 1, [2, 3], 1))
    p = plan(layout, PlanRequest.rebalance())
    assert 9 not in p.assignment()[("orders", 0)]
    assert any("Broker 9 holds replicas but is not in the cluster" in n for n in p.notes)


@pytest.mark.parametrize(
    ("partitions", "message"),
    [
        ((PartitionInfo("orders", 0, (), None, 1),), "Partition orders-0 has no replicas in the cluster layout."),
        ((PartitionInfo("orders", 0, (1,), 1, -5),), "Partition orders-0 has a negative size in the cluster layout."),
        ((PartitionInfo("orders", 0, (1,)), PartitionInfo("orders", 0, (2,))), "The cluster layout lists a partition twice."),
    ],
)
def test_a_layout_that_cannot_be_planned_is_refused(partitions, message):
    with pytest.raises(PlanError) as e:
        ClusterLayout((Broker(1), Broker(2)), partitions)
    assert str(e.value) == message


# Adding brokers -----------------------------------------------------------------------------------


def test_adding_a_broker_moves_replicas_only_onto_it_and_balances_counts():
    layout = cluster([1, 2, 3, 4], *round_robin("orders", 12, 2, [1, 2, 3]), *round_robin("audit", 6, 3, [1, 2, 3]))
    p = plan(layout, PlanRequest.add_brokers([4]))
    assert all(c.added == (4,) for c in p.changes if c.added)
    counts = replica_counts(after_all(layout, p))
    assert max(counts.values()) - min(counts.values()) <= 1
    assert p.replicas_to_move == counts[4]


def test_adding_a_broker_moves_the_smallest_partition_of_each_full_broker():
    sizes = [900, 3, 800, 1, 700, 2]  # broker 1 holds 900, 800, 700; broker 2 holds 3, 1, 2
    layout = cluster([1, 2, 3], *(("orders", n, [1 + n % 2], s) for n, s in enumerate(sizes)))
    p = plan(layout, PlanRequest.add_brokers([3]))
    assert {c.partition for c in p.changes if c.added} == {3, 4}
    assert p.bytes_to_move == 701


def test_adding_a_broker_balances_leaders_too():
    layout = cluster([1, 2, 3, 4], *round_robin("orders", 12, 3, [1, 2, 3]))
    after = after_all(layout, plan(layout, PlanRequest.add_brokers([4])))
    leaders = leader_counts(after)
    assert max(leaders[b] for b in (1, 2, 3, 4)) - min(leaders[b] for b in (1, 2, 3, 4)) <= 1


def test_adding_brokers_without_naming_one_is_refused():
    layout = cluster([1, 2], ("orders", 0, [1], 1))
    with pytest.raises(PlanError, match="^Name the newly added broker or brokers to spread replicas onto.$"):
        plan(layout, PlanRequest.add_brokers([]))


# Rebalance ----------------------------------------------------------------------------------------


def test_rebalancing_a_balanced_cluster_moves_nothing():
    layout = cluster([1, 2, 3], *round_robin("orders", 9, 3, [1, 2, 3]), *round_robin("audit", 6, 2, [1, 2, 3]))
    p = plan(layout, PlanRequest.rebalance())
    assert p.changes == ()
    assert p.reassignment() == {"version": 1, "partitions": []}
    assert p.bytes_to_move == 0
    assert p.generate is not None and p.generate.bytes > 0  # Kafka's --generate would still move data


def test_rebalance_moves_the_smallest_replicas_from_the_fullest_broker():
    layout = cluster([1, 2], ("orders", 0, [1], 10), ("orders", 1, [1], 1), ("orders", 2, [1], 1000), ("orders", 3, [1], 5))
    p = plan(layout, PlanRequest.rebalance())
    assert {c.partition for c in p.changes} == {1, 3}
    assert p.bytes_to_move == 6


def test_rebalance_goes_through_a_middle_broker_when_that_copies_less():
    # Broker 3 is empty and needs one replica. Broker 1's replicas are big; broker 2 holds a tiny one
    # that can go to 3, and broker 2 can take one of broker 1's back for free (it held it before).
    layout = cluster(
        [1, 2, 3],
        ("t", 0, [1, 2], 1000, 1), ("t", 1, [1, 2], 1000, 1), ("t", 2, [2], 1, 2),
    )
    p = plan(layout, PlanRequest.change_replication_factor(["t"], 1))
    counts = replica_counts(after_all(layout, p))
    assert sorted(counts.values()) == [1, 1, 1]
    assert p.bytes_to_move == 1


def test_rebalance_of_selected_topics_leaves_other_topics_alone():
    layout = cluster([1, 2, 3], *(("hot", n, [1], 10) for n in range(6)), *(("cold", n, [1], 10) for n in range(6)))
    p = plan(layout, PlanRequest.rebalance(["hot"]))
    assert {c.topic for c in p.partitions} == {"hot"}
    assert Counter(r[0] for r in p.assignment().values()) == {1: 2, 2: 2, 3: 2}


def test_leaders_are_balanced_by_reordering_replicas_without_copying_data():
    layout = cluster([1, 2, 3], *(("orders", n, [1, 2, 3], 100) for n in range(6)))
    p = plan(layout, PlanRequest.rebalance())
    assert p.bytes_to_move == 0
    assert leader_counts(p.assignment()) == {1: 2, 2: 2, 3: 2}
    assert all(sorted(c.after) == [1, 2, 3] for c in p.partitions)


def test_a_replica_that_leads_alone_is_moved_when_reordering_cannot_balance_leaders():
    # Broker 1 leads three single-replica partitions; reordering cannot help, moving one can.
    layout = cluster([1, 2, 3], ("solo", 0, [1], 5), ("solo", 1, [1], 6), ("solo", 2, [1], 7), ("pair", 0, [2, 3], 100))
    p = plan(layout, PlanRequest.rebalance())
    assert spread(p.assignment(), [1, 2, 3]).leaders <= 1
    assert spread(p.assignment(), [1, 2, 3]).replicas <= 1


def test_rebalance_spreads_a_partition_kept_in_one_rack_over_two():
    layout = cluster({1: "a", 2: "a", 3: "b", 4: "b"}, ("orders", 0, [1, 2], 10), ("orders", 1, [3, 1], 10))
    p = plan(layout, PlanRequest.rebalance())
    after = p.assignment()[("orders", 0)]
    assert {"a", "b"} == {layout.racks[b] for b in after}
    assert p.required_replicas == 1


def test_rebalance_of_an_unknown_topic_is_refused():
    layout = cluster([1, 2], ("orders", 0, [1], 1))
    with pytest.raises(PlanError, match="^Topic payments does not exist in the cluster.$"):
        plan(layout, PlanRequest.rebalance(["payments"]))


def test_rebalance_naming_brokers_is_refused():
    layout = cluster([1, 2], ("orders", 0, [1], 1))
    with pytest.raises(PlanError, match="^A rebalance takes topics, not brokers"):
        plan(layout, PlanRequest(Kind.REBALANCE, brokers=(1,)))


def test_brokers_without_racks_among_racked_ones_turn_rack_awareness_off_with_a_note():
    layout = cluster({1: "a", 2: "a", 3: None}, ("orders", 0, [1, 2], 1))
    p = plan(layout, PlanRequest.rebalance())
    assert not p.scope.rack_aware
    assert any("Broker 3 has no rack" in n for n in p.notes)


# Replication factor -------------------------------------------------------------------------------


def test_raising_the_replication_factor_adds_replicas_in_racks_not_yet_used():
    layout = cluster({1: "a", 2: "a", 3: "b", 4: "c"}, *(("orders", n, [1 + n % 2], 50) for n in range(4)))
    p = plan(layout, PlanRequest.change_replication_factor(["orders"], 3))
    for c in p.partitions:
        assert len(c.after) == 3
        assert {layout.racks[b] for b in c.after} == {"a", "b", "c"}
    assert leader_counts(p.assignment()) == {1: 1, 2: 1, 3: 1, 4: 1}  # leader balance outranks keeping leaders
    assert p.bytes_to_move == 4 * 2 * 50
    assert p.required_replicas == 8


def test_lowering_the_replication_factor_copies_nothing_and_keeps_the_leader():
    layout = cluster([1, 2, 3], *(("orders", n, [1 + n % 3, 1 + (n + 1) % 3, 1 + (n + 2) % 3], 50) for n in range(6)))
    p = plan(layout, PlanRequest.change_replication_factor(["orders"], 2))
    assert p.bytes_to_move == 0
    for c in p.partitions:
        assert len(c.after) == 2
        assert c.after[0] == c.before[0]
    counts = replica_counts(p.assignment())
    assert max(counts.values()) - min(counts.values()) <= 1


def test_a_replication_factor_above_the_brokers_is_refused():
    layout = cluster([1, 2, 3], ("orders", 0, [1], 1))
    with pytest.raises(PlanError, match="^Replication factor 4 is more than the 3 brokers in the cluster.$"):
        plan(layout, PlanRequest.change_replication_factor(["orders"], 4))


def test_a_replication_factor_change_without_topics_is_refused():
    layout = cluster([1, 2, 3], ("orders", 0, [1], 1))
    with pytest.raises(PlanError, match="^Name the topic or topics whose replication factor should change.$"):
        plan(layout, PlanRequest.change_replication_factor([], 2))


def test_a_replication_factor_given_to_another_kind_of_request_is_refused():
    layout = cluster([1, 2, 3], ("orders", 0, [1], 1))
    with pytest.raises(PlanError, match="^Only a replication factor change takes a replication factor.$"):
        plan(layout, PlanRequest(Kind.REBALANCE, replication_factor=2))


# Requests from the API ----------------------------------------------------------------------------


def test_a_request_body_becomes_a_plan_request():
    body = {"kind": "replication_factor", "topics": ["orders"], "brokers": [], "replication_factor": 3}
    assert PlanRequest.from_dict(body) == PlanRequest(Kind.REPLICATION_FACTOR, ("orders",), (), 3)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"kind": "shuffle"}, "The kind of plan must be one of rebalance, decommission, add_brokers, replication_factor."),
        ({"kind": "imported"}, "The kind of plan must be one of rebalance, decommission, add_brokers, replication_factor."),
        ({"kind": "rebalance", "topics": "orders"}, "topics must be a list of topic names."),
        ({"kind": "decommission", "brokers": ["3"]}, "brokers must be a list of broker ids."),
        ({"kind": "decommission", "brokers": [True]}, "brokers must be a list of broker ids."),
        ({"kind": "replication_factor", "topics": ["t"], "replication_factor": 2.5}, "replication_factor must be a whole number."),
    ],
)
def test_a_bad_request_body_gets_one_sentence(body, message):
    with pytest.raises(PlanError) as e:
        PlanRequest.from_dict(body)
    assert str(e.value) == message


# The plan's report ---------------------------------------------------------------------------------


def test_the_plan_counts_replicas_leaders_and_bytes_per_broker_before_and_after():
    layout = cluster([1, 2, 3], ("a", 0, [1, 3], 500), ("a", 1, [2, 1], 7), ("b", 0, [3], 40))
    p = plan(layout, PlanRequest.decommission([3]))
    rows = {b.broker: b for b in p.brokers}
    assert (rows[3].replicas_before, rows[3].replicas_after, rows[3].removed) == (2, 0, True)
    assert (rows[3].leaders_before, rows[3].leaders_after) == (1, 0)
    assert (rows[3].bytes_before, rows[3].bytes_after) == (540, 0)
    assert sum(r.replicas_after for r in p.brokers) == sum(r.replicas_before for r in p.brokers) == 5
    assert sum(r.bytes_after for r in p.brokers) == p.total_bytes == 500 * 2 + 7 * 2 + 40
    assert p.moved_fraction == pytest.approx(540 / p.total_bytes)


def test_the_plan_says_what_kafkas_generate_would_move_beside_it():
    layout = cluster([1, 2, 3, 4], *round_robin("orders", 12, 2, [1, 2, 3, 4]))
    p = plan(layout, PlanRequest.decommission([4]))
    assert p.generate is not None
    assert p.generate_fraction is not None and p.generate_fraction > p.moved_fraction
    assert p.generate == kafka_generate_expected(layout, PlanRequest.decommission([4]))


def test_the_plan_as_a_dict_is_json_with_kafkas_plan_inside():
    layout = cluster([1, 2, 3], ("a", 0, [1, 3], 500), ("b", 0, [3], 40))
    body = json.loads(json.dumps(plan(layout, PlanRequest.decommission([3])).to_dict()))
    assert body["plan"]["version"] == 1
    assert {(e["topic"], e["partition"]) for e in body["plan"]["partitions"]} == {("a", 0), ("b", 0)}
    assert body["totals"]["bytes_to_move"] == 540
    assert {b["broker"] for b in body["brokers"]} == {1, 2, 3}


def test_plans_do_not_depend_on_the_hash_seed():
    code = (
        "import json, random\n"
        "from brokers_app.placement.model import Broker, ClusterLayout, PartitionInfo, PlanRequest\n"
        "from brokers_app.placement.planner import plan\n"
        "rng = random.Random(7)\n"
        "parts = tuple(PartitionInfo(f't{t}', p, tuple(rng.sample(range(1, 7), 3)), None, rng.randint(0, 99))"
        " for t in range(12) for p in range(10))\n"
        "layout = ClusterLayout(tuple(Broker(b, 'r%d' % (b % 3)) for b in range(1, 8)), parts)\n"
        "print(json.dumps([plan(layout, r, compare_with_generate=False).reassignment() for r in"
        " (PlanRequest.add_brokers([7]), PlanRequest.decommission([2]), PlanRequest.rebalance())]))\n"
    )
    outputs = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
        outputs.add(done.stdout)
    assert len(outputs) == 1


def test_a_layout_comes_from_the_watchers_snapshot_with_sizes_from_log_dirs():
    p0, p1 = part(0, leader=2, replicas=(2, 1)), part(1, leader=-1, replicas=(3, 1))
    p0.size, p1.size = 4096, None
    snap = snapshot(topic("orders", p0, p1), brokers=[broker(1, rack="a"), broker(2, rack="b"), broker(3, rack="a")])
    layout = layout_from_snapshot(snap)
    assert layout.brokers == (Broker(1, "a"), Broker(2, "b"), Broker(3, "a"))
    assert layout.partitions == (
        PartitionInfo("orders", 0, (2, 1), 2, 4096),
        PartitionInfo("orders", 1, (3, 1), None, 0),
    )


# Kafka's --generate --------------------------------------------------------------------------------
