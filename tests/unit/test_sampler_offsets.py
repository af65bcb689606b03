"""How a sampling pass merges its offset answers with the last pass's, and the produce rates it
derives: the same figures as the plain definitions, without the per-partition copies a pass used to
make at its peak (a merged copy of each answer, a set of every partition in both samples)."""

from __future__ import annotations

import random

import pytest

from console.watcher.sampler import merged, produce_rates


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


def test_an_answer_holding_every_partition_is_the_merged_mapping_itself() -> None:
    last = {("a", 0): 1, ("a", 1): 2}
    answer = {("a", 0): 5, ("a", 1): 2, ("b", 0): 7}
    assert merged(last, answer) is answer
    assert merged({}, answer) is answer
    assert merged(last, {}) is last  # (an answer that failed: the last values, as they were)


def test_partitions_an_answer_left_out_keep_their_last_value_and_neither_mapping_changes() -> None:
    last = {("a", 0): 1, ("a", 1): 2, ("b", 0): 3}
    answer = {("a", 0): 5, ("c", 0): 9}
    out = merged(last, answer)
    assert out == {("a", 0): 5, ("a", 1): 2, ("b", 0): 3, ("c", 0): 9}
    assert last == {("a", 0): 1, ("a", 1): 2, ("b", 0): 3} and answer == {("a", 0): 5, ("c", 0): 9}
    # (as many partitions as the last, but not the same ones: merged all the same)
    assert merged({("a", 0): 1, ("x", 0): 4}, {("a", 0): 2, ("y", 0): 8}) == {("a", 0): 2, ("x", 0): 4, ("y", 0): 8}
