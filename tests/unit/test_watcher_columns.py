"""The watcher's per-topic columns (console/watcher/columns.py) against plain dicts."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import pytest

from console.snapshots.encoding import ReplicaSizes
from console.watcher.columns import ListColumns, OffsetColumns, PackedOffsets, pack
from console.watcher.size_columns import PackedSizes, SizeColumns, unpack_sizes


def updated(columns: OffsetColumns, changes: Mapping[tuple[str, int], int]) -> OffsetColumns:
    """These values over the columns' (as the watcher's merger applies a pass's packed ones)."""
    return columns.updated_packed(pack(changes))


def changed_since(columns: SizeColumns, before: Mapping[tuple[str, int], Mapping[str, int]] | None) -> dict[
        tuple[str, int], ReplicaSizes]:
    """The changed partitions' sizes as mappings, as the watcher makes them from what a pass sends."""
    return unpack_sizes(columns.changed_packed(before))


def packed_count(packed: PackedOffsets | PackedSizes) -> int:
    """How many partitions packed values are of."""
    return sum(len(parts[0]) for parts in packed.values())


def _check(columns: object, reference: Mapping[tuple[str, int], object]) -> None:
    assert isinstance(columns, (OffsetColumns, ListColumns, SizeColumns))
    assert len(columns) == len(reference)
    assert dict(columns.items()) == reference
    assert columns == reference
    for (name, number), value in reference.items():
        assert columns[(name, number)] == value and columns.get((name, number)) == value and (name, number) in columns
    for missing in [("t-none", 0), ("t0", 10_000), ("t0", -1)]:
        if missing not in reference:
            assert columns.get(missing) is None and columns.get(missing, 7) == 7 and missing not in columns
            with pytest.raises(KeyError):
                columns[missing]


@pytest.mark.parametrize("seed", range(20))
def test_offset_columns_are_the_dict_of_every_change_so_far_and_never_change_once_made(seed: int) -> None:
    rng = random.Random(seed)
    columns, reference = OffsetColumns(), dict[tuple[str, int], int]()
    handed_out: list[tuple[OffsetColumns, dict[tuple[str, int], int]]] = []
    for _step in range(30):
        changes = {(f"t{rng.randrange(6)}", rng.randrange(12)): rng.choice([0, 1, rng.randrange(2**62)])
                   for _ in range(rng.randrange(0, 15))}
        before = columns
        columns = updated(columns, changes)
        reference = {**reference, **changes}
        _check(columns, reference)
        if not changes:
            assert columns is before  # (nothing new made)
        handed_out.append((columns, dict(reference)))
    for made, then in handed_out:
        assert dict(made.items()) == then  # what was handed out stayed as it was


@pytest.mark.parametrize("seed", range(10))
def test_list_columns_are_the_dict_of_every_change_so_far_and_share_unchanged_topics(seed: int) -> None:
    rng = random.Random(seed)
    columns: ListColumns[dict[str, int]] = ListColumns()
    reference: dict[tuple[str, int], dict[str, int]] = {}
    for _step in range(30):
        changes = {(f"t{rng.randrange(6)}", rng.randrange(12)): {"1": rng.randrange(100)} for _ in range(rng.randrange(0, 10))}
        before = columns
        columns = columns.updated(changes)
        reference = {**reference, **changes}
        _check(columns, reference)
        for key, value in changes.items():
            assert columns[key] is value  # the value itself is kept, not a copy
        touched = {name for name, _n in changes}
        for name in before._topics:
            if name not in touched:
                assert columns._topics[name] is before._topics[name]


def test_a_negative_partition_is_refused() -> None:
    with pytest.raises(ValueError):
        updated(OffsetColumns(), {("t", -1): 3})


def test_the_watchers_merger_keeps_offsets_and_sizes_by_topic_and_copies_only_the_topics_a_pass_changed() -> None:
    from console.watcher.delta_merge import DeltaMerger
    from console.watcher.deltas import SampleDelta

    def delta(full: bool, ends: dict[tuple[str, int], int], sizes: dict[tuple[str, int], dict[int, int]] | None) -> SampleDelta:
        return SampleDelta(full=full, started=1.0, ends=pack(ends), starts=pack({tp: 0 for tp in ends} if full else {}),
                           sizes=SizeColumns.read([sizes], None).changed_packed(None) if sizes is not None else None,
                           rates={}, groups=None, group_ids=None, groups_changed=False)

    merger = DeltaMerger()
    every = {(f"t{t}", p): 10 * t + p for t in range(3) for p in range(4)}
    first = merger.apply(delta(True, every, {tp: {3: 6, 1: 5} for tp in every}))
    assert set(first.changed) == set(every)
    second = merger.apply(delta(False, {("t1", 2): 99}, None))
    assert isinstance(first.ends, OffsetColumns) and isinstance(first.sizes, ListColumns)
    assert dict(second.ends.items()) == {**every, ("t1", 2): 99} and dict(first.ends.items()) == every
    assert second.sizes is first.sizes and second.starts is first.starts  # (nothing new read: the same)
    assert first.sizes is not None and first.sizes[("t1", 2)] == {"1": 5, "3": 6}
    assert isinstance(first.sizes[("t1", 2)], ReplicaSizes)  # (what the snapshot keeps: no dict)
    assert second.ends._topics["t0"] is first.ends._topics["t0"]  # type: ignore[attr-defined]
    assert second.ends._topics["t1"] is not first.ends._topics["t1"]  # type: ignore[attr-defined]
    third = merger.apply(delta(True, {("t9", 0): 1}, None))
    assert dict(third.ends.items()) == {("t9", 0): 1} and third.sizes is None  # a whole delta starts again


def _answer(rng: random.Random) -> dict[tuple[str, int], dict[int, int]]:
    """Sizes as the gateway answers them: by (topic, partition), then broker id (any order, any count)."""
    out = {}
    for t in range(4):
        for p in rng.sample(range(8), rng.randrange(1, 8)):
            brokers = rng.sample([1, 2, 3, 5, 8, 13], rng.randrange(1, 4))
            out[(f"t{t}", p)] = {b: rng.choice([0, 1, 7, 2**40]) for b in brokers}
    return out


def _split(answer: dict[tuple[str, int], dict[int, int]]) -> list[dict[tuple[str, int], dict[int, int]]]:
    """The answer as reads of a few brokers each (each broker in one read)."""
    reads: list[dict[tuple[str, int], dict[int, int]]] = [{}, {}, {}]
    for tp, replicas in answer.items():
        for b, n in replicas.items():
            reads[b % 3].setdefault(tp, {})[b] = n
    return reads


@pytest.mark.parametrize("seed", range(20))
def test_size_columns_equal_the_mappings_the_snapshot_keeps_and_say_what_changed(seed: int) -> None:
    from console.snapshots.encoding import replica_sizes

    rng = random.Random(seed)
    before: SizeColumns | None = None
    reference_before: dict[tuple[str, int], dict[str, int]] = {}
    answer = _answer(rng)
    for step in range(6):
        if step and rng.random() < 0.5:
            answer = _answer(rng)
        elif step:  # a few partitions grow
            answer = {tp: ({b: n + 1 for b, n in r.items()} if rng.random() < 0.2 else r) for tp, r in answer.items()}
        columns = SizeColumns.read(iter(_split(answer)), before)
        reference = {tp: replica_sizes(r) for tp, r in answer.items()}
        _check(columns, reference)
        for tp, mapping in reference.items():
            assert list(columns[tp].items()) == list(mapping.items())  # (in broker order)
            assert isinstance(columns[tp], ReplicaSizes)  # (what the watcher is sent and keeps: no dict)
            assert columns.largest(tp) == max(mapping.values())
        assert columns.largest(("t0", 99)) is None
        changed = {tp: v for tp, v in reference.items() if reference_before.get(tp) != v}
        assert changed_since(columns, before) == changed
        assert sorted(columns.changed_keys(before)) == sorted(changed)
        packed = columns.changed_packed(before)  # (as a pass sends them: arrays by topic)
        assert unpack_sizes(packed) == changed and packed_count(packed) == len(changed)
        assert all(isinstance(v, ReplicaSizes) for v in unpack_sizes(packed).values())
        assert sorted(columns.changed_keys(reference_before)) == sorted(changed) == sorted(changed_since(columns, reference_before))
        assert changed_since(columns, reference_before) == changed  # (against a plain mapping too)
        if before is not None:
            for name, arrays in columns._topics.items():
                unchanged = not any(tp[0] == name for tp in changed) and \
                    {tp for tp in reference if tp[0] == name} == {tp for tp in reference_before if tp[0] == name}
                if unchanged:
                    assert arrays is before._topics[name]  # equal sizes keep the arrays before
        before, reference_before = columns, reference


def test_analytics_takes_the_largest_replica_from_size_columns_as_from_mappings() -> None:
    from analytics.sampling import build_records
    from console.snapshots.encoding import replica_sizes

    answer = {("a", 0): {1: 10, 2: 30}, ("a", 2): {3: 5}, ("b", 0): {1: 7}}
    ends = {("a", 0): 100, ("a", 1): 50, ("a", 2): 9, ("b", 0): 1}
    columns = SizeColumns.read([answer], None)
    plain = {tp: replica_sizes(r) for tp, r in answer.items()}
    assert build_records("c", 1.0, ends, columns, None) == build_records("c", 1.0, ends, plain, None)


def unpack(packed: PackedOffsets) -> dict[tuple[str, int], int]:
    return {(name, n): v for name, (numbers, values) in packed.items() for n, v in zip(numbers, values, strict=True)}


@pytest.mark.parametrize("seed", range(10))
def test_offsets_packed_by_topic_are_the_changes(seed: int) -> None:
    rng = random.Random(seed)
    old = {(f"t{rng.randrange(5)}", rng.randrange(9)): rng.randrange(2**40) for _ in range(30)}
    new = {**old, **{(f"t{rng.randrange(7)}", rng.randrange(9)): rng.randrange(2**40) for _ in range(10)}}
    assert unpack(pack(new)) == new and packed_count(pack(new)) == len(new)
    assert unpack(pack(new, old)) == {tp: v for tp, v in new.items() if old.get(tp) != v}
    assert pack(old, old) == {}


def test_the_merger_keeps_one_list_of_topics_for_the_groups_that_read_the_same_topics(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each delta brings a new list and new strings per changed group (unpickled): the merger keeps
    one list per distinct list of topics, with one string per name."""
    import pickle

    from console.watcher import delta_merge
    from console.watcher.deltas import SampleDelta

    def delta(groups: dict[str, tuple[bytes, list[str]]], ids: list[str] | None) -> SampleDelta:
        made = SampleDelta(full=False, started=1.0, ends={}, starts={}, sizes=None, rates={}, groups=groups,
                              group_ids=ids, groups_changed=True)
        return pickle.loads(pickle.dumps(made))  # (as it arrives: new objects)

    merger = delta_merge.DeltaMerger()
    one = merger.apply(delta({f"g{i}": (b"{}", ["orders", "pay<ments>"]) for i in range(3)} | {"h": (b"{}", ["logs"])},
                             ["g0", "g1", "g2", "h"])).group_topics
    assert one is not None and one["g0"] == ["orders", "pay<ments>"] and one["h"] == ["logs"]
    assert one["g0"] is one["g1"] is one["g2"] and one["h"] is not one["g0"]
    two = merger.apply(delta({"g1": (b'{"x":1}', ["orders", "pay<ments>"]), "g9": (b"{}", ["orders"])}, None)).group_topics
    assert two is not None and two["g1"] is one["g0"] and two["g0"] is one["g0"] and two["g9"] == ["orders"]
    assert two["g9"][0] is one["g0"][0]  # (one string per name)
    monkeypatch.setattr(delta_merge, "TOPIC_LISTS_MAX", 1)  # bounded: forgotten all at once when a new list finds it full
    merger.apply(delta({"g5": (b"{}", ["x"])}, None))
    three = merger.apply(delta({"g2": (b"{}", ["orders", "pay<ments>"])}, None)).group_topics
    assert three is not None and three["g2"] == ["orders", "pay<ments>"] and three["g2"] is not one["g0"]


def test_a_mapping_packed_against_itself_is_nothing_and_one_value_changed_is_that_value() -> None:
    # (a pass whose offsets read failed hands out the last pass's mapping again: nothing changed)
    last = {("pay<ments>/é", 0): 5, ("pay<ments>/é", 1): 7, ("b", 0): 1}
    assert pack(last, last) == {}
    packed = pack({**last, ("b", 0): 2}, last)
    assert list(packed) == ["b"] and list(packed["b"][0]) == [0] and list(packed["b"][1]) == [2]


def test_the_merger_renews_each_groups_part_in_place_as_its_piece_arrives_and_the_set_of_groups_only_with_the_delta() -> None:
    """A pass's changed groups replace their part in the object handed out, piece by piece (not
    gathered next to the last pass's until the delta); groups come and go, and the topics they read
    change, only with the delta. The parts are held only until a save wrote them (their digests
    stay)."""
    import sys

    from console.snapshots.store import GroupParts, digest
    from console.watcher import delta_merge
    from console.watcher.deltas import SampleDelta

    class Part(bytes):  # (bytes the test can tell apart from equal ones)
        pass

    def delta(groups: dict[str, tuple[bytes, list[str]]], ids: list[str] | None, full: bool = False) -> SampleDelta:
        return SampleDelta(full=full, started=1.0, ends={}, starts={}, sizes=None, rates={}, groups=groups,
                              group_ids=ids, groups_changed=True)

    def digests(parts: GroupParts) -> dict[str, int]:
        return parts.taken()[0]

    merger = delta_merge.DeltaMerger()
    first = merger.apply(delta({"a": (Part(b"a1"), ["orders"]), "pay<ments>/é": (Part(b"p1"), ["pay"])}, ["a", "pay<ments>/é"],
                               full=True))
    parts, topics = first.group_parts, first.group_topics
    assert parts is not None and parts.held() == {"g:a": b"a1", "g:pay<ments>/é": b"p1"}
    assert digests(parts) == {"g:a": digest(b"a1"), "g:pay<ments>/é": digest(b"p1")}
    assert topics == {"a": ["orders"], "pay<ments>/é": ["pay"]}
    old = parts.held()["g:a"]
    assert sys.getrefcount(old) > 2  # (held by the merger's parts, besides this test)
    # The next pass: a piece renews "a" and brings "new" (reading other topics now), the delta the rest.
    merger.apply_piece({"a": (Part(b"a2"), ["orders", "logs"]), "new": (Part(b"n1"), ["x"])})
    assert sys.getrefcount(old) == 2  # the last pass's JSON of "a" is let go at once: only this test holds it
    assert parts.held() == {"g:a": b"a2", "g:pay<ments>/é": b"p1", "g:new": b"n1"}  # in the object handed out
    assert first.group_topics is topics and topics == {"a": ["orders"], "pay<ments>/é": ["pay"]}  # topics wait
    # A save wrote what it took: the parts are let go of, their digests stay.
    _digests, taken, _ahead = parts.taken()
    parts.written(taken)
    assert parts.held() == {} and len(parts) == 3 and digests(parts)["g:a"] == digest(b"a2")
    second = merger.apply(delta({"pay<ments>/é": (b"p2", ["pay"])}, ["a", "pay<ments>/é", "new"]))
    assert second.group_parts is parts and parts.held() == {"g:pay<ments>/é": b"p2"}
    assert digests(parts) == {"g:a": digest(b"a2"), "g:pay<ments>/é": digest(b"p2"), "g:new": digest(b"n1")}
    assert second.group_topics == {"a": ["orders", "logs"], "pay<ments>/é": ["pay"], "new": ["x"]}
    assert topics == {"a": ["orders"], "pay<ments>/é": ["pay"]}  # (the topics handed out are never changed)
    # A pass in which "new" is gone: its pieces first, then the delta leaves it out.
    merger.apply_piece({"a": (b"a3", ["orders", "logs"])})
    third = merger.apply(delta({}, ["a", "pay<ments>/é"]))
    assert parts.held() == {"g:a": b"a3", "g:pay<ments>/é": b"p2"}
    assert digests(parts) == {"g:a": digest(b"a3"), "g:pay<ments>/é": digest(b"p2")}
    assert third.group_topics == {"a": ["orders", "logs"], "pay<ments>/é": ["pay"]}
    # A save that took "a" while a newer part of it came keeps the newer one.
    _digests, taken, _ahead = parts.taken()
    merger.apply_piece({"a": (b"a4", ["orders"])})
    parts.written(taken)
    assert parts.held() == {"g:a": b"a4"}
    # A pass that changed groups but not their set: the topics of those changed.
    fourth = merger.apply(delta({"pay<ments>/é": (b"p3", ["pay"])}, None))
    assert fourth.group_parts is parts and parts.held() == {"g:a": b"a4", "g:pay<ments>/é": b"p3"}
    assert fourth.group_topics == {"a": ["orders"], "pay<ments>/é": ["pay"]} and fourth.group_topics is not third.group_topics
    # Nothing changed: the same objects again.
    fifth = merger.apply(delta({}, None))
    assert fifth.group_parts is fourth.group_parts and fifth.group_topics is fourth.group_topics
    # Groups that could not be read: the last ones stay (None handed out: the watcher keeps its own).
    assert merger.apply(SampleDelta(
        full=False, started=2.0, ends={}, starts={}, sizes=None, rates={}, groups=None, group_ids=None,
        groups_changed=False)).group_parts is None
    assert merger.group_parts is parts and parts.held() == {"g:a": b"a4", "g:pay<ments>/é": b"p3"}


def test_a_new_sampling_processs_first_pass_holds_only_the_groups_it_brought() -> None:
    from console.watcher import delta_merge
    from console.watcher.deltas import SampleDelta

    merger = delta_merge.DeltaMerger()
    merger.apply_piece({"a": (b"a1", ["t"]), "b": (b"b1", ["t"])})
    one = merger.apply(SampleDelta(full=True, started=1.0, ends={}, starts={}, sizes=None, rates={},
                                      groups={"c": (b"c1", ["u"])}, group_ids=["a", "b", "c"], groups_changed=True))
    assert one.group_parts is not None and one.group_parts.held() == {"g:a": b"a1", "g:b": b"b1", "g:c": b"c1"}
    assert one.group_topics == {"a": ["t"], "b": ["t"], "c": ["u"]}
    # (a whole pass again, as a process started anew sends it: what it did not bring is gone)
    merger.apply_piece({"b": (b"b2", ["t"])})
    two = merger.apply(SampleDelta(full=True, started=2.0, ends={}, starts={}, sizes=None, rates={},
                                      groups={}, group_ids=["b"], groups_changed=True))
    assert two.group_parts is not None and two.group_parts.held() == {"g:b": b"b2"} and len(two.group_parts) == 1
    assert two.group_topics == {"b": ["t"]}


def test_group_parts_say_when_they_hold_every_part() -> None:
    """What a save that writes everything needs (GroupParts.complete), and a part renewed between a
    save's taking and its writing kept for the next save."""
    from console.snapshots.store import GroupParts, digest

    parts = GroupParts()
    parts.put([("g:a", b"a1"), ("g:b", b"b1")])
    digests, held, _ahead = parts.taken()
    assert GroupParts.complete(digests, held) and digests == {"g:a": digest(b"a1"), "g:b": digest(b"b1")}
    parts.written(held)
    digests, held, _ahead = parts.taken()
    assert not GroupParts.complete(digests, held) and held == {} and len(parts) == 2
    parts.put([("g:b", b"b2")])
    digests, held, _ahead = parts.taken()
    assert not GroupParts.complete(digests, held) and held == {"g:b": b"b2"}
    parts.put([("g:a", b"a1")])  # (sent again: every group)
    digests, held, _ahead = parts.taken()
    assert GroupParts.complete(digests, held)
    parts.keep(["g:b", "g:gone"])  # (a group named but never sent is not made up)
    assert parts.taken() == ({"g:b": digest(b"b2")}, {"g:b": b"b2"}, set())


def test_group_parts_write_ahead_only_groups_whose_last_part_is_in_redis_and_hold_them_when_redis_refuses() -> None:
    """With a writer (the store holds the last snapshot whole), a part for a group whose last part
    was written goes to Redis at once and only its digest stays, named as written ahead until a
    save took it; a new group's part, and one for a group whose part is held (a save may be writing
    the older one), are held; parts Redis refuses are held; without a writer everything is held."""
    from console.snapshots.store import GroupParts, StoreUnavailable, digest

    redis: dict[str, bytes] = {}
    refuse = [False]

    def writer(parts: dict[str, bytes]) -> None:
        if refuse[0]:
            raise StoreUnavailable("Redis is unreachable (test)")
        redis.update(parts)

    parts = GroupParts()
    parts.direct(writer)
    parts.put([("g:a", b"a1"), ("g:b", b"b1")])  # (new groups: held for the save)
    assert redis == {} and parts.held() == {"g:a": b"a1", "g:b": b"b1"}
    digests, held, ahead = parts.taken()
    parts.put([("g:b", b"b2")])  # (held: the save taken may be writing b1)
    parts.written(held, ahead)  # (the save wrote a1 and b1)
    assert parts.held() == {"g:b": b"b2"} and redis == {}
    parts.put([("g:a", b"a2"), ("g:b", b"b3")])
    assert redis == {"g:a": b"a2"} and parts.held() == {"g:b": b"b3"}
    digests, held, ahead = parts.taken()
    assert digests == {"g:a": digest(b"a2"), "g:b": digest(b"b3")} and ahead == {"g:a"}
    parts.written(held, ahead)
    assert parts.taken() == ({"g:a": digest(b"a2"), "g:b": digest(b"b3")}, {}, set())
    refuse[0] = True
    parts.put([("g:a", b"a3")])  # (Redis refuses it: held, for the save)
    assert redis == {"g:a": b"a2"} and parts.held() == {"g:a": b"a3"} and parts.taken()[0]["g:a"] == digest(b"a3")
    refuse[0] = False
    parts.written(parts.held())
    parts.direct(None)  # (the next save writes everything: every part arriving is held)
    parts.put([("g:a", b"a4"), ("g:b", b"b4")])
    assert redis == {"g:a": b"a2"} and parts.held() == {"g:a": b"a4", "g:b": b"b4"}


@pytest.mark.parametrize("seed", range(20))
def test_a_pass_offsets_answer_as_arrays_is_the_answer_and_a_groups_partitions_read_from_it_are_its_values(seed: int) -> None:
    """PassOffsets (what a sampling pass keeps of the gateway's dict) says what the dict says, with
    the shared tuples asked with as its keys (the same list when every partition answered); a
    group's partitions read from it a topic at a time (consumers_app.group_entries.GroupEntries) give the
    dict's values, None or KeyError where it has none."""
    from array import array

    from console.snapshots.encoding import Commits, GroupPartitions
    from console.watcher.pass_offsets import PassOffsets, topic_runs
    from consumers_app.group_entries import GroupEntries

    rng = random.Random(seed)
    asked = [(f"t{k}", p) for k in range(rng.randint(1, 4)) for p in rng.sample(range(12), rng.randint(1, 8))]
    if seed % 5 == 4:
        asked += [(asked[0][0], 20)]  # (a topic asked for in two runs)
    answer = {tp: rng.randint(0, 10**12) for tp in asked if rng.random() < (1.0 if seed % 2 else 0.8)}
    got = PassOffsets.of(asked, topic_runs(asked), answer)
    assert dict(got.items()) == answer and dict(got) == answer and len(got) == len(answer)
    assert all(got.get(tp) == answer.get(tp) for tp in asked) and got.get(("nope", 0)) is None
    assert (got.keys_ is asked) == (len(answer) == len(asked))
    for _ in range(10):
        tps = tuple(sorted(rng.sample(asked, rng.randint(1, len(asked))) + ([("gone", 3)] if rng.random() < 0.2 else [])))
        committed = array("q", [answer.get(tp, 7) if rng.random() < 0.7 else rng.randint(0, 9) for tp in tps])
        entries = GroupEntries(Commits(GroupPartitions(tuple(f"{t}:{p}" for t, p in tps), tps), committed), {}, {})
        assert entries.ends(got) == [answer.get(tp) for tp in tps]
        if all(tp in answer for tp in tps):
            assert entries.at_end(got) == (list(committed) == [answer[tp] for tp in tps])
        else:
            with pytest.raises(KeyError):
                entries.at_end(got)


def test_a_pass_offsets_answer_refuses_a_partition_number_below_zero() -> None:
    from console.watcher.pass_offsets import PassOffsets, topic_runs

    with pytest.raises(ValueError, match="below 0"):
        PassOffsets.of([("t", -1)], topic_runs([("t", -1)]), {("t", -1): 5})


@pytest.mark.parametrize("seed", range(30))
def test_a_pass_offsets_answer_shares_the_last_answers_array_of_each_topic_whose_values_are_as_they_were(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over passes of random answers (values kept or moved, partitions left out, a topic asked for
    in two runs): PassOffsets.of with the last answer says what it says without it; a topic keeps
    the last answer's array (the same object) exactly when the last answer was whole for the same
    partitions, the topic has one run and every one of its values is present and as it was; the
    merge of the answer's columns equals the merge of its dict; and a group found at the end of its
    partitions is found so again, without reading them, while their arrays are the same objects."""
    from array import array

    from console.snapshots.encoding import Commits, GroupPartitions
    from console.watcher.pass_offsets import PassOffsets, topic_runs
    from consumers_app import group_entries
    from consumers_app.group_entries import GroupEntries

    rng = random.Random(seed)
    asked = [(f"t{k}", p) for k in range(rng.randint(1, 5)) for p in range(rng.randint(1, 8))]
    if seed % 6 == 5:
        asked += [(asked[0][0], 20)]  # (a topic asked for in two runs)
    runs = topic_runs(asked)
    two_runs = len({run[0] for run in runs}) != len(runs)
    values = {tp: rng.randint(0, 10**9) for tp in asked}
    previous: PassOffsets | None = None
    merged = merged_plain = None
    tps = tuple(sorted({tp for tp in asked if tp[0] == asked[0][0]}))
    entries = None
    reads = [0]
    real_read = group_entries.read_partitions

    def counted(*args: object) -> object:
        reads[0] += 1
        return real_read(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(group_entries, "read_partitions", counted)
    shared_seen = 0
    for _ in range(8):
        for tp in asked:
            if rng.random() < 0.15:
                values[tp] += rng.randint(1, 100)
        whole = rng.random() < 0.7
        answer = {tp: v for tp, v in values.items() if whole or rng.random() < 0.8}
        got = PassOffsets.of(asked, runs, answer, previous)
        alone = PassOffsets.of(asked, runs, answer)
        assert dict(got) == dict(alone) == answer and len(got) == len(alone)
        assert dict(got.columns) == dict(alone.columns) and list(got.keys_) == list(alone.keys_)
        for name in {tp[0] for tp in asked}:
            mine = [tp for tp in asked if tp[0] == name]
            same = (previous is not None and previous.keys_ is asked and not two_runs
                    and all(tp in answer and previous.get(tp) == answer[tp] for tp in mine))
            shared = previous is not None and got.columns._topics.get(name) is previous.columns._topics.get(name)
            assert shared == same, (name, same)
            shared_seen += shared
        next_merged = OffsetColumns.merged(merged, got.columns)
        next_plain = OffsetColumns.merged(merged_plain, dict(got))
        assert dict(next_merged) == dict(next_plain) and len(next_merged) == len(next_plain)
        merged, merged_plain = next_merged, next_plain
        # A group committed at this pass's values of the first topic's partitions
        if entries is None and all(tp in answer for tp in tps):
            entries = GroupEntries(Commits(GroupPartitions(tuple(f"{t}:{p}" for t, p in tps), tps),
                                       array("q", [answer[tp] for tp in tps])), {}, {})
        if entries is not None:
            reads[0] = 0
            expected: bool | None = (all(tp in answer for tp in tps)
                                     and [answer[tp] for tp in tps] == list(entries.committed))
            unread = entries.at_end_of is not None and got.columns._topics.get(tps[0][0]) is entries.at_end_of[0]
            if not all(tp in answer for tp in tps):
                with pytest.raises(KeyError):
                    entries.at_end(got)
            else:
                assert entries.at_end(got) == expected
            assert reads[0] == (0 if unread else 1)
        previous = got
    if seed % 6 != 5 and seed < 12:
        assert shared_seen or not previous  # (some seeds do keep arrays: the case is exercised)


def test_a_topic_answered_as_before_keeps_its_size_arrays_without_making_them_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A topic whose replicas' sizes come back as in the read before, in the same order, keeps that
    read's arrays without sorting or laying out its rows again (an idle cluster's topics, every 15
    s); in another order it is laid out and, equal, keeps them all the same; changed, it has new ones."""
    import numpy as np

    from console.snapshots.encoding import replica_sizes

    answer = {("a", 0): {1: 10, 2: 30}, ("a", 1): {2: 5, 3: 6}, ("b", 0): {1: 7}, ("b", 2): {3: 8}}
    first = SizeColumns.read([answer], None)
    real_lexsort = np.lexsort
    sorted_topics: list[int] = []

    def counted(keys: object) -> object:
        sorted_topics.append(1)
        return real_lexsort(keys)  # type: ignore[arg-type]

    monkeypatch.setattr(np, "lexsort", counted)
    again = SizeColumns.read(iter(_split(answer)), first)  # (the same replicas, read a few brokers at a time: another order)
    assert len(sorted_topics) == 2 and all(again._topics[n] is first._topics[n] for n in ("a", "b"))
    sorted_topics.clear()
    same = SizeColumns.read([answer], again)  # (in the first read's order again: not the last read's)
    assert len(sorted_topics) == 2 and all(same._topics[n] is first._topics[n] for n in ("a", "b"))
    sorted_topics.clear()
    same = SizeColumns.read([answer], same)  # (as the read before, in its order)
    assert sorted_topics == [] and all(same._topics[n] is first._topics[n] for n in ("a", "b"))
    assert len(same) == len(first) == 4 and {tp: same[tp] for tp in answer} == {tp: replica_sizes(r) for tp, r in answer.items()}
    grown = SizeColumns.read([{**answer, ("a", 1): {2: 5, 3: 7}}], same)
    assert sorted_topics == [1] and grown._topics["b"] is first._topics["b"] and grown._topics["a"] is not first._topics["a"]
    assert grown[("a", 1)] == replica_sizes({2: 5, 3: 7})


def test_group_parts_name_every_group_whose_digest_changed_since_they_were_last_taken() -> None:
    """What a watcher's content takes of the groups' digests (GroupParts.changes_taken): the digests
    as `taken` gives them, and the groups put in, renewed (held, written ahead, or held when Redis
    refused them) or gone since the last call. The digests of the call before with those groups'
    put in are the digests now, over random sequences of what the sampling thread and the cycles do."""
    import random

    from console.snapshots.store import GroupParts, StoreUnavailable

    refuse = [False]

    def writer(parts: dict[str, bytes]) -> None:
        if refuse[0]:
            raise StoreUnavailable("Redis is unreachable (test)")

    for seed in range(40):
        rng = random.Random(seed)

        parts = GroupParts()
        mirror: dict[str, int] = {}
        names = [f"g:{i}" for i in range(8)]
        for step in range(60):
            roll = rng.random()
            refuse[0] = rng.random() < 0.2
            if roll < 0.15:
                parts.direct(writer if rng.random() < 0.7 else None)
            elif roll < 0.6:
                parts.put([(name, f"{name}-{rng.randrange(4)}".encode()) for name in rng.sample(names, rng.randrange(1, 5))])
            elif roll < 0.7:
                parts.keep(rng.sample(names, rng.randrange(0, 8)))
            elif roll < 0.8:
                _digests, held, ahead = parts.taken()
                parts.written(held, ahead)
            else:
                digests, held, ahead, touched = parts.changes_taken()
                for name in touched:
                    if name in digests:
                        mirror[name] = digests[name]
                    else:
                        mirror.pop(name, None)
                assert mirror == digests, (seed, step)
                assert (digests, held, ahead) == parts.taken()
                if rng.random() < 0.5:
                    parts.written(held, ahead)


def test_topic_bytes_name_every_part_serialised_anew_or_gone_since_they_were_last_asked() -> None:
    """TopicBytes.take_touched: the digests of the parts `each` gave out before, with those of the
    names it names put in (or taken out), are the digests of what it gives out now, over random
    topics added, changed, left as they were and deleted; and what `each` gives out, the same names
    or not as the call before, is what a new cache gives."""
    import random
    from dataclasses import replace

    from console.snapshots.model import PartitionState, TopicState
    from console.snapshots.part_cache import TopicBytes
    from console.snapshots.store import digests_of

    def _topic_state(name: str, partitions: int, end: int) -> TopicState:
        return TopicState(name, False, [PartitionState(p, 1, [1, 2], [1, 2], [], 0, end + p, None, {}) for p in range(partitions)])

    rng = random.Random(5)
    topics: dict[str, Any] = {}
    cache = TopicBytes()
    mirror: dict[str, int] = {}
    last: dict[str, Any] = {}
    for step in range(200):
        for _ in range(rng.randrange(0, 4)):
            name = f"t{rng.randrange(12)}"
            roll = rng.random()
            if roll < 0.3:
                topics.pop(name, None)
            elif name in topics and roll < 0.5:
                topics[name] = replace(topics[name])  # (an equal copy: serialised again, the same JSON)
            else:
                topics[name] = _topic_state(name, rng.randrange(1, 4), rng.randrange(1, 50))
        out = cache.each(topics, "t:")
        # (only the topics not the same objects as in the call before are serialised)
        assert cache.serialised == sum(1 for name, t in topics.items() if last.get(name) is not t), step
        last = dict(topics)
        # (what a cache that saw nothing before gives, in the same order)
        assert list(out.items()) == list(TopicBytes().each(topics, "t:").items()), step
        if rng.random() < 0.6:
            for key in cache.take_touched() or ():
                if key in out:
                    mirror[key] = hash(out[key])
                else:
                    mirror.pop(key, None)
            assert mirror == digests_of(out), step


def test_topic_bytes_nobody_asks_stop_listing_what_they_serialised_and_say_all_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache whose names nobody takes (the groups' in the watcher's own process) holds no growing
    list: past TOUCHED_MAX it says "all" (None) when asked, then lists again."""
    from console.snapshots.model import PartitionState, TopicState
    from console.snapshots.part_cache import TopicBytes

    monkeypatch.setattr(TopicBytes, "TOUCHED_MAX", 10)
    cache = TopicBytes()

    def topics(end: int) -> dict[str, TopicState]:
        return {f"t{i}": TopicState(f"t{i}", False, [PartitionState(0, 1, [1], [1], [], 0, end, None, {})]) for i in range(4)}

    cache.each(topics(1), "t:")
    cache.each(topics(2), "t:")
    assert cache.take_touched() == ["t:t0", "t:t1", "t:t2", "t:t3"] * 2
    for end in range(3, 6):
        cache.each(topics(end), "t:")
    assert cache._touched is None and cache.take_touched() is None
    cache.each(topics(6), "t:")
    assert cache.take_touched() == ["t:t0", "t:t1", "t:t2", "t:t3"]
