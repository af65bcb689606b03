"""The watcher's sample records: one per topic and per group per cycle, in analytics' format v1."""

from __future__ import annotations

import json

from console.watcher.samples import build_records
from console.watcher.snapshot import GroupState, MemberState


def group(gid: str, offsets: dict[str, int], members: int = 1, group_type: str = "classic") -> GroupState:
    ms = [MemberState(f"m{i}", "c", "h", []) for i in range(members)]
    return GroupState(gid, "Stable", "consumer", group_type, "range", ms, offsets)


def test_one_record_per_topic_and_per_group_with_sizes_from_the_largest_replica() -> None:
    ends = {("orders", 0): 10, ("orders", 2): 30, ("logs", 0): 5, ("__kafka_console_samples", 0): 99}
    sizes = {("orders", 0): {1: 100, 2: 120}, ("logs", 0): {3: 7}}
    groups = {"billing": group("billing", {"orders:0": 8, "orders:2": 30, "a:b:1": 3}, members=2),
              "queue": group("queue", {"orders:0": 1}, group_type="share")}
    records = build_records("local", 1700000000.5, ends, sizes, groups, skip="__kafka_console_samples")
    decoded = [(k.decode(), json.loads(v)) for k, v in records]
    assert decoded == [
        ("local/logs", {"v": 1, "kind": "topic", "cluster": "local", "topic": "logs", "time": 1700000000500, "end": [5], "bytes": [7]}),
        ("local/orders", {"v": 1, "kind": "topic", "cluster": "local", "topic": "orders", "time": 1700000000500,
                          "end": [10, None, 30], "bytes": [120, None, None]}),
        ("local/billing", {"v": 1, "kind": "group", "cluster": "local", "group": "billing", "time": 1700000000500,
                           "members": 2, "offsets": {"a:b": [None, 3], "orders": [8, None, 30]}}),
    ]


def test_no_groups_read_this_cycle_means_topic_records_only() -> None:
    records = build_records("c", 1.0, {("t", 0): 1}, None, None)
    assert [json.loads(v)["kind"] for _, v in records] == ["topic"]
    assert "bytes" not in json.loads(records[0][1])
