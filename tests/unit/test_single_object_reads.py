"""One group's or one topic's answer on a snapshot read from the store: it reads its own objects
only (no other topic's partitions parsed, no other group parsed, not the whole list made), keeps
what did not change between versions, and says what a process building everything says."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from console.snapshots.model import GroupState, MemberState, Snapshot, TopicState
from console.snapshots.part_cache import GroupBytes, TopicBytes
from console.snapshots.parts import GroupsRead, HeldGroup, StoredTopic, topic_of_part
from consumers_app import group_rows as groups
from tests.unit._build import part, snapshot, topic
from topics_app import reads as topics


def group(gid: str, offsets: dict[str, int], assigned: tuple[tuple[str, int], ...] = ()) -> GroupState:
    members = [MemberState(f"{gid}-m", "client", "/10.0.0.1", list(assigned))] if assigned else []
    return GroupState(group_id=gid, state="Stable" if members else "Empty", protocol_type="consumer", group_type="classic",
                      assignor="range", members=members, offsets=offsets, lag_keys=list(offsets),
                      lag_status=["OK"] * len(offsets), lag_seconds=[1.5] * len(offsets))


def cluster(version: int, ends: dict[str, int], commits: dict[str, int], name: str) -> Snapshot:
    """Topics t0..t9 (two partitions each, t<i>'s end offsets `ends[t<i>]` and that plus 5) and groups
    g0..g9 (g<i> reads t<i>, committed `commits[g<i>]` on both partitions)."""
    ts = [topic(f"t{i}", part(0, end_offset=ends[f"t{i}"]), part(1, end_offset=ends[f"t{i}"] + 5)) for i in range(10)]
    gs = {f"g{i}": group(f"g{i}", {f"t{i}:0": commits[f"g{i}"], f"t{i}:1": commits[f"g{i}"]}, ((f"t{i}", 0),))
          for i in range(10)}
    return replace(snapshot(*ts, cluster=name), version=version, groups=gs,
                   topic_groups={f"t{i}": [f"g{i}"] for i in range(10)})


class Store:
    """What a reading process holds of each version, as the store's reader builds it: each topic and
    group kept as the same object while its stored part is the same bytes, the changed ones read
    from their parts (StoredTopic; groups held unparsed until asked for: GroupsRead)."""

    def __init__(self) -> None:
        self.topic_bytes, self.group_bytes = TopicBytes(), GroupBytes()
        self.topics: dict[str, tuple[bytes, TopicState]] = {}
        self.groups: dict[str, HeldGroup] = {}

    def read(self, written: Snapshot) -> Snapshot:
        topic_parts = self.topic_bytes.each(written.topics)
        group_parts = self.group_bytes.each(written.groups)
        read_topics = {}
        for name, raw in topic_parts.items():
            held = self.topics.get(name)
            if held is None or held[0] != raw:
                held = self.topics[name] = (raw, topic_of_part(raw))
            read_topics[name] = held[1]
        held_groups = {}
        for gid, raw in group_parts.items():
            h = self.groups.get(gid)
            if h is None or h.raw != raw:
                h = self.groups[gid] = HeldGroup(raw)
            held_groups[gid] = h
        return replace(written, topics=read_topics, groups=GroupsRead(held_groups))


def parsed_topics(snap: Snapshot) -> list[str]:
    return [name for name, t in snap.topics.items() if "partitions" in vars(t)]


def parsed_groups(snap: Snapshot) -> list[str]:
    assert isinstance(snap.groups, GroupsRead)
    return [gid for gid, h in snap.groups.held().items() if h.value is not None]


def test_a_stored_topic_gives_its_end_offsets_from_its_summary_without_parsing_its_partitions() -> None:
    written = topic("orders", part(0, end_offset=10), part(1, end_offset=None), part(3, end_offset=7))
    read = topic_of_part(TopicBytes().each({"orders": written})["orders"])
    assert type(read) is StoredTopic
    assert read.end_offsets() == written.end_offsets() == {0: 10, 1: None, 3: 7}
    assert "partitions" not in vars(read)


def test_a_groups_answer_parses_no_other_group_and_no_topics_partitions_and_says_what_a_full_build_says() -> None:
    ends = {f"t{i}": 100 * i for i in range(10)}
    commits = {f"g{i}": 100 * i - 3 for i in range(10)}
    written = cluster(1, ends, commits, "one-group")
    read = Store().read(written)
    detail = groups.group_detail(read, "g4")
    assert parsed_groups(read) == ["g4"] and parsed_topics(read) == []
    assert detail == groups.group_detail(written, "g4")
    assert detail["total_lag"] == 3 + 8 and [p["end_offset"] for p in detail["partitions"]] == [400, 405]


def test_a_topics_answer_makes_its_own_row_not_the_whole_list(monkeypatch: pytest.MonkeyPatch) -> None:
    ends = {f"t{i}": 100 * i for i in range(10)}
    written = cluster(1, ends, {f"g{i}": 0 for i in range(10)}, "one-topic")
    read = Store().read(written)
    topics._rows_cache.pop("one-topic", None)
    monkeypatch.setattr(topics, "topic_rows", lambda snap: pytest.fail("the whole topics list made for one topic"))
    summary = topics.topic_summary(read, "t3")
    lags = topics.topic_group_lags(read, "t3")
    assert parsed_topics(read) == [] and parsed_groups(read) == ["g3"]
    monkeypatch.undo()
    full = {r["name"]: r for r in topics.topic_rows(replace(written, cluster="one-topic-full"))}
    assert summary == full["t3"] and lags == topics.topic_group_lags(written, "t3") == [
        {"group": "g3", "state": "Stable", "members": 1, "lag": 300 + 305, "partitions": 2, "unknown_partitions": 0}]
    # Once the list's rows of this version are made, a topic's answer is its row there.
    listed = {r["name"]: r for r in topics.topic_rows(read)}
    assert topics.topic_summary(read, "t3") is listed["t3"]


def test_after_a_version_where_one_group_committed_and_one_topic_moved_only_their_groups_rows_are_made_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    ends = {f"t{i}": 100 * i for i in range(10)}
    commits = {f"g{i}": 100 * i - 3 for i in range(10)}
    store = Store()
    v1 = store.read(cluster(1, ends, commits, "moving"))
    for cache in (groups._made, groups._plans, groups._rows_cache):
        cache.pop("moving", None)
    rows1 = {r["group"]: r for r in groups.group_rows(v1)}
    plans1 = dict(groups._plans["moving"])
    # Version 2: g2 committed (a new GroupState), t5's end offsets moved (a new TopicState).
    written2 = cluster(2, {**ends, "t5": 590}, {**commits, "g2": 200}, "moving")
    v2 = store.read(written2)
    assert [gid for gid in v2.groups if v2.groups.held()[gid] is not v1.groups.held()[gid]] == ["g2"]  # type: ignore[attr-defined]
    made: list[str] = []
    real = groups._Plan.__init__

    def counting(self: Any, g: GroupState, *before: Any) -> None:
        made.append(g.group_id)
        real(self, g, *before)

    monkeypatch.setattr(groups._Plan, "__init__", counting)
    rows2 = {r["group"]: r for r in groups.group_rows(v2)}
    # Only g2's GroupState was read and taken apart again; g5's row follows its topic, from its kept plan.
    assert made == ["g2"] and parsed_groups(v2) == [f"g{i}" for i in range(10)]
    assert groups._plans["moving"]["g5"] is plans1["g5"]
    assert [gid for gid in rows2 if rows2[gid] is not rows1[gid]] == ["g2", "g5"]
    assert rows2["g2"]["total_lag"] == 0 + 5 and rows2["g5"]["total_lag"] == (590 - 497) + (595 - 497)
    # The truth: what a process seeing this version first (holding nothing) makes.
    for cache in (groups._made, groups._plans, groups._rows_cache):
        cache.pop("moving-fresh", None)
    monkeypatch.undo()
    assert list(rows2.values()) == groups.group_rows(replace(written2, cluster="moving-fresh"))
    by_lag = groups.groups_page(v2, sort="total_lag", descending=True, per_page=3)
    assert [r["group"] for r in by_lag.rows] == ["g5", "g9", "g8"] and by_lag.total == 10


def test_a_groups_part_reads_back_field_by_field_as_the_group_it_was_written_from() -> None:
    """Groups are read field by field in order (group_from_dict): every field, each set apart from
    its default, comes back in its place; a part written with other fields still reads by name."""
    from dataclasses import fields

    import orjson

    from console.snapshots.model import group_from_dict
    from console.snapshots.parts import group_of_part, group_part

    member = MemberState("m-1", "client-1", "/10.0.0.9", [["orders", 0]], instance_id="i-1", epoch=4,
                         target_assignment=[["orders", 1]])
    g = GroupState(group_id="g", state="Reconciling", protocol_type="consumer", group_type="consumer", assignor="uniform",
                   members=[member], offsets={"orders:0": 7}, coordinator=2, generation=9, broker_lag={"orders:0": 3},
                   error="slow", status="WARN", time_lag=2.5, lag_keys=["orders:0"], lag_status=["STALL"], lag_seconds=[2.5])
    read = group_of_part(group_part(g))
    assert read == g
    assert all(getattr(read, f.name) == getattr(g, f.name) for f in fields(GroupState))
    assert all(getattr(read.members[0], f.name) == getattr(member, f.name) for f in fields(MemberState))
    older = orjson.loads(orjson.dumps(g))
    older["retired_field"] = 1
    del older["lag_seconds"], older["members"][0]["epoch"]
    assert group_from_dict(older) == replace(g, lag_seconds=[], members=[replace(member, epoch=None)])
