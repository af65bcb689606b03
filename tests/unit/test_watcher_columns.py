"""The watcher's per-topic columns (console/watcher/columns.py) against plain dicts."""

from __future__ import annotations

import random
from collections.abc import Mapping

import pytest

from console.watcher.columns import ListColumns, OffsetColumns


def _check(columns: object, reference: Mapping[tuple[str, int], object]) -> None:
    assert isinstance(columns, (OffsetColumns, ListColumns))
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
        columns = columns.updated(changes)
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
        OffsetColumns().updated({("t", -1): 3})


def test_the_watchers_merger_keeps_offsets_and_sizes_by_topic_and_copies_only_the_topics_a_pass_changed() -> None:
    from console.watcher.sampling_process import DeltaMerger, SampleDelta

    def delta(full: bool, ends: dict[tuple[str, int], int], sizes: dict[tuple[str, int], dict[str, int]] | None) -> SampleDelta:
        return SampleDelta(full=full, started=1.0, ends=ends, starts={tp: 0 for tp in ends} if full else {}, sizes=sizes,
                           rates={}, groups=None, group_ids=None, groups_changed=False)

    merger = DeltaMerger()
    every = {(f"t{t}", p): 10 * t + p for t in range(3) for p in range(4)}
    first = merger.apply(delta(True, every, {tp: {"1": 5} for tp in every}))
    second = merger.apply(delta(False, {("t1", 2): 99}, None))
    assert isinstance(first.ends, OffsetColumns) and isinstance(first.sizes, ListColumns)
    assert dict(second.ends.items()) == {**every, ("t1", 2): 99} and dict(first.ends.items()) == every
    assert second.sizes is first.sizes and second.starts is first.starts  # (nothing new read: the same)
    assert second.ends._topics["t0"] is first.ends._topics["t0"]  # type: ignore[attr-defined]
    assert second.ends._topics["t1"] is not first.ends._topics["t1"]  # type: ignore[attr-defined]
    third = merger.apply(delta(True, {("t9", 0): 1}, None))
    assert dict(third.ends.items()) == {("t9", 0): 1} and third.sizes is None  # a whole delta starts again
