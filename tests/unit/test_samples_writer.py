"""The watcher's sample records: one per topic and per group per cycle, in analytics' format v2."""

from __future__ import annotations

import json

from analytics.records import read_record
from analytics.sampling import build_records
from console.snapshots.model import GroupState, MemberState


def group(gid: str, offsets: dict[str, int], members: int = 1, group_type: str = "classic") -> GroupState:
    ms = [MemberState(f"m{i}", "c", "h", []) for i in range(members)]
    return GroupState(gid, "Stable", "consumer", group_type, "range", ms, offsets)


def test_one_record_per_topic_and_per_group_with_sizes_from_the_largest_replica() -> None:
    ends = {("orders", 0): 10, ("orders", 2): 30, ("logs", 0): 5, ("__kafka_console_samples", 0): 99}
    sizes = {("orders", 0): {1: 100, 2: 120}, ("logs", 0): {3: 7}}
    groups = {"billing": group("billing", {"orders:0": 8, "orders:2": 30, "a:b:1": 3}, members=2),
              "queue": group("queue", {"orders:0": 1}, group_type="share")}
    records = build_records("local", 1700000000.5, ends, sizes, groups, skip="__kafka_console_samples")
    decoded = [(k.decode(), read_record(v)) for k, v in records]
    assert decoded == [
        ("local/logs", {"v": 2, "kind": "topic", "cluster": "local", "topic": "logs", "time": 1700000000500, "end": [5], "bytes": [7]}),
        ("local/orders", {"v": 2, "kind": "topic", "cluster": "local", "topic": "orders", "time": 1700000000500,
                          "end": [10, None, 30], "bytes": [120, None, None]}),
        ("local/billing", {"v": 2, "kind": "group", "cluster": "local", "group": "billing", "time": 1700000000500,
                           "members": 2, "offsets": {"a:b": [None, 3], "orders": [8, None, 30]}}),
    ]


def test_no_groups_read_this_cycle_means_topic_records_only() -> None:
    records = build_records("c", 1.0, {("t", 0): 1}, None, None)
    assert [json.loads(v)["kind"] for _, v in records] == ["topic"]
    assert "bytes" not in json.loads(records[0][1])


class RefusingGateway:
    """A cluster without the sample topic that refuses to create it (ACLs, say)."""

    def __init__(self) -> None:
        self.creates = 0

    def topic_metadata(self, name: str) -> None:
        from console.gateway.errors import NotFound

        raise NotFound(f"Topic '{name}' does not exist on cluster 'c'.")

    def create_topic(self, *args: object, **kwargs: object) -> None:
        from console.gateway.errors import NotAuthorized

        self.creates += 1
        raise NotAuthorized("Cluster 'c' refused: not authorized to create topics.")


def test_a_cluster_that_refuses_the_sample_topic_gets_one_sentence_and_is_asked_again_later(settings, monkeypatch) -> None:
    import analytics.sampling as samples

    settings.ANALYTICS_SAMPLES = True
    clock = [1000.0]
    monkeypatch.setattr(samples.time, "monotonic", lambda: clock[0])
    gw = RefusingGateway()
    writer = samples.SampleWriter("c", gw)
    first = writer.write(1.0, {("t", 0): 1}, None, None, 3)
    assert first is not None and "cannot keep analytics samples in topic '__kafka_console_samples'" in first
    assert "not authorized to create topics" in first and "the live console is not affected" in first
    assert writer.write(2.0, {("t", 0): 2}, None, None, 3) is None and gw.creates == 1, "not asked again at once"
    clock[0] += samples.RETRY_SECONDS + 1
    assert writer.write(3.0, {("t", 0): 3}, None, None, 3) is None, "one event while the refusal lasts"
    assert gw.creates == 2 and writer.refused is not None


def test_samples_off_writes_nothing_and_asks_nothing(settings) -> None:
    from analytics.sampling import SampleWriter

    settings.ANALYTICS_SAMPLES = False
    gw = RefusingGateway()
    assert SampleWriter("c", gw).write(1.0, {("t", 0): 1}, None, None, 3) is None and gw.creates == 0
