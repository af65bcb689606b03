"""The gateway's metadata: an unchanged topic comes back as the same Topic object (no Kafka: a stand-in
for librdkafka's admin client)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from console.gateway.client import ClusterGateway
from console.gateway.config import ClusterConfig
from console.gateway.types import Topic


class Admin:
    def __init__(self) -> None:
        self.leaders = {"orders": 1, "logs": 2}

    def list_topics(self, timeout: float) -> Any:
        def part(pid: int, leader: int) -> Any:
            return SimpleNamespace(id=pid, leader=leader, replicas=[1, 2], isrs=[1, 2], error=None)

        topics = {name: SimpleNamespace(error=None, partitions={0: part(0, leader), 1: part(1, 2)})
                  for name, leader in self.leaders.items()}
        brokers = {b: SimpleNamespace(id=b, host="h", port=9092, rack=None) for b in (1, 2)}
        return SimpleNamespace(cluster_id="c1", brokers=brokers, topics=topics)


def test_an_unchanged_topic_is_the_same_object_and_a_changed_one_is_rebuilt() -> None:
    gw = ClusterGateway(ClusterConfig(name="x", bootstrap_servers="127.0.0.1:9"), timeout=1.0)
    admin = Admin()
    setattr(gw, "_admin_client", lambda: admin)  # noqa: B010 - a stand-in for the real client
    first = {t.name: t for t in gw.metadata().topics}
    admin.leaders["orders"] = 2
    second = {t.name: t for t in gw.metadata().topics}
    assert second["logs"] is first["logs"]
    assert second["orders"] is not first["orders"]
    assert [p.leader for p in second["orders"].partitions] == [2, 2]
    del admin.leaders["logs"]
    third = {t.name: t for t in gw.metadata().topics}
    assert list(third) == ["orders"] and third["orders"] is second["orders"]


def test_partitions_on_the_same_brokers_share_one_tuple_of_them() -> None:
    """librdkafka hands back new lists per partition at every call; the gateway keeps one tuple per
    list of broker ids (its Partitions and the raw fields it compares), whatever topic they are of."""
    gw = ClusterGateway(ClusterConfig(name="x", bootstrap_servers="127.0.0.1:9"), timeout=1.0)
    admin = Admin()
    setattr(gw, "_admin_client", lambda: admin)  # noqa: B010 - a stand-in for the real client
    parts = [p for t in gw.metadata().topics for p in t.partitions]
    assert len(parts) == 4 and all(p.replicas == (1, 2) for p in parts)
    assert all(p.replicas is parts[0].replicas and p.isr is parts[0].replicas for p in parts)
    admin.leaders["orders"] = 2  # (a changed topic: built again, on the same tuples)
    again = [p for t in gw.metadata().topics for p in t.partitions]
    assert all(p.replicas is parts[0].replicas for p in again)
    # What the gateway keeps to compare the next answer with is the Topics themselves, nothing else.
    assert all(type(t) is Topic for t in gw._topic_cache.values())
    def by_place(p: Any) -> tuple[str, int]:
        return (p.topic, p.partition)

    assert sorted((p for t in gw._topic_cache.values() for p in t.partitions), key=by_place) == sorted(again, key=by_place)


class Error:
    def __init__(self, code: int, text: str) -> None:
        self._code, self._text = code, text

    def code(self) -> int:
        return self._code

    def str(self) -> str:
        return self._text


class Answers:
    """A stand-in for librdkafka's admin client whose answer is set field by field (new objects at each call)."""

    def __init__(self) -> None:
        # topic -> (its error, {partition: [leader, replicas, isr, error]})
        self.topics: dict[str, tuple[Error | None, dict[int, list[Any]]]] = {
            "orders": (None, {0: [1, [1, 2, 3], [1, 2, 3], None], 1: [2, [2, 3, 1], [2, 3], None]}),
            "pay<ments>/é": (None, {0: [3, [3, 1], [3, 1], Error(0, "Success")]}),
        }

    def list_topics(self, timeout: float) -> Any:
        def part(pid: int, fields: list[Any]) -> Any:
            return SimpleNamespace(id=pid, leader=fields[0], replicas=list(fields[1]), isrs=list(fields[2]), error=fields[3])

        topics = {name: SimpleNamespace(error=error, partitions={pid: part(pid, f) for pid, f in reversed(parts.items())})
                  for name, (error, parts) in self.topics.items()}
        brokers = {b: SimpleNamespace(id=b, host="h", port=9092, rack=None) for b in (1, 2, 3)}
        return SimpleNamespace(cluster_id="c1", brokers=brokers, topics=topics)


@pytest.mark.parametrize("change", [
    "leader", "replicas", "replica order", "isr", "partition error", "partition error text", "error cleared",
    "topic error", "partition added", "partition removed",
])
def test_every_change_of_a_topics_metadata_rebuilds_it_and_nothing_else(change: str) -> None:
    gw = ClusterGateway(ClusterConfig(name="x", bootstrap_servers="127.0.0.1:9"), timeout=1.0)
    admin = Answers()
    setattr(gw, "_admin_client", lambda: admin)  # noqa: B010 - a stand-in for the real client
    first = {t.name: t for t in gw.metadata().topics}
    assert {t.name: t for t in gw.metadata().topics} == first
    assert all(again is first[again.name] for again in gw.metadata().topics)  # the same answer: the same objects
    assert first["pay<ments>/é"].partitions[0].error is None  # (code 0 is no error)
    parts = admin.topics["orders"][1]
    if change == "leader":
        parts[0][0] = 2
    elif change == "replicas":
        parts[1][1] = [2, 3, 4]
    elif change == "replica order":
        parts[0][1] = [2, 1, 3]
    elif change == "isr":
        parts[1][2] = [2, 3, 1]
    elif change == "partition error":
        parts[0][3] = Error(9, "Replica not available")
    elif change == "partition error text":
        parts[0][3] = Error(9, "Replica not available")
        gw.metadata()
        parts[0][3] = Error(9, "Replica not available (broker 3)")
    elif change == "error cleared":
        parts[0][3] = Error(9, "Replica not available")
        gw.metadata()
        parts[0][3] = Error(0, "Success")
    elif change == "topic error":
        admin.topics["orders"] = (Error(3, "Unknown topic or partition"), parts)
    elif change == "partition added":
        parts[2] = [3, [3, 1, 2], [3, 1, 2], None]
    elif change == "partition removed":
        del parts[1]
    second = {t.name: t for t in gw.metadata().topics}
    assert second["pay<ments>/é"] is first["pay<ments>/é"]
    orders = second["orders"]
    assert orders is not first["orders"]
    # What it says is the answer, field by field.
    topic_error, answered = admin.topics["orders"]
    assert orders.error == (topic_error.str() if topic_error is not None and topic_error.code() else None)
    assert [(p.partition, p.leader, list(p.replicas), list(p.isr), p.error) for p in orders.partitions] == [
        (pid, f[0], f[1], f[2], f[3].str() if f[3] is not None and f[3].code() else None) for pid, f in sorted(answered.items())]
    assert {t.name: t for t in gw.metadata().topics}["orders"] is orders  # and kept from then on


def test_shared_ids_are_bounded(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from console.gateway import types

    monkeypatch.setattr(types, "IDS_MAX", 3)
    monkeypatch.setattr(types, "_ids", {})
    first = types.shared_ids([1, 2])
    assert types.shared_ids((1, 2)) is first
    for i in range(5):
        types.shared_ids([i, 9])
    assert len(types._ids) <= 3
    assert types.shared_ids([1, 2]) == (1, 2)
    table = types.PartitionTable.of("t", [(0, 1, [1, 2], [1], None), (1, 2, (2, 1), [2, 1], None)])
    assert table.row(1) == (1, 2, (2, 1), (2, 1), None) and len(types._ids) <= 3  # (a table's lookups too)
    for i in range(5):
        types.PartitionTable.of("t", [(0, i, [i, 8], [i], None)])
        assert len(types._ids) <= 3
    types._ids.clear()
    again = types.PartitionTable.of("t", [(0, 1, [4, 8], [4], None), (1, 4, [4, 8], [4, 8], None)])
    assert again.row(0)[2] is again.row(1)[2] is types.shared_ids((4, 8))


def test_the_answers_held_per_partition_group_and_member_carry_no_attribute_dict() -> None:
    """The watcher holds a Partition per partition (300,000) and the sampling process a
    ConsumerGroup per group and a GroupMember per member at each pass: slots, no dict each."""
    import pickle

    from console.gateway.types import ConsumerGroup, GroupMember, Partition

    p = Partition(topic="t", partition=0, leader=1, replicas=(1, 2), isr=(1, 2))
    m = GroupMember(member_id="m", client_id="c", host="/h", assignment=(("t", 0),))
    g = ConsumerGroup(group_id="g", state="Stable", protocol_type="consumer", group_type="classic", assignor="range",
                      members=(m,))
    for obj in (p, m, g):
        assert not hasattr(obj, "__dict__")
        assert pickle.loads(pickle.dumps(obj)) == obj  # (the sampling process gets them pickled from tools and tests)


def test_the_gateway_keeps_each_topics_partitions_as_columns_of_a_few_bytes_a_partition() -> None:
    """What the gateway holds between calls to hand an unchanged topic back: its partitions as
    columns (PartitionTable), about 24 bytes a partition instead of an 80-byte Partition each (24 MB
    of the watcher's process at 300,000 partitions); read as Partitions all the same."""
    import pickle
    import tracemalloc

    from console.gateway.types import Partition, PartitionTable

    class Many:
        def list_topics(self, timeout: float) -> Any:
            def part(pid: int) -> Any:
                ids = [1 + pid % 7, 1 + (pid + 1) % 7, 1 + (pid + 2) % 7]
                return SimpleNamespace(id=pid, leader=ids[0], replicas=list(ids), isrs=list(ids[:2]), error=None)

            topics = {f"t{k}": SimpleNamespace(error=None, partitions={pid: part(pid) for pid in range(300)}) for k in range(20)}
            brokers = {b: SimpleNamespace(id=b, host="h", port=9092, rack=None) for b in range(1, 8)}
            return SimpleNamespace(cluster_id="c1", brokers=brokers, topics=topics)

    gw = ClusterGateway(ClusterConfig(name="x", bootstrap_servers="127.0.0.1:9"), timeout=1.0)
    admin = Many()
    setattr(gw, "_admin_client", lambda: admin)  # noqa: B010 - a stand-in for the real client
    gw.metadata()  # (the broker id tuples made once)
    gw._topic_cache = {}
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        topics = gw.metadata().topics
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 40 * 6000, kept / 6000  # (bytes a partition, the topics' own objects included)
    table = topics[0].partitions
    assert isinstance(table, PartitionTable) and len(table) == 300
    first = Partition(topic="t0", partition=0, leader=1, replicas=(1, 2, 3), isr=(1, 2))
    assert table[0] == first and table[-300] == first and table[299].partition == 299 and table[1:2] == (table[1],)
    with pytest.raises(IndexError):
        table[300]  # noqa: B018
    assert table == tuple(table) and tuple(table) == table and list(table) == list(tuple(table))
    assert pickle.loads(pickle.dumps(table)) == table and hash(pickle.loads(pickle.dumps(table))) == hash(table)
    assert all(p.replicas is table[0].replicas for p in table if p.replicas == (1, 2, 3))  # (shared tuples)


def test_a_tables_changed_places_are_the_rows_that_differ_at_the_same_place() -> None:
    from console.gateway.types import PartitionRow, PartitionTable

    def table(rows: list[PartitionRow]) -> PartitionTable:
        return PartitionTable.of("t", rows)

    base: list[PartitionRow] = [(i, 1 + i % 3, (1, 2, 3), (1, 2, 3), None) for i in range(6)]
    before = table(base)
    assert table(base).places_changed(before) == []
    after = list(base)
    after[1] = (1, 3, (1, 2, 3), (1, 2, 3), None)  # leader moved
    after[3] = (3, 1, (1, 2, 3), (1, 3), None)  # ISR shrank
    after[5] = (5, 3, (3, 2, 1), (1, 2, 3), None)  # replicas reordered
    assert table(after).places_changed(before) == [1, 3, 5]
    after[4] = (4, 3, (1, 2, 3), (3,), None)  # leader moved and ISR shrank: once, in order
    assert table(after).places_changed(before) == [1, 3, 4, 5]
    # Not the same partitions at the same places, or an error in either: None (compare row by row).
    assert table([*base, (6, 1, (1, 2, 3), (1, 2, 3), None)]).places_changed(before) is None
    assert table([base[1], base[0], *base[2:]]).places_changed(before) is None
    errored = list(base)
    errored[2] = (2, -1, (1, 2, 3), (), "LEADER_NOT_AVAILABLE")
    assert table(errored).places_changed(before) is None and before.places_changed(table(errored)) is None
    assert table(after).row(3) == (3, 1, (1, 2, 3), (1, 3), None)


def test_metadata_does_not_wait_for_another_thread_filling_the_admin_clients_cache() -> None:
    """metadata() records that its admin client's cache holds every topic (ClusterGateway._cached_topics)
    only when nobody is filling it: a fill can take a slow cluster's whole timeout, and the watcher's
    cycle must not wait for the sampling thread's."""
    import threading

    gw = ClusterGateway(ClusterConfig(name="x", bootstrap_servers="127.0.0.1:9"), timeout=1.0)
    admin = Admin()
    setattr(gw, "_admin_client", lambda: admin)  # noqa: B010 - a stand-in for the real client
    done = threading.Event()

    def read() -> None:
        gw.metadata()
        done.set()

    with gw._warm_lock:  # (another thread filling the cache)
        threading.Thread(target=read, daemon=True).start()
        assert done.wait(5), "metadata() waited for the cache being filled"
    gw.metadata()
    assert gw._admin_topics[1] == {"orders", "logs"}  # (recorded when nobody fills it)
