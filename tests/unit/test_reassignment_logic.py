"""The pure parts of reassignment jobs and the balance watch: batching, throttles, rate, findings."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from brokers_app.balance import findings
from brokers_app.reassignment_moves import DONE, MOVING, PENDING, Move, next_batch, rate_and_eta, throttle_configs
from console.snapshots.model import BrokerState, PartitionState, Snapshot, TopicState


def m(p: int, before: tuple[int, ...], after: tuple[int, ...], size: int = 100) -> Move:
    return Move("t", p, before, after, size)


def test_a_batch_stops_at_the_limit_per_broker_counting_moves_in_flight() -> None:
    moves = [m(i, (1, 2), (3, 2)) for i in range(8)]  # each loads brokers 1 (gives up) and 3 (receives)
    states = [MOVING, MOVING, *([PENDING] * 6)]
    assert next_batch(moves, states, 5) == [2, 3, 4]
    assert next_batch(moves, [PENDING] * 8, 5) == [0, 1, 2, 3, 4]


def test_a_batch_skips_a_move_whose_broker_is_full_but_takes_later_ones_on_other_brokers() -> None:
    moves = [m(0, (1,), (2,)), m(1, (1,), (3,)), m(2, (4,), (5,))]
    assert next_batch(moves, [PENDING] * 3, 1) == [0, 2]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.lists(st.integers(1, 6), min_size=1, max_size=3, unique=True),
                          st.lists(st.integers(1, 6), min_size=1, max_size=3, unique=True),
                          st.sampled_from([PENDING, PENDING, MOVING, DONE])), max_size=30),
       st.integers(1, 5))
def test_no_broker_ever_exceeds_the_limit_through_a_batch(rows, limit) -> None:
    moves = [m(i, tuple(b), tuple(a)) for i, (b, a, _) in enumerate(rows)]
    states = [s for _, _, s in rows]
    chosen = next_batch(moves, states, limit)
    load: dict[int, int] = {}
    for i, (mv, s) in enumerate(zip(moves, states, strict=True)):
        if s == MOVING or i in chosen:
            for b in mv.brokers:
                load[b] = load.get(b, 0) + 1
    before: dict[int, int] = {}
    for mv, s in zip(moves, states, strict=True):
        if s == MOVING:
            for b in mv.brokers:
                before[b] = before.get(b, 0) + 1
    for b, n in load.items():
        assert n <= max(limit, before.get(b, 0)), (b, n)
    assert all(states[i] == PENDING for i in chosen)


def test_throttles_cover_old_and_new_replicas_of_moving_partitions_only() -> None:
    brokers, topics = throttle_configs([Move("a", 0, (1, 2), (3, 2), 10), Move("a", 1, (2, 1), (2, 1), 10), Move("b", 4, (1,), (4,), 1)], 1000)
    assert brokers == {b: {"leader.replication.throttled.rate": "1000", "follower.replication.throttled.rate": "1000"} for b in (1, 2, 3, 4)}
    assert topics == {
        "a": {"leader.replication.throttled.replicas": "0:1,0:2,0:3", "follower.replication.throttled.replicas": "0:1,0:2,0:3"},
        "b": {"leader.replication.throttled.replicas": "4:1,4:4", "follower.replication.throttled.replicas": "4:1,4:4"},
    }


def test_rate_and_eta_from_the_samples_window() -> None:
    assert rate_and_eta([(0.0, 0)], 100) == (None, None)
    assert rate_and_eta([(0.0, 0), (5.0, 500), (10.0, 1000)], 3000) == (100.0, 30.0)
    assert rate_and_eta([(0.0, 0), (10.0, 0)], 3000) == (0.0, None)
    assert rate_and_eta([(0.0, 0), (10.0, 1000)], 0) == (100.0, 0.0)


def snap(layout: dict[int, list[tuple[list[int], int]]], brokers: tuple[int, ...] = (1, 2, 3)) -> Snapshot:
    """layout: topic index -> partitions as (replicas, leader)."""
    topics = {}
    for t, parts in layout.items():
        topics[f"t{t}"] = TopicState(f"t{t}", False, [PartitionState(n, leader, r, r, [], 0, 0) for n, (r, leader) in enumerate(parts)])
    return Snapshot(cluster="c", taken_at=time.time(), reachable=True,
                    brokers={b: BrokerState(b, "h", 9000 + b, None, True) for b in brokers}, topics=topics)


def test_a_new_empty_broker_is_found_and_the_add_brokers_plan_offered() -> None:
    s = snap({0: [([1, 2], 1), ([2, 3], 2), ([3, 1], 3), ([1, 2], 1), ([2, 3], 2), ([3, 1], 3)]}, brokers=(1, 2, 3, 4))
    found = findings(s, 0.2)
    assert [(f.problem, f.brokers, f.offer) for f in found] == [("new_broker", (4,), {"kind": "add_brokers", "brokers": [4]})]
    assert found[0].offer_query() == "kind=add_brokers&brokers=4"


def test_replica_and_leader_skew_and_preferred_leader_imbalance_are_found() -> None:
    # Broker 1 is in every replica set and first in all; broker 3 leads where broker 1 should.
    s = snap({0: [([1, 2], 3 if n < 3 else 1) for n in range(6)] + [([1, 3], 1)] * 2 + [([2, 3], 2)]})
    problems = {f.problem: f for f in findings(s, 0.2)}
    assert set(problems) == {"replica_skew", "leader_skew", "preferred_leaders"}
    assert problems["replica_skew"].brokers == (1, 3) and problems["replica_skew"].offer == {"kind": "rebalance"}
    assert problems["preferred_leaders"].offer == {"election": "preferred"}


def test_a_balanced_cluster_raises_nothing() -> None:
    s = snap({0: [([1, 2], 1), ([2, 3], 2), ([3, 1], 3)] * 4})
    assert findings(s, 0.2) == []


def test_a_refusal_names_the_first_refused_partition_and_kafkas_words() -> None:
    from brokers_app.reassignment_moves import refusal

    assert refusal({("a", 1): None, ("a", 0): None}) is None
    assert refusal({("b", 2): "Replica assignment is invalid", ("a", 5): "Broker 9 is not registered", ("a", 0): None}) \
        == "a-5 (Broker 9 is not registered)"
