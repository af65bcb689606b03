"""What a sampling pass holds at its peak: Kafka's answers for the groups are read a chunk at a
time, replica sizes equal to the last ones are the last ones' objects. At 300,000 partitions and
50,000 groups each of these was a hundred megabytes or more of every pass's peak."""

from __future__ import annotations

import weakref
from collections.abc import Generator
from typing import Any

import pytest
from django.test import override_settings

from bench.simulate import Model, SimGateway
from console.gateway import groups as gateway_groups
from console.gateway.errors import ClusterUnavailable
from console.watcher import sampler as sampler_module
from console.watcher.columns import OffsetColumns
from console.watcher.sampler import Sampler
from console.watcher.size_columns import SizeColumns, unpack_sizes

pytestmark = pytest.mark.django_db


class _Answer(dict[Any, Any]):
    """A gateway answer that can be watched going away (a plain dict cannot be weakly referenced)."""


class _Recording(SimGateway):
    def __init__(self, model: Model, fail_call: int | None = None) -> None:
        super().__init__(model, 0.0)
        self.calls: list[list[str]] = []
        self.alive_at_call: list[bool] = []  # whether the answer before was still held when each call came
        self._last: weakref.ref[_Answer] | None = None
        self.fail_call = fail_call

    def group_offsets(self, group_ids: list[str]) -> dict[str, dict[tuple[str, int], int]]:
        self.alive_at_call.append(self._last is not None and self._last() is not None)
        self.calls.append(list(group_ids))
        if self.fail_call is not None and len(self.calls) == self.fail_call:
            raise ClusterUnavailable("simulated failure: could not fetch committed offsets")
        answer = _Answer(super().group_offsets(group_ids))
        self._last = weakref.ref(answer)
        return answer


def assert_same_states(got: Any, expected: Any) -> None:
    """The same groups, in the same order, each with the same offsets, members, state and coordinator."""
    assert list(got) == list(expected)
    for gid, state in expected.items():
        mine = got[gid]
        assert (mine.offsets, mine.members, mine.state, mine.coordinator) == (state.offsets, state.members, state.state,
                                                                             state.coordinator)


def _partitions(gw: SimGateway) -> list[tuple[str, int]]:
    return [(t.name, p.partition) for t in gw.metadata().topics for p in t.partitions]


def test_committed_offsets_are_read_a_chunk_of_groups_at_a_time_and_each_answer_let_go(
        redis_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    model = Model(partitions=40, groups=10, brokers=3, per_topic=10, seed=3)
    whole_gw, chunked_gw = SimGateway(model, 0.0), _Recording(model)
    partitions = _partitions(whole_gw)
    with override_settings(ANALYTICS_SAMPLES=False):
        whole = Sampler("chunk-whole", whole_gw, True, lambda rows: None).take(partitions, [1, 2, 3]).groups  # type: ignore[arg-type]
        monkeypatch.setattr(sampler_module, "GROUP_CHUNK", 3)
        sampler = Sampler("chunk-test", chunked_gw, True, lambda rows: None)  # type: ignore[arg-type]
        chunked = sampler.take(partitions, [1, 2, 3]).groups
    assert whole is not None and chunked is not None
    assert [len(ids) for ids in chunked_gw.calls] == [3, 3, 3, 1]
    assert sorted(gid for ids in chunked_gw.calls for gid in ids) == sorted(whole)
    assert chunked_gw.alive_at_call == [False, False, False, False]  # each chunk's answer gone before the next
    assert_same_states(chunked, whole)
    stats = sampler.group_stats
    assert stats["groups"] == 10 and stats["group_partitions"] == 100


def test_a_chunk_that_cannot_be_read_keeps_the_last_complete_groups(redis_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    model = Model(partitions=40, groups=10, brokers=3, per_topic=10, seed=3)
    gw = _Recording(model)
    partitions = _partitions(gw)
    monkeypatch.setattr(sampler_module, "GROUP_CHUNK", 4)
    with override_settings(ANALYTICS_SAMPLES=False):
        sampler = Sampler("chunk-fail", gw, True, lambda rows: None)  # type: ignore[arg-type]
        first = sampler.take(partitions, [1, 2, 3])
        assert first.groups is not None and len(first.groups) == 10
        model.step(1.0, 1.0)  # groups commit anew
        gw.fail_call = len(gw.calls) + 2  # the second chunk of the next pass fails
        second = sampler.take(partitions, [1, 2, 3])
        # Not a mix of two passes: the last complete groups, as they were.
        assert second.groups is first.groups and not second.groups_changed
        gw.fail_call = None
        third = sampler.take(partitions, [1, 2, 3])
        assert third.groups is not None and third.groups_changed
        assert any(third.groups[gid].offsets != first.groups[gid].offsets for gid in third.groups)


def _small(name: str) -> tuple[Model, list[tuple[str, int]], Sampler]:
    """A model of 40 partitions and 4 groups, its partitions, and a sampler on it (analytics off)."""
    model = Model(partitions=40, groups=4, brokers=3, per_topic=10, seed=3)
    gw = SimGateway(model, 0.0)
    return model, _partitions(gw), Sampler(name, gw, True, lambda rows: None)  # type: ignore[arg-type]


def test_replica_sizes_of_a_topic_equal_to_the_last_ones_are_the_last_ones_arrays(redis_server: str) -> None:
    with override_settings(ANALYTICS_SAMPLES=False):
        model, partitions, sampler = _small("sizes-test")
        first = sampler.take(partitions, [1, 2, 3]).sizes
        model.step(0.1, 1.0)  # 4 partitions take writes: their sizes grow
        sampler._next_sizes = 0.0  # (read the sizes again now, not after WATCHER_SIZES_INTERVAL)
        second = sampler.take(partitions, [1, 2, 3]).sizes
    assert isinstance(first, SizeColumns) and isinstance(second, SizeColumns) and second is not first
    grown = [tp for tp in partitions if second[tp] != first[tp]]
    assert 1 <= len(grown) <= 4
    assert all(sum(second[tp].values()) > sum(first[tp].values()) for tp in grown)
    assert unpack_sizes(second.changed_packed(first)) == {tp: second[tp] for tp in grown}  # (what goes to the watcher)
    for name in {tp[0] for tp in partitions}:
        same = second._topics[name] is first._topics[name]
        assert same == all(tp not in grown for tp in partitions if tp[0] == name)


def test_the_time_tables_keep_the_shared_partition_tuples_not_the_gateways(redis_server: str) -> None:
    with override_settings(ANALYTICS_SAMPLES=False):
        model, partitions, sampler = _small("tables-test")
        sampler.take(partitions, [1, 2, 3])
        model.step(1.0, 1.0)
        sampler.take(partitions, [1, 2, 3])
    tables = sampler.evaluator._time_tables  # type: ignore[attr-defined]
    held = [tp for tp in tables._partition_of if tp is not None]  # (each row's partition)
    assert len(held) == 40 and all(tables.row(tp) is not None for tp in partitions)
    assert all(tp is sampler.names.shared(tp) for tp in held)
    assert all(tp is sampler.names.shared(tp) for tp in tables._keys)


def test_groups_caught_up_everywhere_share_one_list_of_statuses_and_of_time_lags(redis_server: str) -> None:
    model = Model(partitions=40, groups=8, brokers=3, per_topic=10, seed=3)  # caught up: every group at the end
    gw = SimGateway(model, 0.0)
    partitions = _partitions(gw)
    with override_settings(ANALYTICS_SAMPLES=False):
        sampler = Sampler("uniform-test", gw, True, lambda rows: None)  # type: ignore[arg-type]
        sampler.take(partitions, [1, 2, 3])
        model.step(0.0, 1.0)
        groups = sampler.take(partitions, [1, 2, 3]).groups
    assert groups is not None
    states = list(groups.values())
    assert all(g.lag_status == ["OK"] * 10 and g.lag_seconds == [0.0] * 10 for g in states)
    assert len({id(g.lag_status) for g in states}) == 1 and len({id(g.lag_seconds) for g in states}) == 1
    # A group behind on a partition has a list of time lags of its own (its statuses, still all OK:
    # its windows are not full, still share theirs); the shared ones are left as they were.
    topic, committed, members = model.groups["sim.group-000001"]
    model.groups["sim.group-000001"] = (topic, {**committed, 0: committed[0] - 50}, members)
    with override_settings(ANALYTICS_SAMPLES=False):
        model.topics[topic][1][4] += 10  # another partition moves: a time lag to interpolate
        again = sampler.take(partitions, [1, 2, 3]).groups
    assert again is not None
    behind = again["sim.group-000001"]
    assert (behind.lag_seconds[0] or 0) > 0 and behind.lag_seconds is not states[0].lag_seconds
    assert behind.lag_status is states[0].lag_status
    assert states[0].lag_seconds == [0.0] * 10 and states[0].lag_status == ["OK"] * 10


def test_a_groups_next_description_is_compared_with_its_state_not_a_kept_copy() -> None:
    """The sampler keeps no copy of each group's description to compare the next answer with (20 MB
    at 50,000 groups): the answer is compared with the state built from it, field by field."""
    from dataclasses import replace

    from console.gateway.types import ConsumerGroup, GroupMember
    from console.snapshots.model import GroupState, MemberState
    from console.watcher.sampler import _described_as

    member = GroupMember("m-1", "client-1", "/10.0.0.1", (("t", 0), ("t", 1)), instance_id=None, epoch=3)
    g = ConsumerGroup(group_id="g", state="Stable", protocol_type="consumer", group_type="consumer", assignor="uniform",
                      members=(member,), coordinator=2, generation=7, assignment_epoch=7)
    state = GroupState(group_id="g", state="Stable", protocol_type="consumer", group_type="consumer", assignor="uniform",
                       members=[MemberState("m-1", "client-1", "/10.0.0.1", (("t", 0), ("t", 1)), None, 3, None)],
                       offsets={"t:0": 5, "t:1": 6}, coordinator=2, generation=7)
    assert _described_as(state, 7, g)
    assert _described_as(state, 7, replace(g, members=(replace(member, assignment=(("t", 0), ("t", 1))),)))  # equal, new tuples
    changed = [
        replace(g, state="PreparingRebalance"), replace(g, generation=8), replace(g, coordinator=3), replace(g, error="gone"),
        replace(g, assignor="range"), replace(g, members=()), replace(g, members=(member, replace(member, member_id="m-2"))),
        replace(g, members=(replace(member, client_id="client-2"),)), replace(g, members=(replace(member, host="/10.0.0.2"),)),
        replace(g, members=(replace(member, assignment=(("t", 0),)),)), replace(g, members=(replace(member, epoch=4),)),
        replace(g, members=(replace(member, instance_id="static-1"),)),
        replace(g, members=(replace(member, target_assignment=(("t", 1),)),)),
    ]
    assert not any(_described_as(state, 7, c) for c in changed)
    assert not _described_as(state, 6, g)  # the assignment epoch moved


def test_a_pass_keeps_its_offsets_as_arrays_and_a_topic_whose_offsets_did_not_move_keeps_the_last_passs(redis_server: str) -> None:
    with override_settings(ANALYTICS_SAMPLES=False):
        model, partitions, sampler = _small("ends-test")
        handed: list[Any] = []
        evaluate = sampler.evaluator.evaluate

        def watched(groups: Any, before: Any, ends: Any, *args: Any, **kwargs: Any) -> None:
            handed.append(ends)
            evaluate(groups, before, ends, *args, **kwargs)

        sampler.evaluator.evaluate = watched  # type: ignore[method-assign,assignment]
        first = sampler.take(partitions, [1, 2, 3])
        model.step(0.1, 1.0)  # 4 partitions take writes
        sample = sampler.take(partitions, [1, 2, 3])
    # Kept as an int64 array per topic (not the answer's dict, an entry and an int per partition),
    # equal to the model's; the evaluation was handed the answer itself (its lookups by partition).
    ends, starts, first_ends, first_starts = (_columns(m) for m in (sample.ends, sample.starts, first.ends, first.starts))
    assert dict(ends) == {tp: model.topics[tp[0]][tp[1]][4] for tp in partitions} == handed[-1]
    moved = [tp for tp in partitions if ends[tp] != first_ends[tp]]
    assert 1 <= len(moved) <= 4 and set(moved) <= set(sample.changed)
    for name in {tp[0] for tp in partitions}:
        assert (ends._topics[name] is first_ends._topics[name]) == all(tp[0] != name for tp in moved)
    assert starts._topics.keys() == first_starts._topics.keys() and all(
        starts._topics[n] is first_starts._topics[n] for n in starts._topics)  # (no start moved)


def _columns(offsets: Any) -> OffsetColumns:
    assert isinstance(offsets, OffsetColumns)
    return offsets


def test_partitions_an_offsets_answer_leaves_out_keep_their_last_end_offset(redis_server: str) -> None:
    with override_settings(ANALYTICS_SAMPLES=False):
        model, partitions, sampler = _small("ends-missing-test")
        first = sampler.take(partitions, [1, 2, 3])
        left_out = partitions[3]
        answer = sampler.gateway.list_offsets

        def partial(tps: Any, which: str) -> dict[tuple[str, int], int]:
            return {tp: v for tp, v in answer(tps, which).items() if tp != left_out}

        sampler.gateway.list_offsets = partial  # type: ignore[method-assign,assignment]
        model.topics[left_out[0]][left_out[1]][4] += 1000  # (it takes writes: its answer would differ)
        model.step(1.0, 1.0)  # (and about two thirds of the others)
        second = sampler.take(partitions, [1, 2, 3])
    assert second.ends[left_out] == first.ends[left_out]
    assert {tp: second.ends[tp] for tp in partitions if tp != left_out} == {
        tp: model.topics[tp[0]][tp[1]][4] for tp in partitions if tp != left_out}
    assert len(second.ends) == len(partitions) and second.starts.keys() == first.starts.keys()


class _Describing(SimGateway):
    """Describes DESCRIBE_CHUNK groups at a time, noting whether the groups of each chunk handed out
    were still held when the next chunk was described; fails the chunk numbered `fail_chunk`."""

    def __init__(self, model: Model) -> None:
        super().__init__(model, 0.0)
        self.held_at_next: list[bool] = []
        self.fail_chunk: int | None = None
        self.log: list[str] = []  # "describe" for each chunk described, "offsets" for each offsets fetch

    def group_offsets(self, group_ids: list[str]) -> dict[str, dict[tuple[str, int], int]]:
        self.log.append("offsets")
        return super().group_offsets(group_ids)

    def consumer_group_chunks(self, partition: Any = None) -> Generator[list[Any], None, None]:
        last: weakref.ref[_Chunk] | None = None
        for n, described in enumerate(super().consumer_group_chunks(partition)):
            self.held_at_next.append(last is not None and last() is not None)
            self.log.append("describe")
            if n == self.fail_chunk:
                raise ClusterUnavailable("simulated failure: could not describe consumer groups")
            chunk = _Chunk(described)
            del described
            last = weakref.ref(chunk)
            yield chunk
            del chunk


class _Chunk(list[Any]):
    """A chunk of described groups that can be watched going away."""


def test_groups_are_described_a_chunk_at_a_time_and_each_chunks_answer_let_go(
        redis_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    model = Model(partitions=40, groups=10, brokers=3, per_topic=10, seed=3)
    whole_gw = SimGateway(model, 0.0)
    partitions = _partitions(whole_gw)
    monkeypatch.setattr(gateway_groups, "DESCRIBE_CHUNK", 3)
    gw = _Describing(model)
    with override_settings(ANALYTICS_SAMPLES=False):
        whole = Sampler("describe-whole", whole_gw, True, lambda rows: None).take(partitions, [1, 2, 3]).groups  # type: ignore[arg-type]
        sampler = Sampler("describe-chunks", gw, True, lambda rows: None)  # type: ignore[arg-type]
        chunked = sampler.take(partitions, [1, 2, 3]).groups
    assert whole is not None and chunked is not None
    # Four chunks (3+3+3+1), each made into states (its offsets fetched) before the next is
    # described, and let go by then.
    assert gw.log == ["describe", "offsets"] * 4
    assert gw.held_at_next == [False, False, False, False]
    assert_same_states(chunked, whole)
    stats = sampler.group_stats
    assert stats["groups"] == 10 and stats["group_partitions"] == 100 and stats["coordinators"] >= 1


def test_a_description_that_fails_midway_keeps_the_last_complete_groups(
        redis_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    model = Model(partitions=40, groups=10, brokers=3, per_topic=10, seed=3)
    monkeypatch.setattr(gateway_groups, "DESCRIBE_CHUNK", 3)
    gw = _Describing(model)
    partitions = _partitions(gw)
    with override_settings(ANALYTICS_SAMPLES=False):
        sampler = Sampler("describe-fail", gw, True, lambda rows: None)  # type: ignore[arg-type]
        first = sampler.take(partitions, [1, 2, 3])
        assert first.groups is not None and len(first.groups) == 10
        model.step(1.0, 1.0)  # groups commit anew
        gw.fail_chunk = 2  # the third chunk of the next pass cannot be described
        second = sampler.take(partitions, [1, 2, 3])
        assert second.groups is first.groups and not second.groups_changed
        gw.fail_chunk = None
        third = sampler.take(partitions, [1, 2, 3])
        assert third.groups is not None and third.groups_changed and len(third.groups) == 10
        assert any(third.groups[gid].offsets != first.groups[gid].offsets for gid in third.groups)


def test_an_offsets_answer_is_let_go_as_soon_as_it_is_taken_in_and_the_evaluation_reads_arrays(
        redis_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gateway's dict of end offsets (a dict entry and an int object per partition: 20 MB at
    300,000 partitions) was held through the whole pass, where the sampling process peaks. Now each
    answer is taken in as arrays at once (PassOffsets) and let go; the evaluation reads a group's
    partitions a topic at a time, and its statuses and lags are what they were."""
    import time
    from types import SimpleNamespace

    from console.watcher.pass_offsets import PassOffsets

    clock = SimpleNamespace(now=time.time())  # (both samplers' passes at the same times: their time lags compare)
    monkeypatch.setattr(sampler_module, "time", SimpleNamespace(time=lambda: clock.now, monotonic=time.monotonic))
    with override_settings(ANALYTICS_SAMPLES=False):
        model, partitions, sampler = _small("answer-gone-test")
        reference = Sampler("answer-gone-reference", SimGateway(model, 0.0), True, lambda rows: None)  # type: ignore[arg-type]
        answers: list[weakref.ref[_Answer]] = []
        answer = sampler.gateway.list_offsets

        def watched_answer(tps: Any, which: str) -> dict[tuple[str, int], int]:
            got = _Answer(answer(tps, which))
            answers.append(weakref.ref(got))
            return got

        sampler.gateway.list_offsets = watched_answer  # type: ignore[method-assign,assignment]
        seen: list[tuple[bool, Any]] = []
        evaluate = sampler.evaluator.evaluate

        def watched(groups: Any, before: Any, ends: Any, *args: Any, **kwargs: Any) -> None:
            seen.append((all(ref() is None for ref in answers), ends))
            evaluate(groups, before, ends, *args, **kwargs)

        sampler.evaluator.evaluate = watched  # type: ignore[method-assign,assignment]
        # (the reference evaluates the gateway's dict itself, as before)
        reference.take = _dict_pass(reference)  # type: ignore[method-assign]
        for _ in range(4):
            model.step(0.3, 1.0)
            clock.now += 5.0
            mine, theirs = sampler.take(partitions, [1, 2, 3]), reference.take(partitions, [1, 2, 3])
            assert mine.groups is not None and theirs.groups is not None
            assert {gid: (g.status, g.lag_keys, g.lag_status, g.lag_seconds, g.time_lag) for gid, g in mine.groups.items()} == \
                {gid: (g.status, g.lag_keys, g.lag_status, g.lag_seconds, g.time_lag) for gid, g in theirs.groups.items()}
    assert len(seen) == 4 and all(gone for gone, _ends in seen)  # both answers let go before the evaluation
    assert all(isinstance(ends, PassOffsets) and ends.keys_ is sampler._asked_list for _gone, ends in seen)


def _dict_pass(sampler: Sampler) -> Any:
    """`sampler.take` with the gateway's dict handed to the evaluation (what the passes did before)."""
    take, evaluate = sampler.take, sampler.evaluator.evaluate
    answers: dict[str, Any] = {}
    answer = sampler.gateway.list_offsets

    def keep(tps: Any, which: str) -> dict[tuple[str, int], int]:
        answers[which] = answer(tps, which)
        return answers[which]

    def with_dict(groups: Any, before: Any, ends: Any, *args: Any, **kwargs: Any) -> None:
        evaluate(groups, before, answers["latest"], *args, **kwargs)

    sampler.gateway.list_offsets = keep  # type: ignore[method-assign,assignment]
    sampler.evaluator.evaluate = with_dict  # type: ignore[method-assign,assignment]
    return take
