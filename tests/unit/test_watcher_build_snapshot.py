"""console.watcher.build.build_snapshot: a snapshot from Kafka's answers plus what was known before."""

from __future__ import annotations

import pytest

from console.gateway.types import Broker, ClusterMetadata, Partition, Quorum, QuorumReplica, Topic
from console.snapshots.model import QuorumMember, QuorumState
from console.watcher.build import build_snapshot

from ._build import broker, part, snapshot, topic

NOW = 2_000_000_000.0


def kbroker(bid: int, rack: str | None = None) -> Broker:
    return Broker(id=bid, host=f"node-{bid}", port=19090 + bid, rack=rack)


def kpart(name: str, n: int, leader: int, replicas: tuple[int, ...] = (1, 2, 3), isr: tuple[int, ...] | None = None) -> Partition:
    return Partition(topic=name, partition=n, leader=leader, replicas=replicas, isr=replicas if isr is None else isr)


def ktopic(name: str, *parts: Partition, internal: bool = False) -> Topic:
    return Topic(name=name, internal=internal, partitions=parts or (kpart(name, 0, 1),))


def metadata(*topics: Topic, brokers: tuple[int, ...] = (1, 2, 3)) -> ClusterMetadata:
    return ClusterMetadata(cluster_id="abc", brokers=tuple(kbroker(b) for b in brokers), topics=topics)


def replica(rid: int, leo: int, fetch: int = 1000, caught_up: int = 900) -> QuorumReplica:
    return QuorumReplica(replica_id=rid, log_end_offset=leo, last_fetch_timestamp=fetch, last_caught_up_timestamp=caught_up)


def quorum(leader: int = 2, voters: tuple[QuorumReplica, ...] | None = None,
           observers: tuple[QuorumReplica, ...] = ()) -> Quorum:
    if voters is None:
        voters = (replica(1, 100), replica(2, 100), replica(3, 100))
    return Quorum(leader_id=leader, leader_epoch=7, high_watermark=100, voters=voters, observers=observers)


def build(md: ClusterMetadata, previous=None, q: Quorum | None = None, quorum_error: str | None = None,
          racks: dict[int, str | None] | None = None, min_isr: dict[str, int] | None = None, cluster: str = "main"):
    return build_snapshot(cluster, previous, md, q, quorum_error, racks or {}, min_isr or {}, NOW)


# Basics -----------------------------------------------------------------------------------------


def test_new_snapshot_is_reachable_and_stamped_with_now():
    snap = build(metadata(ktopic("orders")), cluster="east")
    assert snap.cluster == "east"
    assert snap.reachable is True
    assert snap.error is None
    assert snap.taken_at == NOW and snap.checked_at == NOW
    assert snap.cluster_id == "abc"
    assert snap.version == 0
    assert snap.offsets_at is None


def test_version_is_carried_from_the_previous_snapshot():
    previous = snapshot(version=41)
    assert build(metadata(), previous).version == 41


def test_live_brokers_are_up_with_their_address():
    snap = build(metadata(brokers=(1, 2)))
    assert set(snap.brokers) == {1, 2}
    b = snap.brokers[2]
    assert (b.id, b.host, b.port, b.up) == (2, "node-2", 19092, True)


def test_rack_comes_from_the_racks_read_separately_over_the_metadata_rack():
    md = ClusterMetadata(cluster_id="abc", brokers=(kbroker(1, rack="meta"), kbroker(2, rack="meta")), topics=())
    snap = build(md, racks={1: "described"})
    assert snap.brokers[1].rack == "described"
    assert snap.brokers[2].rack == "meta"


# Brokers carried forward ------------------------------------------------------------------------


def test_broker_seen_before_but_not_live_now_is_kept_as_down():
    previous = snapshot(brokers=[broker(1), broker(2), broker(3, rack="r3")])
    snap = build(metadata(brokers=(1, 2)), previous)
    assert set(snap.brokers) == {1, 2, 3}
    gone = snap.brokers[3]
    assert gone.up is False
    assert (gone.host, gone.port, gone.rack) == ("kafka-3.example", 9093, "r3")


def test_broker_down_before_and_live_now_is_up_with_its_new_address():
    previous = snapshot(brokers=[broker(1), broker(2, up=False)])
    snap = build(metadata(brokers=(1, 2)), previous)
    assert snap.brokers[2].up is True
    assert snap.brokers[2].host == "node-2"


def test_broker_named_in_replicas_but_never_seen_is_added_as_down():
    md = metadata(ktopic("orders", kpart("orders", 0, leader=1, replicas=(1, 5))), brokers=(1,))
    snap = build(md)
    assert snap.brokers[5].up is False
    assert (snap.brokers[5].host, snap.brokers[5].port, snap.brokers[5].rack) == ("?", 0, None)


def test_a_broker_named_only_by_a_topic_carried_over_stays_listed_and_only_changed_topics_are_looked_through():
    """A cycle looks for never-seen brokers only in the topics it builds anew (all of them was
    900,000 replicas a cycle at 300,000 partitions): a topic carried over named only brokers the
    previous snapshot already lists, and they stay listed."""
    orders = ktopic("orders", kpart("orders", 0, leader=1, replicas=(1, 5)))
    first = build(metadata(orders, ktopic("audit"), brokers=(1, 2, 3)))
    assert first.brokers[5].up is False and first.brokers[5].host == "?"

    class Untouchable(tuple):  # a carried-over topic's partitions must not be looked through
        def __iter__(self):
            raise AssertionError("an unchanged topic's partitions were read")

    carried = Topic(name="orders", internal=False, partitions=Untouchable(orders.partitions))
    audit = ktopic("audit", kpart("audit", 0, leader=2, replicas=(2, 7)))  # changed: now on a broker never seen
    snap = build_snapshot("main", first, metadata(carried, audit, brokers=(1, 2, 3)), None, None, {}, {}, NOW,
                          unchanged=frozenset({"orders"}))
    assert snap.topics["orders"] is first.topics["orders"]
    assert snap.brokers[5].up is False and snap.brokers[5].host == "?"  # still listed
    assert snap.brokers[7].up is False and snap.brokers[7].host == "?"  # found in the changed topic


def test_of_a_changed_topic_only_the_partitions_built_anew_are_looked_through_for_never_seen_brokers():
    """Of a topic that changed, a partition whose metadata is what the last build read keeps its
    state and is not looked through (its brokers are listed already); one built anew is."""
    reads: list[int] = []

    class Replicas(tuple):  # type: ignore[type-arg]  # (counts who goes through a partition's replicas)
        number = -1

        def __iter__(self):  # type: ignore[no-untyped-def]
            reads.append(self.number)
            return super().__iter__()

    def replicas(number: int, *ids: int) -> tuple[int, ...]:
        out = Replicas(ids)
        out.number = number
        return out

    kept = Partition(topic="orders", partition=0, leader=1, replicas=replicas(0, 1, 5), isr=(1, 5))
    orders = Topic(name="orders", internal=False, partitions=(kept, Partition(topic="orders", partition=1, leader=1,
                                                                                replicas=replicas(1, 1, 2, 3), isr=(1, 2, 3))))
    first = build(metadata(orders, brokers=(1, 2, 3)))
    assert {0, 1} <= set(reads)
    reads.clear()
    moved = Partition(topic="orders", partition=1, leader=2, replicas=replicas(1, 2, 8), isr=(2, 8))  # now on a broker never seen
    changed = Topic(name="orders", internal=False, partitions=(kept, moved))
    fresh: dict[str, list[int]] = {}
    snap = build_snapshot("main", first, metadata(changed, brokers=(1, 2, 3)), None, None, {}, {}, NOW,
                          built_from={"orders": orders}, fresh=fresh)
    assert fresh == {"orders": [1]} and snap.topics["orders"].partitions[0] is first.topics["orders"].partitions[0]
    assert snap.brokers[5].host == "?" and snap.brokers[8].host == "?" and not snap.brokers[8].up
    assert set(reads) == {1}  # only the partition built anew (the kept one's replicas are compared, not gone through)


@pytest.mark.parametrize("table", [False, True], ids=["partitions", "partition table"])
def test_when_a_broker_leaves_or_comes_back_only_the_partitions_with_a_replica_there_are_built_anew(table: bool) -> None:
    """Their offline replicas change; a partition with no replica on a broker that `moved` keeps
    its state object (all of them were built anew: at 300,000 partitions on 100 brokers a broker's
    return rebuilt a third of the topics whole, for the tenth of their partitions it hosts)."""
    from console.gateway.types import PartitionTable

    rows = [(0, 1, (1, 2), (1, 2), None), (1, 2, (2, 3), (2, 3), None), (2, 3, (3, 4), (3, 4), None)]
    parts = PartitionTable.of("orders", rows) if table else tuple(kpart("orders", n, leader, replicas) for n, leader, replicas, _isr, _e in rows)
    orders = Topic(name="orders", internal=False, partitions=parts)
    first = build(metadata(orders, brokers=(1, 2, 3, 4)))
    # Broker 4 leaves; the metadata is as before (its replica is still named: offline now).
    fresh: dict[str, list[int]] = {}
    gone = build_snapshot("main", first, metadata(orders, brokers=(1, 2, 3)), None, None, {}, {}, NOW,
                          built_from={"orders": orders}, fresh=fresh, moved=frozenset({4}))
    before, after = first.topics["orders"].partitions, gone.topics["orders"].partitions
    assert fresh == {"orders": [2]}
    assert after[0] is before[0] and after[1] is before[1] and after[2] is not before[2]
    assert [p.offline_replicas for p in after] == [[], [], [4]]
    # Back: the same partition again.
    fresh = {}
    back = build_snapshot("main", gone, metadata(orders, brokers=(1, 2, 3, 4)), None, None, {}, {}, NOW,
                          built_from={"orders": orders}, fresh=fresh, moved=frozenset({4}))
    assert fresh == {"orders": [2]} and back.topics["orders"].partitions[0] is after[0]
    assert [p.offline_replicas for p in back.topics["orders"].partitions] == [[], [], []]


def test_quorum_voter_never_seen_as_a_broker_is_not_listed_as_a_dead_broker():
    # A dedicated controller is a voter but never a broker: it must not show up as a broker that is down.
    snap = build(metadata(brokers=(1, 2)), q=quorum(leader=1, voters=(replica(1, 10), replica(4, 10))))
    assert 4 not in snap.brokers
    assert [v.id for v in snap.quorum.voters] == [1, 4]


def test_quorum_observer_is_not_added_as_a_broker():
    snap = build(metadata(brokers=(1,)), q=quorum(leader=1, voters=(replica(1, 10),), observers=(replica(8, 10),)))
    assert 8 not in snap.brokers


# Partitions -------------------------------------------------------------------------------------


def test_partitions_copy_leader_replicas_and_isr_as_lists():
    md = metadata(ktopic("orders", kpart("orders", 0, leader=2, replicas=(2, 3, 1), isr=(2, 3))))
    p = build(md).topics["orders"].partitions[0]
    assert (p.partition, p.leader, p.replicas, p.isr) == (0, 2, [2, 3, 1], [2, 3])
    assert isinstance(p.replicas, list) and isinstance(p.isr, list)


def test_offline_replicas_are_the_replicas_on_brokers_that_are_not_live():
    md = metadata(ktopic("orders", kpart("orders", 0, leader=1, replicas=(1, 2, 3), isr=(1,))), brokers=(1, 3))
    assert build(md).topics["orders"].partitions[0].offline_replicas == [2]


def test_offline_replicas_is_empty_when_every_replica_is_live():
    assert build(metadata(ktopic("orders"))).topics["orders"].partitions[0].offline_replicas == []


def test_topic_keeps_its_internal_flag():
    snap = build(metadata(ktopic("__consumer_offsets", internal=True), ktopic("orders")))
    assert snap.topics["__consumer_offsets"].internal is True
    assert snap.topics["orders"].internal is False


def test_topic_gone_from_metadata_is_gone_from_the_snapshot():
    previous = snapshot(topic("old"), topic("orders"))
    assert set(build(metadata(ktopic("orders")), previous).topics) == {"orders"}


# Carried values ---------------------------------------------------------------------------------


def test_offsets_are_carried_from_the_previous_snapshot_per_partition():
    previous = snapshot(topic("orders", part(0, start_offset=5, end_offset=50), part(1, start_offset=7, end_offset=70)),
                        offsets_at=1234.0)
    md = metadata(ktopic("orders", kpart("orders", 0, 1), kpart("orders", 1, 2), kpart("orders", 2, 3)))
    snap = build(md, previous)
    offsets = [(p.start_offset, p.end_offset) for p in snap.topics["orders"].partitions]
    assert offsets == [(5, 50), (7, 70), (None, None)]
    assert snap.offsets_at == 1234.0


def test_offsets_of_a_new_topic_start_unknown():
    previous = snapshot(topic("orders", part(0, start_offset=5, end_offset=50)))
    p = build(metadata(ktopic("payments")), previous).topics["payments"].partitions[0]
    assert (p.start_offset, p.end_offset) == (None, None)


def test_min_isr_read_this_cycle_is_used():
    previous = snapshot(topic("orders", min_isr=1))
    assert build(metadata(ktopic("orders")), previous, min_isr={"orders": 3}).topics["orders"].min_isr == 3


def test_min_isr_not_read_this_cycle_is_carried_from_the_previous_snapshot():
    previous = snapshot(topic("orders", min_isr=2))
    assert build(metadata(ktopic("orders")), previous).topics["orders"].min_isr == 2


def test_min_isr_of_a_topic_never_read_is_unknown():
    assert build(metadata(ktopic("orders"))).topics["orders"].min_isr is None


# Quorum and controller --------------------------------------------------------------------------


def test_controller_is_the_quorum_leader():
    assert build(metadata(), q=quorum(leader=3)).controller_id == 3


def test_quorum_is_copied_with_leader_epoch_and_high_watermark():
    snap = build(metadata(), q=quorum(leader=2))
    assert (snap.quorum.leader_id, snap.quorum.leader_epoch, snap.quorum.high_watermark) == (2, 7, 100)
    assert [v.id for v in snap.quorum.voters] == [1, 2, 3]


def test_quorum_lag_is_leader_log_end_offset_minus_member_log_end_offset():
    q = quorum(leader=2, voters=(replica(1, 90), replica(2, 100), replica(3, 100)), observers=(replica(4, 60),))
    snap = build(metadata(), q=q)
    assert {v.id: v.lag for v in snap.quorum.voters} == {1: 10, 2: 0, 3: 0}
    assert snap.quorum.observers[0].lag == 40


def test_quorum_member_ahead_of_the_leader_reports_zero_lag():
    q = quorum(leader=2, voters=(replica(1, 130), replica(2, 100)))
    assert build(metadata(), q=q).quorum.voters[0].lag == 0


def test_quorum_member_with_unknown_log_end_offset_has_unknown_lag():
    q = quorum(leader=2, voters=(replica(1, -1), replica(2, 100)))
    assert build(metadata(), q=q).quorum.voters[0].lag is None


def test_quorum_lag_is_unknown_when_the_leader_is_not_among_the_voters():
    q = quorum(leader=9, voters=(replica(1, 50), replica(2, 100)))
    assert [v.lag for v in build(metadata(), q=q).quorum.voters] == [None, None]


def test_quorum_members_keep_their_fetch_times():
    q = quorum(leader=1, voters=(replica(1, 10, fetch=1111, caught_up=2222),))
    assert build(metadata(), q=q).quorum.voters[0] == QuorumMember(1, 10, 0, 1111, 2222)


def test_quorum_not_read_this_cycle_is_carried_from_the_previous_snapshot_with_its_controller():
    old_quorum = QuorumState(leader_id=3, leader_epoch=2, high_watermark=5, voters=[QuorumMember(3, 5, 0, 1, 1)], observers=[])
    previous = snapshot(quorum=old_quorum, controller_id=3)
    snap = build(metadata(), previous, q=None, quorum_error="describe quorum timed out")
    assert snap.quorum == old_quorum
    assert snap.controller_id == 3
    assert snap.quorum_error == "describe quorum timed out"


def test_without_quorum_now_or_before_the_controller_is_unknown():
    snap = build(metadata(), None, q=None, quorum_error="unsupported")
    assert snap.quorum is None
    assert snap.controller_id is None
    assert snap.quorum_error == "unsupported"


@pytest.mark.parametrize("previous", [None, snapshot()])
def test_quorum_error_is_none_when_the_quorum_was_read(previous):
    assert build(metadata(), previous, q=quorum()).quorum_error is None


# Memory: one list per replica set --------------------------------------------------------------


def test_partitions_on_the_same_brokers_share_one_list_of_them_and_equal_values_stay_equal():
    """At 300,000 partitions a list per partition's replicas was 29 MB; a cluster has a few
    thousand replica sets. Partitions on the same brokers (in the same order) hold one list, also
    across topics and snapshots; a different order or set is a list of its own."""
    md = metadata(
        ktopic("a", kpart("a", 0, 1, (1, 2, 3)), kpart("a", 1, 2, (2, 3, 1)), kpart("a", 2, 1, tuple([1, 2, 3]))),
        ktopic("b", kpart("b", 0, 1, (1, 2, 3), isr=(1, 2)), kpart("b", 1, 1, (1, 2, 3), isr=tuple([1, 2]))))
    snap = build(md)
    a, b = snap.topics["a"].partitions, snap.topics["b"].partitions
    assert a[0].replicas == [1, 2, 3] and a[1].replicas == [2, 3, 1] and b[0].isr == [1, 2]
    assert a[0].replicas is a[2].replicas is b[0].replicas is b[1].replicas
    assert a[0].isr is a[0].replicas  # (in sync: its ISR is its replicas)
    assert a[1].replicas is not a[0].replicas
    assert b[0].isr is b[1].isr and b[0].isr is not b[0].replicas
    moved = build(metadata(ktopic("c", kpart("c", 0, 3, (1, 2, 3)))), previous=snap)
    assert moved.topics["c"].partitions[0].replicas is a[0].replicas
    assert snap.to_json().count('"replicas":[1,2,3]') == 4  # (serialised as ever)
