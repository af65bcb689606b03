"""How a sampling pass merges its offset answers with the last pass's, and the produce rates and
changes it derives: the same figures as the plain definitions, kept as arrays per topic
(OffsetColumns.merged) instead of the answer's dict, an entry and an int object per partition, and
with the arrays of unchanged topics shared with the last pass's."""

from __future__ import annotations

import random

import pytest

from console.watcher.columns import OffsetColumns, PackedOffsets, pack
from console.watcher.sampler import produce_rates


def _plain_rates(before: dict[tuple[str, int], int], after: dict[tuple[str, int], int], seconds: float) -> dict[str, float]:
    """The definition: per topic, the rise of the end offsets of its partitions in both samples
    (a partition that went down counts 0), per second."""
    totals: dict[str, int] = {}
    for key in after.keys() & before.keys():
        totals[key[0]] = totals.get(key[0], 0) + max(0, after[key] - before[key])
    return {topic: round(n / seconds, 2) for topic, n in totals.items()}


@pytest.mark.parametrize("seed", range(40))
def test_produce_rates_equal_the_definition(seed: int) -> None:
    rng = random.Random(seed)
    topics = [f"t{i}" for i in range(rng.randint(1, 6))] + ["pay<ments>/é"]
    keys = [(t, p) for t in topics for p in range(rng.randint(1, 5))]
    before = {k: rng.randint(0, 10**12) for k in keys if rng.random() < 0.8}
    after = {}
    for k in keys:
        if rng.random() < 0.8:
            was = before.get(k, rng.randint(0, 10**12))
            roll = rng.random()
            after[k] = was if roll < 0.5 else was + rng.randint(1, 10**6) if roll < 0.9 else max(0, was - rng.randint(1, 100))
    seconds = rng.choice([0.5, 3.0, 7.25])
    assert produce_rates(before, after, seconds) == _plain_rates(before, after, seconds)


def test_a_topic_whose_partitions_did_not_move_has_a_rate_of_zero_and_one_not_in_both_samples_none() -> None:
    before = {("idle", 0): 5, ("busy", 0): 10, ("gone", 0): 1}
    after = {("idle", 0): 5, ("busy", 0): 40, ("new", 0): 3}
    assert produce_rates(before, after, 3.0) == {"idle": 0.0, "busy": 10.0}


def _plain_merged(last: dict[tuple[str, int], int], answer: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
    """The definition: an answer holding every partition of the last replaces it; one that left
    some out keeps their last values; an empty one (a failed read) is the last as it was."""
    if not answer:
        return dict(last)
    if last.keys() <= answer.keys():
        return dict(answer)
    return {**last, **answer}


def _unpacked(packed: PackedOffsets) -> dict[tuple[str, int], int]:
    out = {(name, n): v for name, (numbers, values) in packed.items() for n, v in zip(numbers, values, strict=True)}
    assert len(out) == sum(len(numbers) for numbers, _v in packed.values())  # (no partition twice)
    return out


def _random_offsets(rng: random.Random, keys: list[tuple[str, int]], share: float) -> dict[tuple[str, int], int]:
    return {k: rng.choice([0, rng.randint(0, 10**12), 2**62]) for k in keys if rng.random() < share}


@pytest.mark.parametrize("seed", range(60))
def test_offsets_merged_as_columns_equal_the_definition_and_so_do_their_changes_rates_and_packing(seed: int) -> None:
    rng = random.Random(seed)
    topics = [f"t{i}" for i in range(rng.randint(1, 5))] + ["pay<ments>/é"]
    keys = [(t, p) for t in topics for p in range(rng.randint(1, 6))]
    last_plain = _random_offsets(rng, keys, 0.8)
    last = OffsetColumns.merged(None, last_plain)
    assert dict(last) == last_plain and len(last) == len(last_plain)
    for _ in range(5):
        roll = rng.random()
        if roll < 0.15:
            answer: dict[tuple[str, int], int] = {}  # (the read failed)
        elif roll < 0.6:
            answer = {k: (v if rng.random() < 0.6 else v + rng.randint(1, 10**6)) for k, v in last_plain.items()}
            answer.update(_random_offsets(rng, keys, 0.2))  # (and partitions new since)
        else:
            answer = _random_offsets(rng, keys, rng.random())  # (some left out, some new)
        expected = _plain_merged(last_plain, answer)
        now = OffsetColumns.merged(last, answer)
        assert dict(now) == expected and len(now) == len(expected)
        assert sorted(now.changed_keys(last)) == sorted(k for k, v in expected.items() if last_plain.get(k) != v)
        assert _unpacked(pack(now, last)) == _unpacked(pack(expected, last_plain))  # (columnar, against the plain one)
        if answer and len(answer) == len(now):
            assert produce_rates(last, now, 2.5) == produce_rates(last_plain, expected, 2.5)
        # A topic whose values did not change keeps the last pass's array; the last pass's columns
        # are as they were.
        for name in {k[0] for k in expected}:
            if {k: v for k, v in expected.items() if k[0] == name} == {k: v for k, v in last_plain.items() if k[0] == name}:
                assert now._topics[name] is last._topics[name]
        assert dict(last) == last_plain
        last, last_plain = now, expected


def test_an_answer_holding_every_partition_replaces_the_last_one_and_an_empty_one_is_the_last_itself() -> None:
    last = OffsetColumns.merged(None, {("a", 0): 1, ("a", 1): 2, ("gone", 0): 4})
    answer = {("a", 0): 5, ("a", 1): 2, ("gone", 0): 4, ("b", 0): 7}
    assert dict(OffsetColumns.merged(last, answer)) == answer
    assert dict(OffsetColumns.merged(last, {k: v for k, v in answer.items() if k[0] != "gone"})) == {
        ("a", 0): 5, ("a", 1): 2, ("b", 0): 7, ("gone", 0): 4}  # (left out: kept, never taken for deleted)
    assert OffsetColumns.merged(last, {}) is last  # (an answer that failed: the last values, as they were)
    assert pack(OffsetColumns.merged(last, {}), last) == {}
    assert dict(OffsetColumns.merged(None, {})) == {}
    with pytest.raises(ValueError, match="partition -1"):
        OffsetColumns.merged(None, {("t", -1): 3})


def test_partitions_an_answer_left_out_keep_their_last_value_and_neither_mapping_changes() -> None:
    last_plain = {("a", 0): 1, ("a", 1): 2, ("b", 0): 3}
    last = OffsetColumns.merged(None, last_plain)
    answer = {("a", 0): 5, ("c", 0): 9}
    out = OffsetColumns.merged(last, answer)
    assert dict(out) == {("a", 0): 5, ("a", 1): 2, ("b", 0): 3, ("c", 0): 9}
    assert dict(last) == last_plain and answer == {("a", 0): 5, ("c", 0): 9}
    assert out._topics["b"] is last._topics["b"]
    # (as many partitions as the last, but not the same ones: merged all the same)
    two = OffsetColumns.merged(OffsetColumns.merged(None, {("a", 0): 1, ("x", 0): 4}), {("a", 0): 2, ("y", 0): 8})
    assert dict(two) == {("a", 0): 2, ("x", 0): 4, ("y", 0): 8}


def test_a_topic_with_no_partition_in_both_columns_has_no_rate_and_an_unchanged_one_a_rate_of_zero() -> None:
    before = OffsetColumns.merged(None, {("idle", 0): 5, ("busy", 0): 10, ("busy", 1): 7, ("gone", 0): 1, ("moved", 1): 3})
    after = OffsetColumns.merged(None, {("idle", 0): 5, ("busy", 0): 40, ("busy", 1): 1, ("new", 0): 3, ("moved", 0): 2})
    assert after.rates(before, 3.0) == {"idle": 0.0, "busy": 10.0}
