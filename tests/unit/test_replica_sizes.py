"""A partition's replica sizes as the watcher's processes keep them (snapshot.ReplicaSizes) behave,
pickle and serialise as the dict they stand for."""

from __future__ import annotations

import pickle
from array import array

import orjson
import pytest

from console.snapshots.encoding import ReplicaSizes, replica_sizes, replica_sizes_of
from console.snapshots.model import PartitionState, Snapshot, TopicState
from console.snapshots.part_cache import TopicBytes
from console.snapshots.parts import topic_of_part


@pytest.mark.parametrize("answer", [{1: 10}, {1: 0, 2: 2**40, 3: 7}, {10: 5, 2: 6}])
def test_replica_sizes_are_the_mapping_replica_sizes_makes(answer: dict[int, int]) -> None:
    plain = replica_sizes(answer)
    compact = replica_sizes_of(tuple(plain), plain.values())
    assert isinstance(compact, ReplicaSizes)
    assert compact == plain and plain == compact and list(compact.items()) == list(plain.items())
    assert list(compact) == list(plain) and len(compact) == len(plain) and max(compact.values()) == max(plain.values())
    for k, v in plain.items():
        assert compact[k] == v and compact.get(k) == v and k in compact
    assert compact.get("999") is None and compact.get("999", -1) == -1 and "999" not in compact
    with pytest.raises(KeyError):
        compact["999"]
    assert compact != replica_sizes({**answer, 1: answer.get(1, 0) + 1})


def test_replica_sizes_share_their_broker_keys_and_keep_sharing_them_through_a_pickle() -> None:
    a, b = replica_sizes_of(("1", "2", "3"), [1, 2, 3]), replica_sizes_of(("1", "2", "3"), [4, 5, 6])
    assert a.brokers is b.brokers
    again = pickle.loads(pickle.dumps([a, b]))
    assert again == [a, b] and again[0].brokers is a.brokers and again[1].brokers is a.brokers
    # 8 bytes a size in one bytes object: no int objects, no array (about 30 bytes less a partition)
    assert type(a.sizes) is bytes and len(a.sizes) == 24 and again[1].sizes == b.sizes
    assert list(b.values()) == [4, 5, 6] and b["3"] == 6


def test_replica_sizes_hold_any_int64_and_refuse_a_count_that_is_not_the_brokers() -> None:
    big = replica_sizes_of(("1", "2"), [2**63 - 1, 0])
    assert big["1"] == 2**63 - 1 and dict(big.items()) == {"1": 2**63 - 1, "2": 0}
    assert replica_sizes_of(("1", "2"), big.sizes) == big
    with pytest.raises(ValueError, match="2 brokers but 3 sizes"):
        replica_sizes_of(("1", "2"), [1, 2, 3])


def test_a_partition_with_replica_sizes_serialises_as_with_the_dict() -> None:
    plain = {"1": 100, "2": 90}

    def topic(sizes: object) -> TopicState:
        return TopicState(name="t<'x'>", internal=False, partitions=[
            PartitionState(0, 1, [1, 2], [1, 2], [], 0, 5, 100, sizes)])  # type: ignore[arg-type]

    compact, with_dict = topic(replica_sizes_of(("1", "2"), [100, 90])), topic(dict(plain))
    assert TopicBytes().each({"t": compact}) == TopicBytes().each({"t": with_dict})
    assert Snapshot(cluster="c", topics={"t": compact}).content_bytes() == \
        Snapshot(cluster="c", topics={"t": with_dict}).content_bytes()
    read = topic_of_part(TopicBytes().each({"t": compact})["t"])
    assert read.partitions[0].replica_sizes == plain and isinstance(read.partitions[0].replica_sizes, dict)
    assert orjson.loads(Snapshot(cluster="c", topics={"t": compact}).to_json())["topics"]["t"]["partitions"][0][
        "replica_sizes"] == plain


def test_a_topic_serialises_its_partitions_replica_sizes_as_orjson_writes_their_dict() -> None:
    """TopicBytes writes each ReplicaSizes from a text kept per replica set (orjson.Fragment), its
    keys sorted as orjson sorts them (by their text: "10" before "2"): the bytes are those orjson
    writes for the dict, whatever the brokers' order, count and the sizes."""
    import random

    rng = random.Random(11)
    sets = [(), (1,), (3, 1, 2), (10, 2, 100), (2, 10), (1, 2, 3), (7, 70, 700, 7000, 8), tuple(range(40, 0, -1))]
    parts = []
    for _ in range(400):
        brokers = rng.choice(sets)
        sizes = [rng.choice([0, -1, 2**63 - 1, -(2**63), rng.randrange(10**12)]) for _ in brokers]
        parts.append((brokers, sizes))
    for round_ in range(2):  # (the second finds every replica set's text kept)
        compact = {"t": TopicState(name="t", internal=False, partitions=[
            PartitionState(i, b[0] if b else -1, list(b), list(b), [], 0, i, 5,
                           replica_sizes_of(tuple(str(x) for x in b), s)) for i, (b, s) in enumerate(parts)])}
        with_dict = {"t": TopicState(name="t", internal=False, partitions=[
            PartitionState(i, b[0] if b else -1, list(b), list(b), [], 0, i, 5,
                           {str(x): v for x, v in zip(b, s, strict=True)}) for i, (b, s) in enumerate(parts)])}
        assert TopicBytes().each(compact) == TopicBytes().each(with_dict), round_
        read = topic_of_part(TopicBytes().each(compact)["t"])
        assert [p.replica_sizes for p in read.partitions] == [{str(x): v for x, v in zip(b, s, strict=True)} for b, s in parts]


def test_replica_sizes_are_one_bytes_object_of_their_count_ids_and_sizes() -> None:
    """88 bytes a partition of three replicas (an object holding the keys and a bytes object of the
    sizes were two objects, 112): 7 MB of the watcher's process at 300,000 partitions."""
    import sys

    sizes = replica_sizes_of(("1", "2", "30"), [10, 2**40, 7])
    assert isinstance(sizes, bytes) and sys.getsizeof(sizes) <= 88
    assert bytes(sizes) == bytes([3]) + array("i", [1, 2, 30]).tobytes() + array("q", [10, 2**40, 7]).tobytes()
    assert sizes.brokers is replica_sizes_of(("1", "2", "30"), [1, 1, 1]).brokers  # (the keys' tuple shared)
    assert str(sizes) == repr(sizes) == "ReplicaSizes({'1': 10, '2': 1099511627776, '30': 7})"
    assert sizes != replica_sizes_of(("1", "2", "31"), [10, 2**40, 7]) and (sizes != dict(sizes.items())) is False  # (__ne__ too)  # noqa: SIM202
    assert bool(replica_sizes_of((), [])) is False and len(sizes) == 3
    with pytest.raises(ValueError, match="at most 255"):
        replica_sizes_of(tuple(str(b) for b in range(256)), range(256))
