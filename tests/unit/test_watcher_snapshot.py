"""console.snapshots.model: derived views, serialisation and the change key."""

from __future__ import annotations

from copy import deepcopy
from dataclasses import replace

import pytest

from console.snapshots.model import PartitionState, QuorumMember, QuorumState, Snapshot, TopicState
from console.snapshots.parts import topic_of_part

from ._build import broker, part, snapshot, topic

# PartitionState / TopicState ---------------------------------------------------------------------


def test_partition_without_leader_is_offline():
    assert part(leader=-1).offline
    assert not part(leader=0).offline


def test_partition_with_fewer_isr_than_replicas_is_under_replicated():
    assert part(isr=[1, 2]).under_replicated
    assert not part(isr=[1, 2, 3]).under_replicated


def test_partition_is_under_min_isr_only_when_min_isr_is_known_and_isr_is_smaller():
    p = part(isr=[1])
    assert p.under_min_isr(2)
    assert not p.under_min_isr(1)
    assert not p.under_min_isr(None)


def test_preferred_leader_is_the_first_replica_or_none_without_replicas():
    assert part(replicas=(3, 1, 2)).preferred_leader == 3
    assert part(replicas=()).preferred_leader is None


def test_a_partition_with_new_offsets_is_what_replace_makes_every_other_field_shared():
    """with_offsets (the metadata cycle's copy of a partition a sampling pass changed) is
    dataclasses.replace: a field added to PartitionState and not copied there fails here."""
    from dataclasses import fields, replace

    values = {f.name: object() for f in fields(PartitionState)}
    p = PartitionState(**values)  # type: ignore[arg-type]
    new = {"start_offset": 3, "end_offset": 9, "size": 70, "replica_sizes": {"1": 70}}
    copy = p.with_offsets(new["start_offset"], new["end_offset"], new["size"], new["replica_sizes"])
    assert copy == replace(p, **new) and copy is not p
    for f in fields(PartitionState):
        assert getattr(copy, f.name) is (new[f.name] if f.name in new else values[f.name]), f.name


def test_replication_factor_is_the_largest_replica_count_and_zero_without_partitions():
    t = topic("t", part(0, replicas=(1, 2)), part(1, replicas=(1, 2, 3)))
    assert t.replication_factor == 3
    assert TopicState(name="empty", internal=False, partitions=[]).replication_factor == 0


def test_topic_finds_a_partition_by_number_or_returns_none():
    t = topic("t", part(0), part(5))
    assert t.partition(5).partition == 5
    assert t.partition(1) is None


# counts() ---------------------------------------------------------------------------------------


def test_counts_of_a_healthy_cluster_show_no_problems():
    assert snapshot().counts() == {
        "brokers": 3,
        "brokers_up": 3,
        "brokers_unreachable": 0,
        "topics": 1,
        "partitions": 3,
        "under_replicated": 0,
        "offline": 0,
        "under_min_isr": 0,
    }


def test_counts_tally_down_brokers_under_replicated_offline_and_under_min_isr_partitions():
    snap = snapshot(
        topic(
            "orders",
            part(0, leader=1, isr=[1, 2, 3]),
            part(1, leader=1, isr=[1, 2]),  # under-replicated only
            part(2, leader=1, isr=[1]),  # under-replicated and under min ISR
            part(3, leader=-1, isr=[3]),  # offline, under-replicated and under min ISR
            min_isr=2,
        ),
        topic("logs", part(0, replicas=(1,), leader=1), min_isr=1),
        brokers=[broker(1), broker(2, up=False), broker(3, up=False)],
    )
    counts = snap.counts()
    assert counts["brokers"] == 3
    assert counts["brokers_up"] == 1
    assert counts["topics"] == 2
    assert counts["partitions"] == 5
    assert counts["under_replicated"] == 3
    assert counts["offline"] == 1
    assert counts["under_min_isr"] == 2


def test_counts_ignore_min_isr_for_topics_whose_min_isr_is_unknown():
    snap = snapshot(topic("orders", part(0, isr=[1]), min_isr=None))
    assert snap.counts()["under_min_isr"] == 0
    assert snap.counts()["under_replicated"] == 1


# broker_rows() ----------------------------------------------------------------------------------


def rows_by_id(snap: Snapshot) -> dict[int, dict]:
    return {r["id"]: r for r in snap.broker_rows()}


def test_broker_rows_are_sorted_by_id_and_carry_address_rack_and_state():
    snap = snapshot(brokers=[broker(3, rack="c"), broker(1, rack="a"), broker(2, up=False)])
    rows = snap.broker_rows()
    assert [r["id"] for r in rows] == [1, 2, 3]
    assert rows[0]["host"] == "kafka-1.example" and rows[0]["port"] == 9091 and rows[0]["rack"] == "a"
    assert [r["up"] for r in rows] == [True, False, True]


def test_broker_rows_flag_only_the_controller():
    rows = rows_by_id(snapshot(controller_id=2))
    assert [rows[b]["controller"] for b in (1, 2, 3)] == [False, True, False]


def test_broker_rows_flag_no_controller_when_it_is_unknown():
    assert not any(r["controller"] for r in snapshot(controller_id=None).broker_rows())


def test_broker_rows_count_partitions_led_and_replicas_hosted():
    snap = snapshot(
        topic("a", part(0, leader=1, replicas=(1, 2)), part(1, leader=1, replicas=(1, 3)), part(2, leader=2, replicas=(2, 3))),
        topic("b", part(0, leader=3, replicas=(3,))),
    )
    rows = rows_by_id(snap)
    assert {b: rows[b]["leader_count"] for b in rows} == {1: 2, 2: 1, 3: 1}
    assert {b: rows[b]["replica_count"] for b in rows} == {1: 2, 2: 2, 3: 3}


def test_broker_rows_count_under_replicated_partitions_against_their_leader_only():
    snap = snapshot(
        topic(
            "a",
            part(0, leader=1, replicas=(1, 2, 3), isr=[1, 3]),
            part(1, leader=1, replicas=(1, 2, 3), isr=[1]),
            part(2, leader=2, replicas=(2, 3, 1), isr=[2, 3, 1]),
        )
    )
    rows = rows_by_id(snap)
    assert {b: rows[b]["under_replicated"] for b in rows} == {1: 2, 2: 0, 3: 0}


def test_broker_rows_count_offline_partitions_as_hosted_but_led_by_nobody():
    snap = snapshot(topic("a", part(0, leader=-1, replicas=(1, 2), isr=[1])))
    rows = rows_by_id(snap)
    assert sum(r["leader_count"] for r in rows.values()) == 0
    assert sum(r["under_replicated"] for r in rows.values()) == 0
    assert rows[1]["replica_count"] == 1 and rows[2]["replica_count"] == 1


def test_broker_rows_ignore_replicas_on_unknown_brokers():
    snap = snapshot(topic("a", part(0, leader=7, replicas=(7, 1))))
    rows = rows_by_id(snap)
    assert set(rows) == {1, 2, 3}
    assert rows[1]["replica_count"] == 1


# at_risk() --------------------------------------------------------------------------------------


def at_risk_names(snap: Snapshot, broker_id: int) -> dict[str, list[tuple[str, int]]]:
    risk = snap.at_risk(broker_id)
    return {k: [(r["topic"], r["partition"]) for r in v] for k, v in risk.items()}


def test_partition_whose_only_isr_member_is_the_broker_would_go_offline():
    snap = snapshot(topic("orders", part(0, leader=2, isr=[2]), min_isr=2))
    assert at_risk_names(snap, 2) == {"offline": [("orders", 0)], "under_min_isr": []}


def test_at_risk_row_describes_the_partition_and_what_would_remain():
    snap = snapshot(topic("orders", part(4, leader=1, replicas=(1, 2, 3), isr=[1, 2]), min_isr=2))
    row = snap.at_risk(2)["under_min_isr"][0]
    assert row == {
        "topic": "orders",
        "partition": 4,
        "leader": 1,
        "replicas": [1, 2, 3],
        "isr": [1, 2],
        "remaining_isr": [1],
        "min_isr": 2,
    }


def test_partition_left_below_min_isr_by_the_broker_is_at_risk_of_under_min_isr():
    snap = snapshot(topic("orders", part(0, leader=1, isr=[1, 2]), min_isr=2))
    assert at_risk_names(snap, 1) == {"offline": [], "under_min_isr": [("orders", 0)]}


def test_partition_still_at_min_isr_without_the_broker_is_not_at_risk():
    snap = snapshot(topic("orders", part(0, leader=1, isr=[1, 2, 3]), min_isr=2))
    assert at_risk_names(snap, 1) == {"offline": [], "under_min_isr": []}


def test_partition_with_unknown_min_isr_is_only_at_risk_of_going_offline():
    snap = snapshot(topic("orders", part(0, leader=1, isr=[1, 2]), part(1, leader=1, isr=[1]), min_isr=None))
    assert at_risk_names(snap, 1) == {"offline": [("orders", 1)], "under_min_isr": []}


def test_partitions_not_hosted_on_the_broker_are_not_at_risk():
    snap = snapshot(topic("orders", part(0, leader=1, replicas=(1, 2), isr=[1]), min_isr=2))
    assert at_risk_names(snap, 3) == {"offline": [], "under_min_isr": []}


def test_partitions_already_offline_are_not_at_risk():
    snap = snapshot(topic("orders", part(0, leader=-1, isr=[2]), min_isr=2))
    assert at_risk_names(snap, 2) == {"offline": [], "under_min_isr": []}


def test_partitions_already_under_min_isr_are_not_listed_again():
    snap = snapshot(topic("orders", part(0, leader=1, isr=[1, 2]), min_isr=3))
    assert at_risk_names(snap, 1) == {"offline": [], "under_min_isr": []}


def test_out_of_sync_replica_dying_puts_nothing_at_risk():
    snap = snapshot(topic("orders", part(0, leader=1, isr=[1, 2]), min_isr=2))
    assert at_risk_names(snap, 3) == {"offline": [], "under_min_isr": []}


def test_at_risk_lists_topics_in_name_order():
    snap = snapshot(topic("zeta", part(0, leader=1, isr=[1])), topic("alpha", part(0, leader=1, isr=[1])))
    assert at_risk_names(snap, 1)["offline"] == [("alpha", 0), ("zeta", 0)]


# Serialisation ----------------------------------------------------------------------------------


def full_snapshot() -> Snapshot:
    return snapshot(
        topic("orders", part(0, leader=1, start_offset=3, end_offset=90), part(1, leader=-1, isr=[], offline_replicas=[2]),
              min_isr=2),
        topic("__consumer_offsets", part(0), internal=True),
        brokers=[broker(1, rack="r1"), broker(2, up=False), broker(3)],
        version=12,
        error=None,
        quorum=QuorumState(
            leader_id=1,
            leader_epoch=4,
            high_watermark=500,
            voters=[QuorumMember(1, 500, 0, 1000, 1000), QuorumMember(2, 480, 20, 900, 800)],
            observers=[QuorumMember(3, -1, None, -1, -1)],
        ),
        quorum_error="partial",
        offsets_at=1234.5,
    )


def test_snapshot_survives_a_json_round_trip_unchanged():
    snap = full_snapshot()
    back = Snapshot.from_json(snap.to_json())
    assert back == snap
    assert set(back.brokers) == {1, 2, 3}  # integer keys, not JSON's strings
    assert isinstance(back.topics["orders"].partitions[0], PartitionState)


def test_snapshot_without_quorum_or_topics_survives_a_json_round_trip():
    snap = Snapshot(cluster="main", reachable=False, error="refused", checked_at=5.0)
    assert Snapshot.from_json(snap.to_json()) == snap


def test_from_dict_fills_defaults_for_missing_fields():
    snap = Snapshot.from_dict({"cluster": "main"})
    assert snap == Snapshot(cluster="main")


def test_to_json_is_compact():
    assert ", " not in snapshot().to_json() and ": " not in snapshot().to_json()


# content_key() ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("field", "value"), [("version", 99), ("taken_at", 1.0), ("checked_at", 2.0), ("offsets_at", 3.0),
                                             ("quorum_error", "changed"), ("groups_at", 4.0)])
def test_content_key_ignores_version_and_timestamps(field, value):
    snap = full_snapshot()
    other = deepcopy(snap)
    setattr(other, field, value)
    assert other.content_key() == snap.content_key()


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda s: setattr(s, "reachable", False), id="reachability"),
        pytest.param(lambda s: setattr(s, "error", "boom"), id="error"),
        pytest.param(lambda s: setattr(s, "controller_id", 3), id="controller"),
        pytest.param(lambda s: setattr(s.brokers[3], "up", False), id="broker-state"),
        pytest.param(lambda s: setattr(s.topics["orders"].partitions[0], "leader", 3), id="leader"),
        pytest.param(lambda s: setattr(s.topics["orders"].partitions[0], "isr", [1]), id="isr"),
        pytest.param(lambda s: setattr(s.topics["orders"].partitions[0], "end_offset", 91), id="end-offset"),
        pytest.param(lambda s: setattr(s.topics["orders"], "min_isr", 1), id="min-isr"),
        pytest.param(lambda s: s.topics.pop("__consumer_offsets"), id="topic-deleted"),
    ],
)
def test_content_key_changes_when_anything_else_changes(change):
    snap = full_snapshot()
    other = deepcopy(snap)
    change(other)
    assert other.content_key() != snap.content_key()


def test_content_key_does_not_depend_on_topic_insertion_order():
    snap = full_snapshot()
    other = deepcopy(snap)
    other.topics = dict(reversed(list(other.topics.items())))
    assert other.content_key() == snap.content_key()


# live_broker_ids() ------------------------------------------------------------------------------


def test_live_broker_ids_are_the_brokers_that_are_up():
    assert snapshot(brokers=[broker(1), broker(2, up=False), broker(5)]).live_broker_ids() == {1, 5}


def test_quorum_moves_with_the_stamp_not_the_content():
    # The quorum's high watermark moves every second: it must not make the big content look changed.
    snap = full_snapshot()
    other = deepcopy(snap)
    other.quorum.high_watermark += 1
    assert other.content_key() == snap.content_key()
    assert other.stamp_bytes() != snap.stamp_bytes()
    target = deepcopy(snap)
    target.apply_stamp(other.stamp_bytes())
    assert target.quorum == other.quorum and target.version == other.version


def test_stamp_round_trip_restores_version_timestamps_and_quorum():
    snap = full_snapshot()
    snap.version, snap.taken_at, snap.checked_at, snap.offsets_at, snap.groups_at = 7, 1.5, 2.5, 3.5, 4.5
    blank = Snapshot.from_json(snap.content_bytes())
    blank.apply_stamp(snap.stamp_bytes())
    assert blank == snap


def test_content_serialised_through_the_topic_cache_is_the_same_bytes_and_reserialises_only_new_topics():
    from dataclasses import replace

    from console.snapshots.part_cache import TopicBytes

    snap = snapshot(topic("orders", part(0, end_offset=5), part(1, leader=2)), topic("a\"<odd>/é", min_isr=2), topic("b"))
    cache = TopicBytes()
    assert snap.content_bytes(cache) == snap.content_bytes() and cache.serialised == 3
    assert snap.content_bytes(cache) == snap.content_bytes() and cache.serialised == 0
    # A changed topic is a new object: only it is serialised again; a gone one leaves the cache.
    later = replace(snap, topics={**snap.topics, "orders": replace(snap.topics["orders"], produce_rate=4.5)})
    del later.topics["b"]
    assert later.content_bytes(cache) == later.content_bytes() and cache.serialised == 1
    assert later.content_bytes() != snap.content_bytes()


def test_a_topics_stored_part_is_its_summary_then_its_json_compressed_and_earlier_forms_still_read():
    import orjson

    from console.snapshots.encoding import CONTENT_OPTIONS
    from console.snapshots.part_cache import TopicBytes
    from console.snapshots.parts import StoredTopic, part_json, topic_part
    from console.snapshots.tallies import TopicTally

    parts = [part(n, leader=1 + n % 3, replicas=(1 + n % 3, 1 + (n + 1) % 3), end_offset=10_000 + n * 7) for n in range(30)]
    t = topic("a\"<odd>/é", *parts, min_isr=2)
    t.produce_rate = 12.5
    plain = orjson.dumps(t, option=CONTENT_OPTIONS)
    stored = TopicBytes().each({t.name: t}, "t:")["t:" + t.name]
    assert stored[:1] == b"S" and len(stored) * 2 < len(plain), (len(stored), len(plain))
    assert part_json(stored) == plain
    read = topic_of_part(stored)
    # Its fields and tally from the summary; its partitions not parsed until asked for.
    assert type(read) is StoredTopic and "partitions" not in vars(read)
    assert (read.name, read.internal, read.min_isr, read.produce_rate) == (t.name, False, 2, 12.5)
    assert TopicTally.of(read) == TopicTally.of(t) and "partitions" not in vars(read)
    assert read == t and t == read and read == topic_of_part(plain) and "partitions" in vars(read)
    assert read.partitions == t.partitions and read.replication_factor == 2 and read.size == t.size
    assert read != topic(t.name, *parts[:29], min_isr=2) and topic(t.name, *parts[:29], min_isr=2) != read
    # Written as a TopicState is (a snapshot that holds it, as JSON), and copied by `replace` with its own tally.
    fresh = topic_of_part(stored)
    assert orjson.loads(Snapshot(cluster="c", topics={t.name: fresh}).to_json())["topics"][t.name] == orjson.loads(plain)
    assert Snapshot(cluster="c", topics={t.name: fresh}).content_bytes() == Snapshot(cluster="c", topics={t.name: t}).content_bytes()
    fewer = replace(fresh, partitions=parts[:3])
    assert fewer.stored_tally is None and TopicTally.of(fewer).partitions == 3
    # Parts stored by earlier versions: LZ4 without a summary, plain JSON.
    assert topic_of_part(topic_part(plain)) == t and type(topic_of_part(topic_part(plain))) is not StoredTopic
    assert part_json(plain) is plain and part_json(topic_part(plain)) == plain


def test_a_group_stored_by_an_earlier_version_loads_and_its_evaluation_round_trips():
    """Groups once stored their evaluation as a dict per partition ("lag"); a snapshot still in Redis
    from then loads (the field is dropped, the next sample fills the columns in)."""
    from console.snapshots.model import GroupState

    old = {"cluster": "main", "groups": {"g": {"group_id": "g", "state": "Stable", "protocol_type": "consumer",
                                                "group_type": "classic", "assignor": "range", "members": [],
                                                "offsets": {"t:0": 5}, "status": "OK",
                                                "lag": {"t:0": {"status": "OK", "time_lag": 0.0}}}}}
    g = Snapshot.from_dict(old).groups["g"]
    assert (g.offsets, g.status, g.lag_of()) == ({"t:0": 5}, "OK", {})
    snap = Snapshot(cluster="main", groups={"g": GroupState("g", "Stable", "consumer", "classic", "range", [], {"t:0": 5, "t:1": 7},
                                                            lag_keys=["t:0", "t:1"], lag_status=["OK", "WARN"],
                                                            lag_seconds=[0.0, None])})
    back = Snapshot.from_json(snap.to_json())
    assert back == snap
    assert back.groups["g"].lag_of() == {"t:0": {"status": "OK", "time_lag": 0.0}, "t:1": {"status": "WARN", "time_lag": None}}


@pytest.mark.parametrize("seed", range(12))
def test_a_changed_topic_reserialises_only_its_new_partition_objects_and_writes_what_orjson_writes(seed: int):
    """A changed topic's JSON copies the JSON of the partitions that are the same objects at the
    same places as in its last JSON, and serialises the others: bytes for bytes what orjson writes
    for the whole topic, over random changes (partitions replaced, added, removed, reordered; the
    topic's own fields; odd names)."""
    import random
    from dataclasses import replace

    import orjson

    from console.snapshots.encoding import CONTENT_OPTIONS, replica_sizes_of
    from console.snapshots.model import json_default
    from console.snapshots.part_cache import TopicBytes
    from console.snapshots.parts import part_json

    rng = random.Random(seed)

    def fresh(n: int) -> PartitionState:
        replicas = rng.sample(range(1, 9), 3)
        return replace(part(n, leader=replicas[0], replicas=tuple(replicas), isr=tuple(replicas[:rng.randint(1, 3)]),
                            end_offset=rng.randint(0, 10**12)),
                       replica_sizes=(replica_sizes_of if rng.random() < 0.5 else lambda k, v: dict(zip(k, v, strict=True)))(
                           tuple(str(r) for r in replicas), [rng.randint(0, 10**9) for _ in replicas]),
                       size=rng.choice([None, 5]))

    names = ["orders", "a\"<odd>/é", "x" * 200]
    topics = {name: TopicState(name=name, internal=False, partitions=[fresh(i) for i in range(rng.randint(0, 40))])
              for name in names}
    cache = TopicBytes()
    cache.each(topics, "t:")
    assert cache.serialised == 3
    for step in range(60):
        name = rng.choice(names)
        t = topics[name]
        parts = list(t.partitions)
        roll = rng.random()
        replaced = 0
        if roll < 0.5 and parts:
            for i in rng.sample(range(len(parts)), rng.randint(1, min(3, len(parts)))):
                parts[i] = fresh(parts[i].partition)
                replaced += 1
        elif roll < 0.65:
            parts.append(fresh(len(parts)))
            replaced = 1
        elif roll < 0.75 and parts:
            parts.pop(rng.randrange(len(parts)))
            replaced = -1  # (those after it moved: serialised again)
        elif roll < 0.85:
            rng.shuffle(parts)
            replaced = -1
        topics[name] = replace(t, partitions=parts, min_isr=rng.choice([None, 1, 2]),
                               produce_rate=rng.choice([None, 0.0, 12.5, 1e300]), internal=rng.random() < 0.1)
        out = cache.each(topics, "t:")
        for n, tt in topics.items():
            assert part_json(out["t:" + n]) == orjson.dumps(tt, default=json_default, option=CONTENT_OPTIONS), (seed, step, n)
        assert cache.serialised == 1
        if replaced >= 0:
            assert cache.partitions_serialised == replaced, (seed, step)
        assert topic_of_part(out["t:" + name]) == topics[name]


# A group's stored part ---------------------------------------------------------------------------


def test_a_groups_part_is_compressed_with_a_preset_dictionary_a_fifth_smaller_and_names_it():
    """A group's part is zlib with GROUP_DICTIONARY (a group's field names and common values): a
    group of 30 partitions takes at least a fifth less than without it, reads back to the same JSON,
    and names its dictionary, so a part made with one this version does not know is refused with a
    message, not misread; a part made without a dictionary still reads."""
    import zlib

    import orjson

    from console.snapshots.encoding import CONTENT_OPTIONS
    from console.snapshots.model import GroupState, MemberState
    from console.snapshots.parts import GROUP_DICTIONARY, group_part, part_json

    offsets = {f"payments.settled:{p}": 7_000_000 + 13 * p for p in range(30)}
    g = GroupState(group_id="settlement-workers", state="Stable", protocol_type="consumer", group_type="classic",
                   assignor="cooperative-sticky",
                   members=[MemberState(f"consumer-settlement-workers-{m}-6f1c", f"consumer-settlement-workers-{m}", f"/172.16.4.{m}",
                                        [["payments.settled", p] for p in range(m, 30, 3)]) for m in range(3)],
                   offsets=offsets, coordinator=2, status="WARN", time_lag=12.5, lag_keys=list(offsets),
                   lag_status=["OK"] * 27 + ["WARN"] * 3, lag_seconds=[0.0] * 27 + [12.5, 3.25, None])
    plain = orjson.dumps(g, option=CONTENT_OPTIONS)
    part = group_part(g)
    assert part_json(part) == plain
    without = zlib.compress(plain, 1)
    assert len(part) <= 0.8 * len(without), (len(part), len(without))
    assert int.from_bytes(part[2:6], "big") == zlib.adler32(GROUP_DICTIONARY)
    assert part_json(without) == plain
    other = zlib.compressobj(1, zdict=b'{"group_id":"a dictionary of another version"}')
    with pytest.raises(ValueError, match="dictionary this version does not know"):
        part_json(other.compress(plain) + other.flush())


def test_the_tally_stored_with_a_changed_topics_part_is_what_a_walk_of_its_partitions_says(monkeypatch):
    """The watcher keeps each topic's tally with its part and, for a topic of which some partitions
    changed, moves it by those partitions alone (TopicTally.changed); over random changes (offsets
    and sizes sampled, leaders, ISR, replica sets growing and shrinking, sizes and offsets known and
    unknown, min ISR, partitions added) the stored tally equals a walk of the whole topic, and so does what a reader takes from it;
    the tally it was moved from is left as it was."""
    import random

    from console.snapshots.part_cache import TopicBytes
    from console.snapshots.parts import topic_summary
    from console.snapshots.tallies import TopicTally

    rng = random.Random(11)
    moved = []
    changed = TopicTally.changed

    def counted(self, before, after, places):
        found = changed(self, before, after, places)
        moved.append(found is not None)
        return found

    monkeypatch.setattr(TopicTally, "changed", counted)

    def random_part(n: int) -> PartitionState:
        replicas = rng.sample(range(1, 7), rng.randint(1, 4))
        isr = [r for r in replicas if rng.random() < 0.7]
        leader = rng.choice(isr) if isr and rng.random() < 0.9 else -1
        start = rng.choice([None, rng.randint(0, 50)])
        end = None if start is None and rng.random() < 0.5 else rng.randint(0, 200)
        size = rng.choice([None, rng.randint(0, 10_000)])
        return PartitionState(n, leader, replicas, isr, [], start, end, size, {})

    cache = TopicBytes()
    topics = {f"t{i}": TopicState(f"t{i}", False, [random_part(n) for n in range(rng.randint(1, 8))], rng.choice([None, 1, 2]))
              for i in range(20)}
    cache.each(topics, "t:")
    for _ in range(300):
        name = rng.choice(list(topics))
        t = topics[name]
        parts = list(t.partitions)
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(parts))
            p, roll = parts[i], rng.random()
            if roll < 0.4:  # (its offsets and size sampled, the rest the same objects)
                start = p.start_offset if rng.random() < 0.9 else rng.choice([None, 3])
                parts[i] = p.with_offsets(start, (p.end_offset or 0) + rng.randint(0, 9) if rng.random() < 0.95 else None,
                                          (p.size or 0) + 5 if rng.random() < 0.95 else None, p.replica_sizes)
            elif roll < 0.8:  # (a leader moved or the ISR changed, the rest as it was)
                isr = [r for r in p.replicas if rng.random() < 0.7]
                parts[i] = replace(p, leader=rng.choice(isr) if isr else -1, isr=isr)
            else:
                parts[i] = random_part(i)
        if rng.random() < 0.1:
            parts.append(random_part(len(parts)))
        min_isr = rng.choice([None, 1, 2, 3]) if rng.random() < 0.1 else t.min_isr
        topics[name] = TopicState(name, False, parts, min_isr)
        before = cache._cache[name][2][0]
        as_it_was = replace(before, led=dict(before.led), led_under_replicated=dict(before.led_under_replicated),
                            hosted=dict(before.hosted))
        stored = cache.each(topics, "t:")["t:" + name]
        kept = cache._cache[name][2][0]
        assert kept == TopicTally.of(TopicState(name, False, parts, min_isr)), name
        assert before == as_it_was  # (the tally moved from is not changed: its dicts are copied, or shared unchanged)
        assert TopicTally.of(topic_of_part(stored)) == kept
        # (the summary stored, its brokers' lists copied from the last one where the tally shares them)
        assert stored[5:5 + int.from_bytes(stored[1:5], "big")] == topic_summary(topics[name], kept)
    assert len(moved) == 300 and 150 < sum(moved) < 300, sum(moved)  # (most moved the kept tally; some walked)
