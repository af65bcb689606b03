"""brokers_app.placement: minimal-movement reassignment plans and Kafka's --generate (ALGORITHMS.md section 5)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokers_app.placement import (
    Broker,
    ClusterLayout,
    Kind,
    PartitionInfo,
    Plan,
    PlanError,
    PlanRequest,
    export_reassignment,
    kafka_generate,
    kafka_generate_expected,
    layout_from_snapshot,
    parse_reassignment,
    plan,
    plan_from_reassignment,
    reassignment_json,
    spread,
)
from tests.unit._build import broker, part, snapshot, topic

ROOT = Path(__file__).resolve().parents[2]


def cluster(brokers: Mapping[int, str | None] | Iterable[int], *partitions: tuple[Any, ...]) -> ClusterLayout:
    """partitions: (topic, partition, replicas, size[, leader]); leader defaults to the first replica."""
    racks = dict(brokers) if isinstance(brokers, Mapping) else {b: None for b in brokers}
    infos = []
    for t, n, replicas, size, *leader in partitions:
        infos.append(PartitionInfo(t, n, tuple(replicas), leader[0] if leader else replicas[0], size))
    return ClusterLayout(tuple(Broker(b, r) for b, r in sorted(racks.items())), tuple(infos))


def round_robin(topic_name: str, partitions: int, rf: int, brokers: Sequence[int], size: int = 100, start: int = 0) -> list[tuple[Any, ...]]:
    """A balanced layout: leaders round-robin, followers on the next brokers."""
    n = len(brokers)
    return [
        (topic_name, p, [brokers[(p + start + i) % n] for i in range(rf)], size + p)
        for p in range(partitions)
    ]


def replica_counts(assignment: Mapping[tuple[str, int], Sequence[int]]) -> Counter[int]:
    return Counter(b for replicas in assignment.values() for b in replicas)


def leader_counts(assignment: Mapping[tuple[str, int], Sequence[int]]) -> Counter[int]:
    return Counter(replicas[0] for replicas in assignment.values())


def after_all(layout: ClusterLayout, p: Plan) -> dict[tuple[str, int], tuple[int, ...]]:
    result = layout.assignment()
    result.update(p.assignment())
    return result


class _Zero(random.Random):
    """Kafka's random start index and replica shift both 0, as with its fixedStartIndex=0."""

    def randrange(self, *args: Any, **kwargs: Any) -> int:  # type: ignore[override]
        return 0


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
        "from brokers_app.placement import *\n"
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


def test_kafka_model_matches_kafkas_documented_rack_unaware_example():
    # AdminUtils' javadoc: 5 brokers, 10 partitions, 3 replicas, start index 0.
    layout = cluster(range(5), *(("t", n, [0], 0) for n in range(10)))
    lists = kafka_generate(layout, PlanRequest.change_replication_factor(["t"], 3), _Zero())
    assert lists[("t", 0)] == (0, 1, 2)
    assert lists[("t", 4)] == (4, 0, 1)
    assert lists[("t", 5)] == (0, 2, 3)  # the followers shift after a full round
    assert lists[("t", 9)] == (4, 1, 2)


def test_kafka_model_matches_kafkas_documented_rack_aware_example():
    # AdminUtils' javadoc: racks 0->rack1, 1->rack3, 2->rack3, 3->rack2, 4->rack2, 5->rack1 give the
    # rack-alternated list 0, 3, 1, 5, 4, 2 and these assignments.
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    layout = cluster(racks, *(("t", n, [0, 1, 3], 0) for n in range(7)))
    lists = kafka_generate(layout, PlanRequest.rebalance(["t"]), _Zero())
    assert [lists[("t", n)] for n in range(7)] == [
        (0, 3, 1), (3, 1, 5), (1, 5, 4), (5, 4, 2), (4, 2, 0), (2, 0, 3), (0, 4, 2),
    ]


def test_kafka_model_expectation_is_the_mean_over_its_random_start_points():
    layout = cluster({1: "a", 2: "b", 3: "a", 4: "b"}, *(("t", n, [1 + n % 4, 1 + (n + 1) % 4], 10 + n) for n in range(6)))
    request = PlanRequest.rebalance()

    class Fixed(random.Random):
        def __init__(self, start: int, shift: int) -> None:
            super().__init__(0)
            self.values = [start, shift]

        def randrange(self, *args: Any, **kwargs: Any) -> int:  # type: ignore[override]
            return self.values.pop(0)

    moved = []
    for start in range(4):
        for shift in range(4):
            lists = kafka_generate(layout, request, Fixed(start, shift))
            moved.append(sum(p.size * len(set(lists[p.key]) - set(p.replicas)) for p in layout.partitions))
    assert kafka_generate_expected(layout, request).bytes == pytest.approx(sum(moved) / len(moved))


# Kafka's reassignment JSON ------------------------------------------------------------------------


def test_the_exported_plan_is_kafkas_json_with_only_the_changed_partitions():
    layout = cluster([1, 2, 3], ("b", 0, [3, 1], 5), ("a", 1, [1, 2], 5), ("a", 0, [2, 3], 5))
    p = plan(layout, PlanRequest.decommission([3]))
    exported = json.loads(export_reassignment(p))
    assert exported == {
        "version": 1,
        "partitions": [
            {"topic": "a", "partition": 0, "replicas": list(p.assignment()[("a", 0)])},
            {"topic": "b", "partition": 0, "replicas": list(p.assignment()[("b", 0)])},
        ],
    }
    assert parse_reassignment(layout, export_reassignment(p)) == {c.key: c.after for c in p.changes}


def test_an_imported_plan_is_shown_like_a_computed_one():
    layout = cluster([1, 2, 3], ("a", 0, [1, 2], 100), ("a", 1, [2, 3], 100))
    p = plan_from_reassignment(layout, {"version": 1, "partitions": [{"topic": "a", "partition": 0, "replicas": [3, 2]}]})
    assert p.request.kind is Kind.IMPORTED
    assert [(c.key, c.before, c.after) for c in p.changes] == [(("a", 0), (1, 2), (3, 2))]
    assert p.bytes_to_move == 100
    assert {b.broker: (b.replicas_before, b.replicas_after) for b in p.brokers} == {1: (1, 0), 2: (2, 2), 3: (1, 2)}


def test_an_imported_plan_may_change_the_replication_factor_when_allowed():
    layout = cluster([1, 2, 3], ("a", 0, [1, 2], 100))
    data = {"version": 1, "partitions": [{"topic": "a", "partition": 0, "replicas": [1, 2, 3]}]}
    assert parse_reassignment(layout, data, allow_rf_change=True) == {("a", 0): (1, 2, 3)}


def test_log_dirs_of_any_are_accepted():
    layout = cluster([1, 2, 3], ("a", 0, [1, 2], 100))
    data = {"version": 1, "partitions": [{"topic": "a", "partition": 0, "replicas": [2, 3], "log_dirs": ["any", "any"]}]}
    assert parse_reassignment(layout, data) == {("a", 0): (2, 3)}


def test_an_empty_plan_is_valid():
    layout = cluster([1, 2, 3], ("a", 0, [1, 2], 100))
    assert parse_reassignment(layout, reassignment_json({})) == {}


BAD_PLANS = [
    ("{not json", "The plan is not valid JSON (Expecting property name enclosed in double quotes at line 1, column 2)."),
    ("[1, 2]", 'The plan must be a JSON object with "version" and "partitions".'),
    ('{"partitions": []}', 'The plan has no "version"; Kafka\'s reassignment JSON has "version": 1.'),
    ('{"version": 2, "partitions": []}', "The plan has version 2, but only version 1 is understood."),
    ('{"version": "1", "partitions": []}', 'The plan has version "1", but only version 1 is understood.'),
    ('{"version": 1}', 'The plan has no "partitions" list.'),
    ('{"version": 1, "partitions": [7]}', 'Entry 1 of "partitions" is not an object.'),
    ('{"version": 1, "partitions": [{"partition": 0, "replicas": [1]}]}', 'Entry 1 of "partitions" has no topic name.'),
    ('{"version": 1, "partitions": [{"topic": "a", "partition": "0", "replicas": [1]}]}',
     'Entry 1 of "partitions" (topic a) has no partition number.'),
    ('{"version": 1, "partitions": [{"topic": "a", "partition": 0, "replicas": "1,2"}]}',
     "Partition a-0 has no replica list of broker ids."),
    ('{"version": 1, "partitions": [{"topic": "a", "partition": 0, "replicas": []}]}', "Partition a-0 has an empty replica list."),
    ('{"version": 1, "partitions": [{"topic": "zz", "partition": 0, "replicas": [1, 2]}]}', "Topic zz does not exist in the cluster."),
    ('{"version": 1, "partitions": [{"topic": "a", "partition": 5, "replicas": [1, 2]}]}',
     "Partition a-5 does not exist; topic a has partitions 0 to 1."),
    ('{"version": 1, "partitions": [{"topic": "a", "partition": 0, "replicas": [1, 2]},'
     ' {"topic": "a", "partition": 0, "replicas": [2, 3]}]}', "Partition a-0 appears twice in the plan."),
    ('{"version": 1, "partitions": [{"topic": "a", "partition": 0, "replicas": [2, 2]}]}', "Partition a-0 lists broker 2 twice."),
    ('{"version": 1, "partitions": [{"topic": "a", "partition": 0, "replicas": [1, 9]}]}',
     "Partition a-0 names broker 9, which is not in the cluster."),
    ('{"version": 1, "partitions": [{"topic": "a", "partition": 0, "replicas": [1, 2, 3]}]}',
     "Partition a-0 has 3 replicas instead of its replication factor 2; change the replication factor with a replication factor request."),
    ('{"version": 1, "partitions": [{"topic": "a", "partition": 0, "replicas": [1, 3]}]}',
     "Partition a-0 puts its 2 replicas in 1 rack although 2 racks are available."),
    ('{"version": 1, "partitions": [{"topic": "a", "partition": 0, "replicas": [1, 2], "log_dirs": ["/data", "any"]}]}',
     'Partition a-0 names log directories; only "any" is supported.'),
]


@pytest.mark.parametrize(("text", "message"), BAD_PLANS)
def test_a_bad_imported_plan_gets_one_sentence(text, message):
    layout = cluster({1: "x", 2: "y", 3: "x"}, ("a", 0, [1, 2], 100), ("a", 1, [2, 3], 100))
    with pytest.raises(PlanError) as e:
        parse_reassignment(layout, text)
    assert str(e.value) == message
    assert "\n" not in message


# Properties over random clusters -----------------------------------------------------------------


@st.composite
def clusters(draw: st.DrawFn) -> ClusterLayout:
    ids = draw(st.lists(st.integers(0, 30), min_size=1, max_size=7, unique=True))
    racks_mode = draw(st.sampled_from(["none", "racks", "racks", "mixed"]))
    rack_names = draw(st.lists(st.sampled_from("abc"), min_size=len(ids), max_size=len(ids)))
    brokers = []
    for b, r in zip(ids, rack_names, strict=True):
        rack: str | None = None if racks_mode == "none" else r
        if racks_mode == "mixed" and draw(st.booleans()):
            rack = None
        brokers.append(Broker(b, rack))
    skewed = draw(st.booleans())
    pool = ids[: max(1, (len(ids) + 1) // 2)] if skewed else ids
    partitions = []
    for t in range(draw(st.integers(1, 4))):
        rf = draw(st.integers(1, min(4, len(ids))))
        for n in range(draw(st.integers(1, 8))):
            choices = pool if len(pool) >= rf else ids
            replicas = tuple(draw(st.permutations(choices))[:rf])
            leader = draw(st.sampled_from([*replicas, None]))
            size = draw(st.one_of(st.just(0), st.integers(0, 10**6), st.integers(0, 10**12)))
            partitions.append(PartitionInfo(f"t{t}", n, replicas, leader, size))
    return ClusterLayout(tuple(brokers), tuple(partitions))


@st.composite
def cases(draw: st.DrawFn) -> tuple[ClusterLayout, PlanRequest]:
    layout = draw(clusters())
    ids = [b.id for b in layout.brokers]
    topics = list(layout.topics)
    kind = draw(st.sampled_from([Kind.REBALANCE, Kind.DECOMMISSION, Kind.ADD_BROKERS, Kind.REPLICATION_FACTOR]))
    if kind is Kind.REBALANCE:
        request = PlanRequest.rebalance(draw(st.lists(st.sampled_from(topics), unique=True)))
    elif kind is Kind.DECOMMISSION:
        request = PlanRequest.decommission(draw(st.lists(st.sampled_from(ids), min_size=1, max_size=max(1, len(ids) - 1), unique=True)))
    elif kind is Kind.ADD_BROKERS:
        request = PlanRequest.add_brokers(draw(st.lists(st.sampled_from(ids), min_size=1, unique=True)))
    else:
        request = PlanRequest.change_replication_factor(
            draw(st.lists(st.sampled_from(topics), min_size=1, unique=True)), draw(st.integers(1, len(ids)))
        )
    return layout, request


def _scope_topics(layout: ClusterLayout, request: PlanRequest) -> set[str]:
    if request.kind is Kind.DECOMMISSION:
        return {p.topic for p in layout.partitions if set(p.replicas) & set(request.brokers)}
    return set(request.topics) or set(layout.topics)


def _feasible(layout: ClusterLayout, request: PlanRequest) -> bool:
    left = {b.id for b in layout.brokers} - (set(request.brokers) if request.kind is Kind.DECOMMISSION else set())
    if not left:
        return False
    if request.kind is Kind.REPLICATION_FACTOR:
        assert request.replication_factor is not None
        return request.replication_factor <= len(left)
    return all(len(set(p.replicas)) <= len(left) for p in layout.partitions if p.topic in _scope_topics(layout, request))


PROPERTY = settings(max_examples=200, deadline=None, database=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(cases())
def test_plans_never_break_the_hard_rules(case):
    layout, request = case
    try:
        p = plan(layout, request, compare_with_generate=False)
    except PlanError:
        assert not _feasible(layout, request)
        return
    assert _feasible(layout, request)
    removed = set(request.brokers) if request.kind is Kind.DECOMMISSION else set()
    targets = {b.id for b in layout.brokers} - removed
    racks = {b.id: b.rack for b in layout.brokers if b.id in targets}
    rack_aware = all(r is not None for r in racks.values())
    in_scope = _scope_topics(layout, request)
    assert {c.key for c in p.partitions} == {q.key for q in layout.partitions if q.topic in in_scope}
    for c in p.partitions:
        expected_rf = request.replication_factor if request.kind is Kind.REPLICATION_FACTOR else len(set(c.before))
        assert len(c.after) == expected_rf, "replication factor kept, or changed exactly as asked"
        assert len(set(c.after)) == len(c.after), "no broker twice in one partition"
        assert set(c.after) <= targets, "only brokers in the cluster and not being removed"
        if rack_aware:
            assert len({racks[b] for b in c.after}) == min(expected_rf, len(set(racks.values()))), "as many racks as possible"
    after = after_all(layout, p)
    assert not any(removed & set(replicas) for replicas in after.values())
    for q in layout.partitions:
        if q.topic not in in_scope:
            assert after[q.key] == q.replicas
    # What the plan reports is what it does, and Kafka's JSON round-trips.
    assert p.bytes_to_move == sum(c.size * len(set(c.after) - set(c.before)) for c in p.partitions)
    assert p.replicas_to_move >= p.required_replicas
    assert {b.broker: b.replicas_after for b in p.brokers if b.replicas_after} == dict(replica_counts(after))
    assert {b.broker: b.leaders_after for b in p.brokers if b.leaders_after} == dict(leader_counts(after))
    exported = parse_reassignment(layout, export_reassignment(p), allow_rf_change=request.kind is Kind.REPLICATION_FACTOR)
    assert exported == {c.key: c.after for c in p.partitions if c.after != c.before}


@PROPERTY
@given(cases(), st.randoms(use_true_random=False))
def test_plans_move_no_more_than_kafkas_generate_and_balance_at_least_as_well(case, rng):
    layout, request = case
    if not _feasible(layout, request):
        return
    p = plan(layout, request)
    assert p.generate is not None
    targets = p.scope.targets
    outcomes = [spread(kafka_generate(layout, request, rng), targets) for _ in range(10)]
    for outcome in outcomes:
        assert p.spread_after.replicas <= outcome.replicas, "replica balance at least as good as --generate"
        assert p.spread_after.leaders <= outcome.leaders, "leader balance at least as good as --generate"
    if p.bytes_to_move > p.generate.bytes * (1 + 1e-9) + 1e-6:
        # Balance comes first (ALGORITHMS.md 5): a plan may copy more than --generate does on average
        # only when it balances strictly better than --generate ever did.
        assert p.spread_after.replicas < min(o.replicas for o in outcomes)


@PROPERTY
@given(cases())
def test_a_plan_applied_and_planned_again_changes_nothing(case):
    layout, request = case
    if not _feasible(layout, request):
        return
    p = plan(layout, request, compare_with_generate=False)
    after = after_all(layout, p)
    moved = ClusterLayout(layout.brokers, tuple(PartitionInfo(q.topic, q.partition, after[q.key], None, q.size) for q in layout.partitions))
    again = plan(moved, request, compare_with_generate=False)
    assert again.changes == ()


def test_a_decommission_that_retires_the_only_broker_of_a_rack_round_trips_through_kafkas_json():
    # Found by hypothesis with a random seed: the import check counted the retired broker's rack as available.
    layout = ClusterLayout(tuple(Broker(b, "a") for b in range(6)) + (Broker(6, "b"),),
                           (PartitionInfo("t0", 0, (0, 1), 0, 0), *(PartitionInfo("t1", n, (0,), 0, 0) for n in range(4))))
    request = PlanRequest.decommission([0, 1, 6])
    p = plan(layout, request, compare_with_generate=False)
    assert parse_reassignment(layout, export_reassignment(p)) == {c.key: c.after for c in p.changes}
    # Where the rack-b broker keeps replicas, a plan that puts both of t0-0's replicas in rack a is refused.
    kept = ClusterLayout(layout.brokers, (*layout.partitions, PartitionInfo("t2", 0, (6,), 6, 0)))
    with pytest.raises(PlanError, match="1 rack although 2 racks are available"):
        parse_reassignment(kept, '{"version": 1, "partitions": [{"topic": "t0", "partition": 0, "replicas": [2, 3]}]}')
