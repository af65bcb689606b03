"""A group's committed offsets as the sampling process keeps them (snapshot.Commits) behave, and
serialise, as the dict they stand for."""

from __future__ import annotations

from array import array

import orjson
import pytest

from console.snapshots.encoding import Commits, GroupPartitions
from console.snapshots.model import GroupState, MemberState, Snapshot
from console.snapshots.parts import group_of_part, group_part, part_json


def _commits(offsets: dict[str, int]) -> Commits:
    tps = tuple((k.rpartition(":")[0], int(k.rpartition(":")[2])) for k in offsets)
    return Commits(GroupPartitions(tuple(offsets), tps), array("q", offsets.values()))


@pytest.mark.parametrize("offsets", [{}, {"a:0": 5}, {"a:0": 5, "a:1": 0, "b.c-d:12": 2**62}])
def test_commits_are_the_mapping_they_stand_for(offsets: dict[str, int]) -> None:
    c = _commits(offsets)
    assert len(c) == len(offsets) and list(c) == list(offsets) and bool(c) == bool(offsets)
    assert dict(c.items()) == offsets and tuple(c.values()) == tuple(offsets.values())
    assert c == offsets and offsets == c and c == _commits(dict(offsets))
    for k, v in offsets.items():
        assert c[k] == v and k in c and c.get(k) == v
    assert "zz:0" not in c and c.get("zz:0") is None and 3 not in c
    with pytest.raises(KeyError):
        c["zz:0"]
    if offsets:
        assert c != _commits({**offsets, "a:0": offsets["a:0"] + 1})
        assert c.partitions.getter is not None
    assert c != {**offsets, "x:9": 1}


def test_a_group_with_commits_serialises_as_the_same_group_with_a_dict() -> None:
    offsets = {"b:1": 7, "a:0": 3}
    member = MemberState("m-1", "client <x>", "/10.0.0.1", (("a", 0), ("b", 1)))

    def group(o: object) -> GroupState:
        return GroupState(group_id="g/%1", state="Stable", protocol_type="consumer", group_type="classic", assignor="range",
                          members=[member], offsets=o, status="OK", lag_keys=("b:1", "a:0"),  # type: ignore[arg-type]
                          lag_status=["OK", "OK"], lag_seconds=[0.0, 0.0])

    with_commits, with_dict = group(_commits(offsets)), group(dict(offsets))
    assert part_json(group_part(with_commits)) == part_json(group_part(with_dict))
    read = group_of_part(group_part(with_commits))
    assert read.offsets == offsets and isinstance(read.offsets, dict)
    snap = Snapshot(cluster="c", groups={"g/%1": with_commits})
    assert orjson.loads(snap.to_json())["groups"]["g/%1"]["offsets"] == {"a:0": 3, "b:1": 7}
    assert snap.content_bytes() == Snapshot(cluster="c", groups={"g/%1": with_dict}).content_bytes()


def test_commits_tell_whether_what_a_getter_read_holds_their_offsets() -> None:
    two, one = _commits({"a:0": 5, "a:1": 7}), _commits({"a:0": 5})
    ends = {("a", 0): 5, ("a", 1): 7}
    assert two.partitions.getter is not None and two.same_as(two.partitions.getter(ends))
    assert not two.same_as(two.partitions.getter({**ends, ("a", 1): 8}))
    assert one.partitions.getter is not None and one.same_as(one.partitions.getter(ends)) and not one.same_as(6)
    assert not two.same_as((5, None)) and not two.same_as((5, 2**70)) and not two.same_as((5,))
    assert isinstance(two.committed, array) and two.committed.itemsize == 8  # (8 bytes an offset, no int objects)
