"""The sampler's group states name each partition with one shared tuple and one shared key: at
50,000 groups on 300,000 partitions the per-state copies were hundreds of megabytes."""

from __future__ import annotations

import sys
from collections.abc import Generator

import pytest
from django.test import override_settings

from bench.simulate import Model, SimGateway
from console.watcher.columns import OffsetColumns
from console.watcher.partition_names import PartitionNames
from console.watcher.sampler import Sampler

pytestmark = pytest.mark.django_db


def small_cluster(groups: int = 8, brokers: int = 3) -> tuple[Model, SimGateway, list[tuple[str, int]]]:
    """A model of 4 topics of 10 partitions (two groups on each topic, at 8 groups), its gateway, and
    its partitions to sample."""
    model = Model(partitions=40, groups=groups, brokers=brokers, per_topic=10, seed=3)
    gw = SimGateway(model, 0.0)
    return model, gw, [(t.name, p.partition) for t in gw.metadata().topics for p in t.partitions]


def test_groups_reading_the_same_topic_share_its_partition_tuples_and_keys(redis_server: str) -> None:
    model, gw, partitions = small_cluster()  # 4 topics, 2 groups on each
    with override_settings(ANALYTICS_SAMPLES=False):
        sampler = Sampler("share-test", gw, True, lambda rows: None)  # type: ignore[arg-type]
        groups = sampler.take(partitions, [1, 2, 3]).groups
        assert groups is not None
        a, b = groups["sim.group-000000"], groups["sim.group-000004"]  # both on the first topic
        assert list(a.offsets) == list(b.offsets) and len(a.offsets) == 10
        assert all(x is y for x, y in zip(a.offsets, b.offsets, strict=True))  # the same key strings
        tps_a = [tp for m in a.members for tp in m.assignment]
        tps_b = [tp for m in b.members for tp in m.assignment]
        assert set(map(tuple, tps_a)) == set(map(tuple, tps_b))
        by_value = {tp: tp for tp in tps_a}
        assert all(by_value[tp] is tp for tp in tps_b)  # the same tuples
        # The next pass (the model moved, every group committed anew) still hands out the same objects.
        model.step(1.0, 1.0)
        again = sampler.take(partitions, [1, 2, 3]).groups
        assert again is not None
        c = again["sim.group-000000"]
        assert all(x is y for x, y in zip(c.offsets, a.offsets, strict=True))
        # What the store keeps is unchanged by the sharing: assignments serialise as lists.
        assert a.topics() == ["sim.topic-000000"]


def test_partition_names_are_bounded() -> None:
    names = PartitionNames()
    first, key = names.shared(("t", 1)), names.key(("t", 1))
    assert names.shared(("t", 1)) is first and first == ("t", 1) and names.key(("t", 1)) is key == "t:1"
    for p in range(1000):
        names.key(("t", p))
    names.bound(in_use=10_000)  # far fewer than 2 x in use + 100,000: kept
    assert len(names) == 1000 and names.shared(("t", 1)) is first
    for i in range(200_000):
        names.key(("x", i))
    generation = names.generation
    names.bound(in_use=10_000)  # deleted topics' partitions piled up: started afresh
    assert len(names) == 0 and names.generation == generation + 1 and ("t:1" not in names.by_key)


def test_partition_names_give_one_key_and_tuple_per_partition_from_lists_per_topic() -> None:
    """Random partitions, named again and again (new tuple objects each time, numbers out of order,
    and numbers Kafka never gives, which are kept apart): each gets one key and one tuple, the same
    objects every time; `by_key` finds the tuple of each key and nothing else; and the names take
    less than half the room of the two dicts they were (tuple -> key, key -> tuple)."""
    import random
    import tracemalloc

    rng = random.Random(3)
    names = PartitionNames()
    seen: dict[tuple[str, int], tuple[str, tuple[str, int]]] = {}
    for _ in range(3000):
        tp = ("".join(["topic-", str(rng.randint(0, 30))]), rng.choice([rng.randint(0, 40), rng.randint(0, 40), -1, 1 << 21]))
        key, shared = names.entry(tp)
        assert key == f"{tp[0]}:{tp[1]}" and shared == tp and names.key(tp) is key and names.shared(tp) is shared
        assert seen.setdefault(tp, (key, shared)) == (key, shared) and seen[tp][0] is key and seen[tp][1] is shared
        assert names.by_key[key] is shared
    assert len(names) == len(seen) == len(names.by_key) and sorted(names.by_key) == sorted(k for k, _ in seen.values())
    for missing in ("topic-0:9999", "nope:1", "topic-1:x", "topic-1", "topic-1:-2"):
        assert missing not in names.by_key
    tps = [(f"t{t}", p) for t in range(1000) for p in range(30)]
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        held = PartitionNames()
        for tp in tps:
            held.entry(tp)
        lists = tracemalloc.get_traced_memory()[0] - base
        del held
        base = tracemalloc.get_traced_memory()[0]
        by_tuple: dict[tuple[str, int], str] = {}
        by_key: dict[str, tuple[str, int]] = {}
        for name, p in tps:
            key, shared = f"{name}:{p}", (name, p)
            by_tuple[shared], by_key[key] = key, shared
        dicts = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    keys_and_tuples = len(tps) * (sys.getsizeof("t999:29") + sys.getsizeof(("t999", 29)))
    assert lists - keys_and_tuples < 0.5 * (dicts - keys_and_tuples), (lists, dicts, keys_and_tuples)


def test_a_groups_commits_are_compared_with_its_states_offsets_not_a_kept_copy() -> None:
    """The sampler keeps no copy of each group's committed offsets to compare the next answer with
    (58 MB of dicts at 50,000 groups): it reads the answer in the state's order and compares."""
    from operator import itemgetter

    from console.watcher.sampler import _same_commits

    offsets = {"a:0": 5, "a:1": 7, "b:0": 1}
    getter = itemgetter(("a", 0), ("a", 1), ("b", 0))
    assert _same_commits(getter, {("b", 0): 1, ("a", 1): 7, ("a", 0): 5}, offsets)  # any order
    assert not _same_commits(getter, {("b", 0): 1, ("a", 1): 8, ("a", 0): 5}, offsets)  # a commit
    assert not _same_commits(getter, {("b", 0): 1, ("a", 1): 7}, offsets)  # a partition fewer
    assert not _same_commits(getter, {("b", 0): 1, ("a", 1): 7, ("c", 0): 5}, offsets)  # another one
    assert not _same_commits(getter, {("b", 0): 1, ("a", 1): 7, ("a", 0): 5, ("c", 0): 0}, offsets)
    assert _same_commits(itemgetter(("a", 0)), {("a", 0): 5}, {"a:0": 5})
    assert not _same_commits(itemgetter(("a", 0)), {("a", 0): 6}, {"a:0": 5})
    assert _same_commits(None, {}, {}) and not _same_commits(None, {("a", 0): 1}, {})


def test_a_group_committed_as_before_keeps_its_state_and_a_new_commit_renews_it(redis_server: str) -> None:
    model, gw, partitions = small_cluster()
    with override_settings(ANALYTICS_SAMPLES=False):
        sampler = Sampler("same-test", gw, True, lambda rows: None)  # type: ignore[arg-type]
        first = sampler.take(partitions, [1, 2, 3]).groups
        again = sampler.take(partitions, [1, 2, 3]).groups
        assert first is not None and again is not None
        assert all(again[gid] is state for gid, state in first.items())  # nothing committed: the same states
        model.step(1.0, 1.0)
        moved = sampler.take(partitions, [1, 2, 3]).groups
        assert moved is not None
        renewed = [gid for gid, state in moved.items() if state is not first[gid]]
        assert renewed and all(moved[gid].offsets != first[gid].offsets for gid in renewed)
        assert all(moved[gid].offsets == first[gid].offsets for gid in moved if gid not in renewed)


def test_offsets_keep_no_key_per_partition_and_name_each_topic_with_the_shared_string(redis_server: str) -> None:
    """The end and start offsets keep no key per partition (an int64 array per topic:
    columns.OffsetColumns, as the sizes are SizeColumns), and name each topic with the one string
    the group states' shared tuples use, whatever new tuples the gateway answers with."""
    model, gw, partitions = small_cluster()
    with override_settings(ANALYTICS_SAMPLES=False):
        sampler = Sampler("keys-test", gw, True, lambda rows: None)  # type: ignore[arg-type]
        sample = sampler.take(partitions, [1, 2, 3])
        assert sample.sizes is not None and len(sample.ends) == 40
        ends, starts = sample.ends, sample.starts
        assert isinstance(ends, OffsetColumns) and isinstance(starts, OffsetColumns)
        assert set(ends) == set(starts) == set(sample.sizes) == set(partitions)
        for tp in partitions:
            shared = sampler.names.shared(tp)
            assert sampler.names.by_key[f"{tp[0]}:{tp[1]}"] is shared
            for offsets in (ends, starts):
                assert next(name for name in offsets._topics if name == tp[0]) is shared[0]
        model.step(1.0, 1.0)
        again = sampler.take(partitions, [1, 2, 3]).ends
        assert isinstance(again, OffsetColumns)
        assert all(next(name for name in again._topics if name == tp[0]) is sampler.names.shared(tp)[0] for tp in partitions)


def test_members_client_ids_and_hosts_are_shared_strings_across_groups(redis_server: str) -> None:
    """Each answer brings new strings for every member's client id and host (200,000 at 50,000
    groups), though a consumer's recur across its groups: the states keep one of each value."""
    model, gw, partitions = small_cluster()
    with override_settings(ANALYTICS_SAMPLES=False):
        sampler = Sampler("texts-test", gw, True, lambda rows: None)  # type: ignore[arg-type]
        groups = sampler.take(partitions, [1, 2, 3]).groups
        assert groups is not None
        members = [m for g in groups.values() for m in g.members]
        assert len(members) > 8 and len({m.host for m in members}) == 1  # (the model's: one host, "client-<i>")
        first = {m.client_id: m.client_id for m in members}
        assert all(first[m.client_id] is m.client_id for m in members)
        assert all(m.host is members[0].host for m in members)
        # A share-less group keeps no dict of its own for its broker lag.
        assert all(g.broker_lag == {} for g in groups.values())
        assert len({id(g.broker_lag) for g in groups.values()}) == 1


def test_a_groups_state_protocol_type_group_type_and_assignor_are_shared_strings(redis_server: str) -> None:
    """A handful of values across all groups, but each answer brings four new strings per group
    (a real gateway's are made from each response): the states keep one of each value."""
    from dataclasses import replace

    model, gw, partitions = small_cluster()
    fields = ("state", "protocol_type", "group_type", "assignor")
    described = gw.consumer_group_chunks

    def fresh(*args: object, **kwargs: object) -> Generator[list[object], None, None]:  # (new string objects, as a decoded answer has)
        for chunk in described(*args, **kwargs):
            yield [replace(g, **{f: "".join(list(getattr(g, f))) for f in fields}) for g in chunk]

    gw.consumer_group_chunks = fresh  # type: ignore[method-assign]
    with override_settings(ANALYTICS_SAMPLES=False):
        sampler = Sampler("fields-test", gw, True, lambda rows: None)  # type: ignore[arg-type]
        groups = list((sampler.take(partitions, [1, 2, 3]).groups or {}).values())
        assert len(groups) == 8
        for f in fields:
            assert len({getattr(g, f) for g in groups}) == 1  # (the model's: one value each)
            assert all(getattr(g, f) is getattr(groups[0], f) for g in groups), f


def test_member_texts_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    import console.watcher.partition_names as names_module

    monkeypatch.setattr(names_module, "TEXTS_MAX", 3)
    names = PartitionNames()
    a = "".join(["client", "-1"])
    assert names.text(a) is a and names.text("".join(["client", "-1"])) is a
    for i in range(3):
        names.text(f"other-{i}")
    b = "".join(["client", "-1"])
    assert names.text(b) is b  # forgotten once full: the next value starts afresh


def test_states_kept_per_group_and_member_have_no_attribute_dicts() -> None:
    """Slotted: 50,000 group states, 100,000 members and their rebalance trackers held an attribute
    dict each (about 50 MB of the sampling process at that scale)."""
    from console.snapshots.model import GroupState, MemberState
    from console.watcher.history import LagHistoryFilter
    from consumers_app.rebalance import Member, Observation, RebalanceTracker

    made = [GroupState("g", "Stable", "consumer", "classic", "range", [], {}), MemberState("m", "c", "h", ()),
            Member("c", "h", ()), Observation(0.0, "Stable", 1), RebalanceTracker()]
    filt = LagHistoryFilter()
    filt.select({"g": (1.0, 0, None)})
    filt.stored({"g": [(1.0, 0, None)]}, set())
    made.append(filt.runs["g"])
    for obj in made:
        assert not hasattr(obj, "__dict__"), type(obj).__name__


def test_replica_sizes_are_read_a_few_brokers_at_a_time_and_merged(redis_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """DescribeLogDirs is one request per broker anyway: the sampler asks SIZE_BROKERS brokers at a
    time, so no answer holds the whole cluster (118 MB at 300,000 partitions), and merges them."""
    import console.watcher.sampler as sampler_module
    from console.gateway.errors import ClusterUnavailable
    from console.snapshots.encoding import replica_sizes

    monkeypatch.setattr(sampler_module, "SIZE_BROKERS", 2)
    _model, gw, partitions = small_cluster(groups=2, brokers=5)
    whole = {tp: replica_sizes(r) for tp, r in gw.log_dir_sizes([1, 2, 3, 4, 5]).items()}
    asked: list[list[int]] = []
    read = gw.log_dir_sizes

    def counted(brokers: list[int]) -> dict[tuple[str, int], dict[int, int]]:
        asked.append(list(brokers))
        return read(brokers)

    monkeypatch.setattr(gw, "log_dir_sizes", counted)
    with override_settings(ANALYTICS_SAMPLES=False):
        sampler = Sampler("sizes-test", gw, True, lambda rows: None)  # type: ignore[arg-type]
        sample = sampler.take(partitions, [1, 2, 3, 4, 5])
        assert asked == [[1, 2], [3, 4], [5]]
        assert sample.sizes == whole and all(len(v) == 3 for v in whole.values())
        # One broker's read failing fails the sizes of the pass (the last ones are kept).
        sampler._next_sizes = 0.0

        def failing(brokers: list[int]) -> dict[tuple[str, int], dict[int, int]]:
            if 3 in brokers:
                raise ClusterUnavailable("broker 3 is away")
            return read(brokers)

        monkeypatch.setattr(gw, "log_dir_sizes", failing)
        again = sampler.take(partitions, [1, 2, 3, 4, 5])
        assert again.sizes is sample.sizes


def test_groups_committing_on_the_same_partitions_share_one_group_partitions_and_the_evaluation_uses_it(
        redis_server: str) -> None:
    from console.snapshots.encoding import Commits

    model, gw, partitions = small_cluster()  # 4 topics, 2 groups on each
    with override_settings(ANALYTICS_SAMPLES=False):
        sampler = Sampler("commits-test", gw, True, lambda rows: None)  # type: ignore[arg-type]
        groups = sampler.take(partitions, [1, 2, 3]).groups
        assert groups is not None
        a, b, other = groups["sim.group-000000"], groups["sim.group-000004"], groups["sim.group-000001"]
        assert isinstance(a.offsets, Commits) and isinstance(b.offsets, Commits) and isinstance(other.offsets, Commits)
        assert a.offsets.partitions is b.offsets.partitions  # one set of keys, tuples and getter for both
        assert a.offsets.partitions is not other.offsets.partitions
        committed = {f"{model.groups['sim.group-000000'][0]}:{p}": o for p, o in model.groups["sim.group-000000"][1].items()}
        assert dict(a.offsets.items()) == committed and a.offsets == committed
        # The evaluation's entries are the shared objects, not copies.
        entries = sampler.evaluator._entries_cache["sim.group-000000"]  # type: ignore[attr-defined]
        assert entries.keys is a.offsets.partitions.keys and entries.tps is a.offsets.partitions.tps
        assert entries.getter is a.offsets.partitions.getter and entries.committed is a.offsets.committed
        assert a.lag_keys is a.offsets.partitions.keys
        # Every group commits anew: new states, the same sets of partitions.
        model.step(1.0, 1.0)
        again = sampler.take(partitions, [1, 2, 3]).groups
        assert again is not None
        renewed = again["sim.group-000000"]
        assert isinstance(renewed.offsets, Commits) and renewed.offsets.partitions is a.offsets.partitions
        assert len(sampler._sets) == 0 and len(sampler._sets_in_use) == 4  # (one per topic, nothing else kept)


def test_a_set_of_partitions_no_group_commits_on_any_more_is_let_go(redis_server: str) -> None:
    model, gw, partitions = small_cluster()
    with override_settings(ANALYTICS_SAMPLES=False):
        sampler = Sampler("commits-gone", gw, True, lambda rows: None)  # type: ignore[arg-type]
        groups = sampler.take(partitions, [1, 2, 3]).groups
        assert groups is not None
        first_topic = groups["sim.group-000000"].offsets.partitions  # type: ignore[attr-defined]
        assert any(s is first_topic for s in sampler._sets_in_use.values())
        for gid in ("sim.group-000000", "sim.group-000004"):  # both groups on the first topic go away
            del model.groups[gid]
        sampler.take(partitions, [1, 2, 3])
        assert len(sampler._sets) == 0 and len(sampler._sets_in_use) == 3
        assert not any(s is first_topic for s in sampler._sets_in_use.values())


def test_a_groups_lag_columns_are_compact_unless_uniform(redis_server: str) -> None:
    from consumers_app.lag_values import LagSeconds, LagStatuses

    model, gw, partitions = small_cluster()
    with override_settings(ANALYTICS_SAMPLES=False):
        sampler = Sampler("lag-columns", gw, True, lambda rows: None)  # type: ignore[arg-type]
        sampler.take(partitions, [1, 2, 3])
        for _ in range(12):  # writes land, and the groups fall behind and commit at their pace
            model.step(1.0, 1.0)
            groups = sampler.take(partitions, [1, 2, 3]).groups
        assert groups is not None
        behind = [g for g in groups.values() if any(s != 0.0 for s in g.lag_seconds)]
        assert behind, "the model's groups fell behind"
        for g in groups.values():
            if any(s != 0.0 for s in g.lag_seconds):
                assert isinstance(g.lag_seconds, LagSeconds)
            else:
                assert type(g.lag_seconds) is list  # (one shared list of zeros per length)
            if all(s == "OK" for s in g.lag_status):
                assert type(g.lag_status) is list
            else:
                assert isinstance(g.lag_status, LagStatuses)


def test_members_with_equal_assignments_share_one_tuple_across_groups(redis_server: str) -> None:
    """The groups that read a topic with the same members' count and assignor are given the same
    lists of partitions: each is one tuple in the states kept (100,000 members' tuples were 18 MB at
    50,000 groups), whatever new tuples each answer brings."""
    model, gw, partitions = small_cluster(groups=24)  # 4 topics, 6 groups on each, of 1 + i % 3 members
    with override_settings(ANALYTICS_SAMPLES=False):
        sampler = Sampler("assign-test", gw, True, lambda rows: None)  # type: ignore[arg-type]
        groups = sampler.take(partitions, [1, 2, 3]).groups
        assert groups is not None
        a, b = groups["sim.group-000001"], groups["sim.group-000013"]  # both on the second topic, 2 members each
        assert [m.assignment for m in a.members] == [m.assignment for m in b.members]
        assert len(a.members) == 2 and all(len(m.assignment) > 1 for m in a.members)
        assert all(x.assignment is y.assignment for x, y in zip(a.members, b.members, strict=True))
        # Different lists stay different tuples, and each names the shared partition tuples.
        assert a.members[0].assignment is not a.members[1].assignment
        assert all(tp is sampler.names.shared((tp[0], tp[1])) for m in a.members for tp in m.assignment)
        # A renewed state (every group committed anew) still gets the same tuple.
        model.step(1.0, 1.0)
        again = sampler.take(partitions, [1, 2, 3]).groups
        assert again is not None
        renewed = again["sim.group-000001"]
        assert renewed is not a
        assert all(x.assignment is y.assignment for x, y in zip(renewed.members, a.members, strict=True))


def test_shared_assignments_are_bounded_and_forgotten_with_the_partition_tuples(monkeypatch: pytest.MonkeyPatch) -> None:
    import console.watcher.partition_names as names_module

    monkeypatch.setattr(names_module, "TEXTS_MAX", 3)
    names = PartitionNames()
    first = names.tps((("t", 0), ("t", 1)))
    assert names.tps((("t", 0), ("t", 1))) is first and first == (("t", 0), ("t", 1))
    for i in range(3):
        names.tps((("u", i),))
    fresh = names.tps((("t", 0), ("t", 1)))
    assert fresh == first and fresh is not first  # forgotten once full: started afresh
    for i in range(200_000):
        names.key(("x", i))
    names.bound(in_use=10)  # the partition tuples start afresh: so do the lists of them
    again = names.tps((("t", 0), ("t", 1)))
    assert again is not fresh and all(tp is names.shared(tp) for tp in again)


def test_a_group_whose_commits_alone_moved_keeps_its_members(redis_server: str) -> None:
    """A busy group commits every pass: its state is renewed with the new offsets, but described as
    before it keeps the members of the last one (not new objects for each, every pass)."""
    model, gw, partitions = small_cluster()
    with override_settings(ANALYTICS_SAMPLES=False):
        sampler = Sampler("members-kept", gw, True, lambda rows: None)  # type: ignore[arg-type]
        first = dict(sampler.take(partitions, [1, 2, 3]).groups or {})
        model.step(1.0, 1.0)  # groups commit anew; none joins or leaves
        second = dict(sampler.take(partitions, [1, 2, 3]).groups or {})
    moved = [gid for gid in first if second[gid].offsets != first[gid].offsets]
    assert moved and len(second) == len(first) == 8
    for gid in moved:
        assert second[gid] is not first[gid] and second[gid].members is first[gid].members
        assert dict(second[gid].offsets) == {f"{t}:{p}": o for (t, p), o in gw.group_offsets([gid])[gid].items()}
    # A group described differently (a member gone) is given new members.
    from dataclasses import replace

    chunks = gw.consumer_group_chunks

    def one_member_fewer(*args: object, **kwargs: object) -> Generator[list[object], None, None]:
        for chunk in chunks(*args, **kwargs):
            yield [replace(g, members=g.members[1:]) if g.group_id == moved[0] else g for g in chunk]

    gw.consumer_group_chunks = one_member_fewer  # type: ignore[method-assign]
    with override_settings(ANALYTICS_SAMPLES=False):
        third = dict(sampler.take(partitions, [1, 2, 3]).groups or {})
    assert third[moved[0]].members is not second[moved[0]].members
    assert [m.member_id for m in third[moved[0]].members] == [m.member_id for m in second[moved[0]].members][1:]
