"""The topics and groups list rows of a new snapshot version: a row made from objects the store kept
(unchanged topic, unchanged group whose topics are unchanged) is the row of the version before; the
others are made again, and every row equals what a process seeing the version first makes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from console.snapshots import tallies as tallies_module
from console.snapshots.model import GroupState, MemberState, Snapshot
from console.snapshots.parts import topic_of_part
from consumers_app import group_rows as groups
from tests.unit._build import part, snapshot, topic
from topics_app import reads as topics


def group(gid: str, offsets: dict[str, int], assigned: tuple[tuple[str, int], ...] = ()) -> GroupState:
    members = [MemberState(f"{gid}-m", "client/<1>", "/10.0.0.1", list(assigned))] if assigned else []
    return GroupState(group_id=gid, state="Stable" if members else "Empty", protocol_type="consumer", group_type="classic",
                      assignor="range", members=members, offsets=offsets)


def fresh(rows_of: Callable[[Snapshot], list[dict[str, Any]]], cache: dict[str, Any], snap: Snapshot) -> list[dict[str, Any]]:
    """The rows a process holding nothing makes (its rows of the version before set aside)."""
    held = cache.pop(snap.cluster, None)
    try:
        return [dict(r) for r in rows_of(snap)]
    finally:
        cache.pop(snap.cluster, None)
        if held is not None:
            cache[snap.cluster] = held


def fresh_groups(snap: Snapshot) -> list[dict[str, Any]]:
    held = groups._made.pop(snap.cluster, None)
    try:
        return fresh(groups.group_rows, groups._rows_cache, snap)
    finally:
        groups._made.pop(snap.cluster, None)
        if held is not None:
            groups._made[snap.cluster] = held


def test_a_new_version_keeps_the_rows_of_what_did_not_change_and_makes_the_others_again() -> None:
    orders = topic("orders", part(0, end_offset=100), part(1, end_offset=50))
    audit = topic("audit/<x>", part(0, end_offset=10))
    idle = topic("idle", part(0, end_offset=5))
    g_orders = group("g-orders", {"orders:0": 90, "orders:1": 50}, (("orders", 0), ("orders", 1)))
    g_audit = group("g/'audit'", {"audit/<x>:0": 4})
    g_both = group("g-both", {"orders:0": 100, "idle:0": 1})
    v1 = replace(snapshot(orders, audit, idle, cluster="rows"), version=1,
                 groups={g.group_id: g for g in (g_both, g_orders, g_audit)},
                 topic_groups={"orders": ["g-both", "g-orders"], "audit/<x>": ["g/'audit'"], "idle": ["g-both"]})
    t1, g1 = topics.topic_rows(v1), groups.group_rows(v1)
    assert topics.topic_rows(v1) is t1 and groups.group_rows(v1) is g1
    assert {r["group"]: r["total_lag"] for r in g1} == {"g-both": 4, "g-orders": 10, "g/'audit'": 6}

    # Version 2: orders' end offsets moved (a new TopicState), g/'audit' committed (a new GroupState),
    # idle unchanged but a group now reads it; the store kept every other object.
    orders2 = topic("orders", part(0, end_offset=130), part(1, end_offset=50))
    g_audit2 = group("g/'audit'", {"audit/<x>:0": 10})
    v2 = replace(v1, version=2, topics={"orders": orders2, "audit/<x>": audit, "idle": idle},
                 groups={"g-both": g_both, "g-orders": g_orders, "g/'audit'": g_audit2},
                 topic_groups={"orders": ["g-both", "g-orders"], "audit/<x>": ["g/'audit'"], "idle": ["g-both", "g-orders"]})
    t2, g2 = topics.topic_rows(v2), groups.group_rows(v2)
    by_topic = {r["name"]: r for r in t2}
    before_topic = {r["name"]: r for r in t1}
    assert by_topic["audit/<x>"] is before_topic["audit/<x>"]  # same topic, same groups
    assert by_topic["orders"] is not before_topic["orders"]
    assert by_topic["idle"] is not before_topic["idle"] and by_topic["idle"]["groups"] == ["g-both", "g-orders"]
    by_group = {r["group"]: r for r in g2}
    before_group = {r["group"]: r for r in g1}
    assert by_group["g/'audit'"] is not before_group["g/'audit'"] and by_group["g/'audit'"]["total_lag"] == 0
    # Both groups reading orders are made again (their lag moved with its end offsets), though unchanged.
    assert by_group["g-orders"] is not before_group["g-orders"] and by_group["g-orders"]["total_lag"] == 40
    assert by_group["g-both"]["total_lag"] == 34
    assert t2 == fresh(topics.topic_rows, topics._rows_cache, v2) and g2 == fresh_groups(v2)

    # Version 3: only g-orders' own group changed (rebalanced): the other groups keep their rows.
    g_orders3 = group("g-orders", {"orders:0": 130, "orders:1": 50}, (("orders", 1),))
    v3 = replace(v2, version=3, groups={**v2.groups, "g-orders": g_orders3})
    g3 = {r["group"]: r for r in groups.group_rows(v3)}
    assert g3["g-both"] is by_group["g-both"] and g3["g/'audit'"] is by_group["g/'audit'"]
    assert g3["g-orders"]["total_lag"] == 0 and g3["g-orders"]["members"] == 1
    assert topics.topic_rows(v3) is not t2 and all(a is b for a, b in zip(topics.topic_rows(v3), t2, strict=True))
    assert list(g3.values()) == fresh_groups(v3)

    # A topic a group reads is deleted, then created again: its groups' rows follow.
    v4 = replace(v3, version=4, topics={"orders": orders2, "audit/<x>": audit})
    g4 = {r["group"]: r for r in groups.group_rows(v4)}
    assert g4["g-both"] is not g3["g-both"] and g4["g-both"]["unknown_lag_partitions"] == 1
    v5 = replace(v4, version=5, topics={**v4.topics, "idle": topic("idle", part(0, end_offset=9))})
    g5 = {r["group"]: r for r in groups.group_rows(v5)}
    assert g5["g-both"]["unknown_lag_partitions"] == 0 and g5["g-both"]["total_lag"] == 38
    assert list(g5.values()) == fresh_groups(v5)


def test_the_overviews_tallies_are_kept_for_unchanged_topics_and_sum_to_the_full_counts() -> None:
    from brokers_app import services as brokers

    healthy = topic("healthy", part(0, leader=1), part(1, leader=2))
    shrunk = topic("shrunk", part(0, leader=3, isr=(3,)), part(1, leader=-1, isr=()), min_isr=2)
    v1 = replace(snapshot(healthy, shrunk, cluster="tallies"), version=1)
    tallies_module._TALLIED.pop("tallies", None)
    first = brokers.overview(v1)
    assert first["counts"] == v1.counts() and first["brokers"] == v1.broker_rows()
    assert first["counts"]["under_replicated"] == 2 and first["counts"]["offline"] == 1 and first["counts"]["under_min_isr"] == 2
    assert [b["leader_count"] for b in first["brokers"]] == [1, 1, 1] and [b["under_replicated"] for b in first["brokers"]] == [0, 0, 1]
    kept = tallies_module._TALLIED["tallies"][0]["healthy"]

    # Version 2: healthy's leader moved (a new TopicState), shrunk kept: only healthy is tallied again.
    moved = topic("healthy", part(0, leader=2), part(1, leader=2))
    v2 = replace(v1, version=2, topics={"healthy": moved, "shrunk": shrunk})
    shrunk_tally = tallies_module._TALLIED["tallies"][0]["shrunk"]
    second = brokers.overview(v2)
    assert tallies_module._TALLIED["tallies"][0]["shrunk"] is shrunk_tally and tallies_module._TALLIED["tallies"][0]["healthy"] is not kept
    assert second["counts"] == v2.counts() and second["brokers"] == v2.broker_rows()
    assert [b["leader_count"] for b in second["brokers"]] == [0, 2, 1]
    # Version 3: shrunk deleted, a topic created: the sum moves by both.
    v3 = replace(v2, version=3, topics={"healthy": moved, "new": topic("new", part(0, leader=1, replicas=(1,)))})
    third = brokers.overview(v3)
    assert third["counts"] == v3.counts() and third["brokers"] == v3.broker_rows()
    assert third["counts"]["partitions"] == 3 and third["counts"]["offline"] == 0
    assert [b["replica_count"] for b in third["brokers"]] == [3, 2, 2]


def test_a_groups_page_sorted_by_what_groups_say_of_themselves_makes_only_the_rows_it_shows(
        monkeypatch: pytest.MonkeyPatch) -> None:
    t = topic("orders", part(0, end_offset=100), part(1, end_offset=80))
    gs = {f"g{i:02d}": group(f"g{i:02d}", {"orders:0": i, "orders:1": 2 * i}) for i in range(30)}
    gs["g07"].status = "ERR"
    v1 = replace(snapshot(t, cluster="light"), version=1, groups=gs)
    made: list[str] = []
    real = groups._group_row

    def counting(snap: Snapshot, g: GroupState, ends: Any) -> dict[str, Any]:
        made.append(g.group_id)
        return real(snap, g, ends)

    monkeypatch.setattr(groups, "_group_row", counting)
    groups._made.pop("light", None)
    page = groups.groups_page(v1, per_page=5, page=2)
    assert [r["group"] for r in page.rows] == ["g05", "g06", "g07", "g08", "g09"] and page.total == 30 and page.pages == 6
    assert made == ["g05", "g06", "g07", "g08", "g09"] and page.rows[0]["total_lag"] == (100 - 5) + (80 - 10)
    by_status = groups.groups_page(v1, per_page=3, sort="status", descending=True)
    assert by_status.rows[0]["group"] == "g07" and len(made) == 7  # (g29 and g28 after it, by name descending)
    assert groups.group_detail(v1, "g07")["status"] == "ERR" and len(made) == 7  # (kept: the same objects)
    # A sort by lag needs every group's lag: every row is made.
    by_lag = groups.groups_page(v1, per_page=3, sort="total_lag", descending=True)
    assert [r["group"] for r in by_lag.rows] == ["g00", "g01", "g02"] and len(made) == 30
    full = {r["group"]: r for r in fresh_groups(v1)}
    assert all(r == full[r["group"]] for r in page.rows + by_status.rows + by_lag.rows)


def test_the_default_groups_page_is_a_slice_of_the_groups_in_name_order(monkeypatch: pytest.MonkeyPatch) -> None:
    t = topic("orders", part(0, end_offset=10))
    names = [f"g{i:03d}" for i in range(120)]
    in_order = replace(snapshot(t, cluster="slice"), version=1, groups={n: group(n, {"orders:0": 1}) for n in names})
    monkeypatch.setattr(groups, "light_rows", lambda snap: pytest.fail("the whole list made"))
    page = groups.groups_page(in_order, per_page=50, page=3)
    assert [r["group"] for r in page.rows] == names[100:] and (page.total, page.page, page.pages) == (120, 3, 3)
    down = groups.groups_page(in_order, per_page=50, page=9, descending=True)  # (clamped to the last page)
    assert [r["group"] for r in down.rows] == names[19::-1] and down.page == 3
    # Groups not in name order (a snapshot not read from the store) go through the sorted list.
    monkeypatch.undo()
    shuffled = replace(in_order, version=2, groups=dict(reversed(list(in_order.groups.items()))))
    assert [r["group"] for r in groups.groups_page(shuffled, per_page=50, page=3).rows] == names[100:]


def test_a_groups_summary_row_is_its_partition_rows_summed_up() -> None:
    """group_row sums up without a row per partition: it must say what partition_rows says, for
    commits, assignments without commits, partitions or topics not (or no longer) in the snapshot,
    unknown end offsets, lags Kafka reports (share groups) and evaluated time lags."""
    import random

    rng = random.Random(11)
    topics_ = [topic(name, *(part(n, end_offset=None if rng.random() < 0.1 else rng.randrange(0, 1000)) for n in range(rng.randrange(1, 6))))
               for name in ("a", "b:c", "d/<e>", "f")]
    snap = replace(snapshot(*topics_, cluster="sums"), version=1)
    names = ["a", "b:c", "d/<e>", "f", "gone"]
    for i in range(300):
        offsets = {f"{rng.choice(names)}:{rng.randrange(0, 7)}": rng.randrange(0, 1200) for _ in range(rng.randrange(0, 8))}
        assigned = tuple((rng.choice(names), rng.randrange(0, 7)) for _ in range(rng.randrange(0, 5)))
        g = group(f"g{i}", offsets, assigned)
        keys = sorted(set(offsets) | {f"{t}:{p}" for t, p in assigned})
        if i % 3 == 0:
            g.broker_lag = {k: rng.randrange(0, 50) for k in keys if rng.random() < 0.5}
        picked = [k for k in keys if rng.random() < 0.6]
        g.lag_keys, g.lag_status = picked, ["OK"] * len(picked)
        g.lag_seconds = [None if rng.random() < 0.3 else rng.random() * 100 for _ in picked]
        parts = groups.partition_rows(snap, g)
        lags = [p["lag"] for p in parts if p["lag"] is not None]
        time_lags = [p["time_lag"] for p in parts if p["time_lag"] is not None]
        row = groups._group_row(snap, g, groups._Ends(snap))
        assert (row["topics"], row["partitions"], row["unknown_lag_partitions"], row["total_lag"], row["max_lag"], row["time_lag"]) == (
            sorted({p["topic"] for p in parts}), len(parts), sum(1 for p in parts if p["lag"] is None), sum(lags),
            max(lags, default=0), max(time_lags, default=None)), (i, offsets, assigned)


def test_a_topics_tally_says_what_its_partitions_properties_say() -> None:
    """TopicTally.of walks the partitions once for the overview's tally and the topics list's row:
    each figure equals what TopicState's and PartitionState's own properties say, for partitions with
    and without offsets and sizes, offline, under-replicated, under min ISR, of mixed replica counts,
    and for a topic without partitions."""
    from console.snapshots.model import TopicState
    from console.snapshots.tallies import TopicTally

    sized = replace(part(0, leader=2, replicas=(2, 3, 4), isr=(2,), start_offset=5, end_offset=9), size=100)
    backwards = replace(part(1, leader=-1, replicas=(3, 4), isr=(), start_offset=9, end_offset=4), size=None)
    no_offsets = replace(part(2, leader=4, replicas=(4,), isr=(4,)), size=7)
    cases = [
        topic("mixed", sized, backwards, no_offsets, min_isr=2),
        topic("no-min-isr", sized, no_offsets),
        topic("bare", replace(part(0), size=None)),
        TopicState(name="empty", internal=False, partitions=[], min_isr=1),
    ]
    for t in cases:
        tally = TopicTally.of(t)
        counts = t.counts()
        assert (tally.partitions, tally.under_replicated, tally.offline, tally.under_min_isr) == (
            len(t.partitions), counts["under_replicated"], counts["offline"], counts["under_min_isr"]), t.name
        assert (tally.replication_factor, tally.size, tally.messages) == (t.replication_factor, t.size, t.messages), t.name
        led: dict[int, int] = {}
        hosted: dict[int, int] = {}
        for p in t.partitions:
            led[p.leader] = led.get(p.leader, 0) + 1
            for r in p.replicas:
                hosted[r] = hosted.get(r, 0) + 1
        assert tally.led == led and tally.hosted == hosted, t.name
        assert tally.led_under_replicated == {p.leader: 1 for p in t.partitions if p.under_replicated}, t.name
    mixed = TopicTally.of(cases[0])
    assert (mixed.under_replicated, mixed.offline, mixed.under_min_isr, mixed.replication_factor, mixed.size, mixed.messages) == (
        2, 1, 3, 3, 107, 4)
    row = topics._row(snapshot(cases[0], cluster="tally-row"), cases[0])
    assert {k: row[k] for k in ("partitions", "replication_factor", "under_replicated", "offline", "under_min_isr", "size",
                                "messages")} == {"partitions": 3, "replication_factor": 3, "under_replicated": 2, "offline": 1,
                                                 "under_min_isr": 3, "size": 107, "messages": 4}


def test_the_overview_and_the_topics_list_of_topics_read_from_the_store_do_not_parse_their_partitions() -> None:
    """A reading process takes each changed topic from its stored part (StoredTopic): the overview's
    counts and broker rows and the topics list's rows come from the tally stored with it, equal to
    those of the topics the watcher stored, with no topic's partitions parsed."""
    from brokers_app import services as brokers
    from console.snapshots.part_cache import TopicBytes
    from console.snapshots.parts import StoredTopic

    written = replace(snapshot(
        topic("healthy", replace(part(0, leader=1, start_offset=5, end_offset=50), size=100), replace(part(1, leader=2), size=7)),
        topic("shrunk", part(0, leader=3, isr=(3,)), part(1, leader=-1, isr=()), min_isr=2),
        topic("__consumer_offsets", part(0, leader=2, replicas=(2, 3, 1), end_offset=9), internal=True),
        cluster="stored-a"), version=7)
    parts = TopicBytes().each(written.topics, "t:")
    read = replace(written, cluster="stored-b",
                   topics={name: topic_of_part(parts["t:" + name]) for name in written.topics})
    assert all(type(t) is StoredTopic for t in read.topics.values())
    for cluster in ("stored-a", "stored-b"):
        tallies_module._TALLIED.pop(cluster, None)
    assert brokers.overview(read)["counts"] == brokers.overview(written)["counts"]
    assert brokers.overview(read)["brokers"] == brokers.overview(written)["brokers"]
    for internal in (False, True):
        assert topics.topics_page(read, internal=internal, sort="size").rows == \
            topics.topics_page(written, internal=internal, sort="size").rows
    assert not [name for name, t in read.topics.items() if "partitions" in vars(t)]
    # Asked for (a topic's page), its partitions are parsed once and kept.
    shown = read.topics["healthy"].partitions
    assert shown == written.topics["healthy"].partitions and read.topics["healthy"].partitions is shown
