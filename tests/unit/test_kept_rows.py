"""The groups list's rows and sort orders kept across snapshot versions (consumers_app.group_table,
console.kept_order): a version makes again the rows of what it changed only, and the kept orders
and pages equal what sorting every row of the version gives."""

from __future__ import annotations

import random
from dataclasses import replace
from functools import partial
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from console.kept_order import KeptOrder
from console.snapshots.model import GroupState, MemberState, Snapshot, TopicState
from consumers_app import group_rows as groups
from consumers_app.group_table import sort_key
from tests.unit._build import part, snapshot, topic

SORTS = ["total_lag", "max_lag", "time_lag", "members", "state", "status", "group"]


def group(gid: str, offsets: dict[str, int], assigned: tuple[tuple[str, int], ...] = (), status: str | None = "OK",
          seconds: float | None = 1.0) -> GroupState:
    members = [MemberState(f"{gid}-m", "client", "/10.0.0.1", list(assigned))] if assigned else []
    return GroupState(group_id=gid, state="Stable" if members else "Empty", protocol_type="consumer", group_type="classic",
                      assignor="range", members=members, offsets=offsets, status=status, lag_keys=list(offsets),
                      lag_status=["OK"] * len(offsets), lag_seconds=[seconds] * len(offsets))


def full_rows(snap: Snapshot) -> dict[str, dict[str, Any]]:
    """Every row as a process holding nothing makes it."""
    ends = groups._Ends(snap)
    return {gid: groups._group_row(snap, g, ends) for gid, g in snap.groups.items()}


def fresh_cluster(name: str) -> None:
    groups._rows_cache.pop(name, None)
    groups._made.pop(name, None)
    groups._plans.pop(name, None)


def test_a_version_remakes_the_rows_of_changed_groups_and_of_readers_of_moved_end_offsets_only() -> None:
    fresh_cluster("kept")
    orders = topic("orders", part(0, end_offset=100), part(1, end_offset=50))
    audit = topic("audit", part(0, end_offset=10))
    g_orders = group("g-orders", {"orders:0": 90, "orders:1": 50}, (("orders", 0),))
    g_audit = group("g-audit", {"audit:0": 4})
    g_idle = group("g-idle", {"audit:0": 10})
    v1 = replace(snapshot(orders, audit, cluster="kept"), version=1,
                 groups={g.group_id: g for g in (g_audit, g_idle, g_orders)})
    first = {r["group"]: r for r in groups.group_rows(v1)}
    assert groups.table(v1).made == 3

    # A leader moved on orders (a new TopicState, the same end offsets) and g-audit committed.
    moved_leader = topic("orders", part(0, leader=2, end_offset=100), part(1, end_offset=50))
    v2 = replace(v1, version=2, topics={"orders": moved_leader, "audit": audit},
                 groups={**v1.groups, "g-audit": group("g-audit", {"audit:0": 8})})
    second = {r["group"]: r for r in groups.group_rows(v2)}
    assert groups.table(v2).made == 1
    assert second["g-orders"] is first["g-orders"] and second["g-idle"] is first["g-idle"]
    assert second["g-audit"]["total_lag"] == 2

    # audit's end offsets moved: both groups reading it are made again, g-orders is not.
    v3 = replace(v2, version=3, topics={"orders": moved_leader, "audit": topic("audit", part(0, end_offset=30))})
    third = {r["group"]: r for r in groups.group_rows(v3)}
    assert groups.table(v3).made == 2 and third["g-orders"] is first["g-orders"]
    assert (third["g-audit"]["total_lag"], third["g-idle"]["total_lag"]) == (22, 20)
    assert third == full_rows(v3)

    # A group gone, one new, and a topic deleted: the rows follow, and the kept order with them.
    by_lag = groups.groups_page(v3, sort="total_lag", descending=True)
    assert [r["group"] for r in by_lag.rows] == ["g-audit", "g-idle", "g-orders"]
    v4 = replace(v3, version=4, topics={"orders": moved_leader},
                 groups={"g-orders": g_orders, "g-new": group("g-new", {"orders:0": 0})})
    fourth = {r["group"]: r for r in groups.group_rows(v4)}
    assert set(fourth) == {"g-orders", "g-new"} and fourth == full_rows(v4)
    assert [r["group"] for r in groups.groups_page(v4, sort="total_lag", descending=True).rows] == ["g-new", "g-orders"]
    assert set(groups.table(v4).readers) == {"orders"}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(-3, 3)), max_size=120), st.integers(0, 2**32 - 1))
def test_a_kept_order_moved_by_random_changes_equals_the_sorted_keys(steps: list[tuple[int, int]], seed: int) -> None:
    """Keys changed, added and removed in batches of every size (bisected in, or merged) leave the
    same order as sorting what is there."""
    rng = random.Random(seed)
    now = {f"n{i}": (rng.randrange(5), f"n{i}") for i in range(rng.randrange(0, 30))}
    order = KeptOrder(now.values())
    for size, delta in steps:
        changed = {}
        for _ in range(size % 12 if rng.random() < 0.7 else size):
            name = f"n{rng.randrange(45)}"
            changed[name] = (max(0, rng.randrange(5) + delta), name)
        removed = [n for n in list(now) if rng.random() < 0.05 and n not in changed]
        for n in removed:
            del now[n]
        now.update(changed)
        order.move(changed, removed)
        assert order.keys() == sorted(now.values())
        assert order.names(True) == [k[-1] for k in sorted(now.values(), reverse=True)]
        start = rng.randrange(0, 10)
        assert order.names(True, start, start + 7) == [k[-1] for k in sorted(now.values(), reverse=True)][start:start + 7]


def test_the_groups_pages_sorted_by_lag_equal_a_full_sort_after_random_versions() -> None:
    """Random versions (groups committing, joining, leaving, falling behind; topics' end offsets
    moving, topics deleted and created): every lag-sorted page, filtered or not, equals sorting
    every row of the version made afresh."""
    rng = random.Random(5)
    fresh_cluster("random")
    names = [f"t{i}" for i in range(8)]

    def a_topic(name: str) -> TopicState:
        return topic(name, *(part(n, leader=rng.randrange(1, 4), end_offset=None if rng.random() < 0.05 else rng.randrange(0, 500))
                             for n in range(3)))

    def a_group(i: int) -> GroupState:
        reads = rng.sample(names, rng.randrange(1, 3))
        offsets = {f"{t}:{n}": rng.randrange(0, 500) for t in reads for n in range(3) if rng.random() < 0.8}
        return group(f"g{i:02d}", offsets, tuple((t, 0) for t in reads[:1]) if rng.random() < 0.6 else (),
                     status=rng.choice([None, "OK", "WARN", "ERR"]), seconds=rng.choice([None, 0.0, rng.random() * 9]))

    topics = {n: a_topic(n) for n in names}
    gs = {f"g{i:02d}": a_group(i) for i in range(40)}
    for version in range(1, 30):
        for n in rng.sample(names, rng.randrange(0, 4)):
            if rng.random() < 0.1:
                topics.pop(n, None)
            else:
                topics[n] = a_topic(n) if rng.random() < 0.7 else replace(topics.get(n) or a_topic(n))
        for i in rng.sample(range(50), rng.randrange(0, 12)):
            if rng.random() < 0.15:
                gs.pop(f"g{i:02d}", None)
            else:
                gs[f"g{i:02d}"] = a_group(i)
        snap = replace(snapshot(*topics.values(), cluster="random"), version=version, groups=dict(sorted(gs.items())))
        every = full_rows(snap)
        for sort in SORTS:
            descending = rng.random() < 0.5
            want = sorted(every.values(), key=partial(sort_key, sort), reverse=descending)
            page = groups.groups_page(snap, sort=sort, descending=descending, per_page=7, page=rng.randrange(1, 8))
            assert page.rows == want[(page.page - 1) * 7:page.page * 7] and page.total == len(want), (version, sort)
            state = rng.choice(["", "Stable", "Empty"])
            cut = groups.groups_page(snap, sort=sort, descending=descending, per_page=100, query="1", state=state)
            assert cut.rows == [r for r in want if "1" in r["group"] and (not state or r["state"] == state)], (version, sort)


def test_a_group_made_again_on_the_same_partitions_keeps_its_plan_and_says_what_a_fresh_plan_says() -> None:
    """A group's new state that commits on and assigns the same partitions (its offsets, time lags,
    status or state moved) keeps the partitions by topic of its plan before; its row equals the row
    of a plan made afresh. Other partitions or assignments make the plan anew."""
    rng = random.Random(9)
    snap = replace(snapshot(topic("a", part(0, end_offset=50), part(1, end_offset=70)), topic("b", part(0, end_offset=9)),
                            cluster="plans"), version=1)
    for i in range(200):
        fresh_cluster("plans")
        keys = rng.sample(["a:0", "a:1", "b:0", "gone:0"], rng.randrange(1, 4))
        assigned = (("a", 1),) if rng.random() < 0.5 else ()
        first = group("g", {k: rng.randrange(0, 80) for k in keys}, assigned)
        groups._group_row(snap, first, groups._Ends(snap))
        plan = groups._plans["plans"]["g"]
        same = rng.random() < 0.7
        later = group("g", {k: rng.randrange(0, 80) for k in (keys if same else [*keys[1:], "b:0"])},
                      assigned if same or rng.random() < 0.5 else (("b", 0),), status=rng.choice(["OK", "ERR", None]),
                      seconds=rng.choice([None, rng.random()]))
        if rng.random() < 0.3:
            later.state = "PreparingRebalance"
        if rng.random() < 0.3:
            later.coordinator = 3
        row = groups._group_row(snap, later, groups._Ends(snap))
        if same:
            assert groups._plans["plans"]["g"].by_topic is plan.by_topic, i
        fresh_cluster("plans")
        assert row == groups._group_row(snap, later, groups._Ends(snap)), i
