"""consumers_app.rebalance: rebalances told from successive describes of a group (ALGORITHMS.md section 4)."""

from __future__ import annotations

import json

import pytest

from consumers_app.rebalance import (
    ALL_MEMBERS_LEFT,
    MEMBER_JOINED,
    MEMBER_LEFT,
    SUBSCRIPTION_CHANGE,
    UNKNOWN,
    Member,
    MemberRef,
    Observation,
    PartitionMove,
    Rebalance,
    RebalanceTracker,
)

A = ("m-a", Member("app-a", "/10.0.0.1", ()))
B = ("m-b", Member("app-b", "/10.0.0.2", ()))


def member(ref: tuple[str, Member], *partitions: tuple[str, int]) -> tuple[str, Member]:
    mid, m = ref
    return mid, Member(m.client_id, m.host, tuple(partitions))


def obs(at: float, state: str, generation: int | None, *members: tuple[str, Member]) -> Observation:
    return Observation(at=at, state=state, generation=generation, members=dict(members))


def feed(tracker: RebalanceTracker, *observations: Observation) -> list[list[Rebalance]]:
    return [tracker.observe(o) for o in observations]


T0, T1 = ("orders", 0), ("orders", 1)


def one_member() -> Observation:
    return obs(0.0, "Stable", 1, member(A, T0, T1))


def two_members(at: float, generation: int | None = 2) -> Observation:
    return obs(at, "Stable", generation, member(A, T0), member(B, T1))


# Start and end -----------------------------------------------------------------------------------


def test_stable_group_has_no_rebalance():
    tracker = RebalanceTracker()
    assert feed(tracker, one_member(), obs(5.0, "Stable", 1, member(A, T0, T1))) == [[], []]
    assert not tracker.in_rebalance


def test_rebalance_starts_when_the_group_leaves_stable_and_ends_when_it_is_stable_again():
    tracker = RebalanceTracker()
    results = feed(
        tracker,
        one_member(),
        obs(10.0, "PreparingRebalance", 1, member(A, T0, T1)),
        obs(12.0, "CompletingRebalance", 2, member(A), member(B)),
        two_members(15.0),
    )
    assert results[:3] == [[], [], []]
    [rebalance] = results[3]
    assert (rebalance.start, rebalance.end, rebalance.duration) == (10.0, 15.0, 5.0)
    assert (rebalance.generation_before, rebalance.generation_after) == (1, 2)
    assert not rebalance.missed
    assert not tracker.in_rebalance


def test_group_is_in_rebalance_between_start_and_end():
    tracker = RebalanceTracker()
    feed(tracker, one_member(), obs(10.0, "PreparingRebalance", 1))
    assert tracker.in_rebalance


def test_member_joining_is_recorded_with_the_partitions_it_took():
    tracker = RebalanceTracker()
    *_, [rebalance] = feed(tracker, one_member(), obs(10.0, "PreparingRebalance", 1), two_members(15.0))
    assert rebalance.joined == (MemberRef("m-b", "app-b", "/10.0.0.2"),)
    assert rebalance.left == ()
    assert rebalance.moved == (PartitionMove("orders", 1, "app-a", "app-b"),)
    assert rebalance.trigger == MEMBER_JOINED


def test_member_leaving_is_recorded_with_the_partitions_it_gave_up():
    tracker = RebalanceTracker()
    *_, [rebalance] = feed(
        tracker, two_members(0.0), obs(10.0, "PreparingRebalance", 2), obs(15.0, "Stable", 3, member(A, T0, T1))
    )
    assert rebalance.left == (MemberRef("m-b", "app-b", "/10.0.0.2"),)
    assert rebalance.joined == ()
    assert rebalance.moved == (PartitionMove("orders", 1, "app-b", "app-a"),)
    assert rebalance.trigger == MEMBER_LEFT


def test_member_replaced_by_another_reports_the_join_and_lists_both():
    tracker = RebalanceTracker()
    *_, [rebalance] = feed(
        tracker,
        obs(0.0, "Stable", 1, member(A, T0, T1)),
        obs(10.0, "PreparingRebalance", 1),
        obs(15.0, "Stable", 2, member(B, T0, T1)),
    )
    assert rebalance.trigger == MEMBER_JOINED
    assert [m.member_id for m in rebalance.joined] == ["m-b"] and [m.member_id for m in rebalance.left] == ["m-a"]


def test_changed_topics_with_the_same_members_is_a_subscription_change():
    tracker = RebalanceTracker()
    *_, [rebalance] = feed(
        tracker,
        obs(0.0, "Stable", 1, member(A, T0, T1)),
        obs(10.0, "PreparingRebalance", 1),
        obs(15.0, "Stable", 2, member(A, T0, T1, ("payments", 0))),
    )
    assert rebalance.trigger == SUBSCRIPTION_CHANGE
    assert rebalance.moved == (PartitionMove("payments", 0, None, "app-a"),)


def test_partitions_reshuffled_among_the_same_members_have_an_unknown_trigger():
    tracker = RebalanceTracker()
    *_, [rebalance] = feed(
        tracker,
        two_members(0.0),
        obs(10.0, "PreparingRebalance", 2),
        obs(15.0, "Stable", 3, member(A, T1), member(B, T0)),
    )
    assert rebalance.trigger == UNKNOWN
    assert rebalance.moved == (PartitionMove("orders", 0, "app-a", "app-b"), PartitionMove("orders", 1, "app-b", "app-a"))


def test_empty_ends_a_rebalance_as_all_members_left():
    tracker = RebalanceTracker()
    *_, [rebalance] = feed(tracker, one_member(), obs(10.0, "PreparingRebalance", 1), obs(15.0, "Empty", 2))
    assert (rebalance.start, rebalance.end) == (10.0, 15.0)
    assert rebalance.trigger == ALL_MEMBERS_LEFT
    assert rebalance.left == (MemberRef("m-a", "app-a", "/10.0.0.1"),)
    assert rebalance.moved == (PartitionMove("orders", 0, "app-a", None), PartitionMove("orders", 1, "app-a", None))
    assert not tracker.in_rebalance


def test_states_of_the_new_consumer_protocol_count_as_in_rebalance():
    tracker = RebalanceTracker()
    results = feed(tracker, one_member(), obs(10.0, "Assigning", 2), obs(11.0, "Reconciling", 2), two_members(15.0))
    assert [len(r) for r in results] == [0, 0, 0, 1]
    assert results[3][0].start == 10.0


def test_state_names_are_compared_ignoring_case():
    tracker = RebalanceTracker()
    results = feed(
        tracker,
        obs(0.0, "STABLE", 1, member(A, T0, T1)),
        obs(10.0, "PREPARING_REBALANCE", 1),
        obs(15.0, "STABLE", 2, member(A, T0), member(B, T1)),
    )
    assert [len(r) for r in results] == [0, 0, 1]


def test_rebalance_after_a_rebalance_compares_with_the_group_as_it_settled():
    tracker = RebalanceTracker()
    *_, [second] = feed(
        tracker,
        one_member(),
        obs(10.0, "PreparingRebalance", 1),
        two_members(15.0),
        obs(20.0, "PreparingRebalance", 2, member(A, T0)),
        obs(25.0, "Stable", 3, member(A, T0, T1)),
    )
    assert second.left == (MemberRef("m-b", "app-b", "/10.0.0.2"),)
    assert (second.start, second.generation_before) == (20.0, 2)


def test_late_observation_is_ignored():
    tracker = RebalanceTracker()
    feed(tracker, two_members(10.0))
    assert tracker.observe(obs(5.0, "PreparingRebalance", 1)) == []
    assert not tracker.in_rebalance


# What polling missed -----------------------------------------------------------------------------


def test_generation_jump_of_three_is_three_rebalances_in_the_observed_window():
    tracker = RebalanceTracker()
    *_, rebalances = feed(
        tracker,
        obs(0.0, "Stable", 5, member(A, T0, T1)),
        obs(10.0, "PreparingRebalance", 5),
        obs(15.0, "Stable", 8, member(A, T0), member(B, T1)),
    )
    assert [(r.generation_before, r.generation_after) for r in rebalances] == [(5, 6), (6, 7), (7, 8)]
    assert {(r.start, r.end) for r in rebalances} == {(10.0, 15.0)}
    assert [r.missed for r in rebalances] == [True, True, False]
    assert rebalances[2].joined and rebalances[2].trigger == MEMBER_JOINED
    assert rebalances[0].joined == () and rebalances[0].trigger == UNKNOWN


@pytest.mark.parametrize(("after", "count"), [(6, 1), (7, 2), (8, 3)])
def test_generation_jump_counts_one_rebalance_per_generation(after, count):
    tracker = RebalanceTracker()
    *_, rebalances = feed(
        tracker,
        obs(0.0, "Stable", 5, member(A, T0)),
        obs(10.0, "PreparingRebalance", 5),
        obs(15.0, "Stable", after, member(A, T0)),
    )
    assert len(rebalances) == count


def test_generation_jump_between_two_stable_observations_is_that_many_missed_rebalances():
    tracker = RebalanceTracker()
    *_, rebalances = feed(tracker, obs(0.0, "Stable", 5, member(A, T0, T1)), obs(30.0, "Stable", 8, member(A, T0, T1)))
    assert len(rebalances) == 3
    assert all(r.missed and (r.start, r.end) == (0.0, 30.0) for r in rebalances)


def test_changed_members_between_two_stable_observations_is_a_missed_rebalance():
    tracker = RebalanceTracker()  # classic groups: DescribeGroups reports no generation
    *_, [rebalance] = feed(tracker, obs(0.0, "Stable", None, member(A, T0, T1)), two_members(30.0, generation=None))
    assert rebalance.missed
    assert (rebalance.start, rebalance.end) == (0.0, 30.0)
    assert (rebalance.generation_before, rebalance.generation_after) == (None, None)
    assert rebalance.joined == (MemberRef("m-b", "app-b", "/10.0.0.2"),)
    assert rebalance.trigger == MEMBER_JOINED


def test_changed_assignment_between_two_stable_observations_is_a_missed_rebalance():
    tracker = RebalanceTracker()
    *_, [rebalance] = feed(tracker, two_members(0.0, generation=None), obs(30.0, "Stable", None, member(A, T1), member(B, T0)))
    assert rebalance.missed and len(rebalance.moved) == 2


def test_unchanged_group_without_generation_has_no_rebalance():
    tracker = RebalanceTracker()
    assert feed(tracker, two_members(0.0, generation=None), two_members(30.0, generation=None)) == [[], []]


def test_stable_to_empty_unseen_is_a_missed_rebalance_where_all_members_left():
    tracker = RebalanceTracker()
    *_, [rebalance] = feed(tracker, one_member(), obs(30.0, "Empty", 2))
    assert rebalance.missed and rebalance.trigger == ALL_MEMBERS_LEFT


def test_generation_that_went_down_counts_as_one_rebalance():
    tracker = RebalanceTracker()
    *_, rebalances = feed(tracker, obs(0.0, "Stable", 9, member(A, T0)), obs(30.0, "Stable", 1, member(A, T0)))
    assert len(rebalances) == 1


def test_group_first_seen_mid_rebalance_is_recorded_from_when_it_was_seen():
    tracker = RebalanceTracker()
    *_, [rebalance] = feed(tracker, obs(10.0, "CompletingRebalance", 4, member(A)), obs(12.0, "Stable", 4, member(A, T0)))
    assert (rebalance.start, rebalance.end, rebalance.generation_before) == (10.0, 12.0, 4)


# State -------------------------------------------------------------------------------------------


def test_tracker_survives_a_trip_through_json_mid_rebalance():
    tracker = RebalanceTracker()
    feed(tracker, one_member(), obs(10.0, "PreparingRebalance", 1))
    restored = RebalanceTracker.from_dict(json.loads(json.dumps(tracker.to_dict())))
    assert restored == tracker
    end = two_members(15.0)
    [rebalance] = restored.observe(end)
    assert [rebalance] == tracker.observe(end)
    assert rebalance.start == 10.0 and not rebalance.missed


def test_rebalance_survives_a_trip_through_json():
    tracker = RebalanceTracker()
    *_, [rebalance] = feed(tracker, one_member(), obs(10.0, "PreparingRebalance", 1), two_members(15.0))
    data = json.loads(json.dumps(rebalance.to_dict()))
    assert Rebalance.from_dict(data) == rebalance
    assert data["moved"] == [{"topic": "orders", "partition": 1, "from": "app-a", "to": "app-b"}]
    assert data["joined"] == [{"member_id": "m-b", "client_id": "app-b", "host": "/10.0.0.2"}]
    assert data["duration"] == 5.0


def test_a_members_assignment_is_one_sorted_tuple_shared_when_given_so() -> None:
    """Assignments are compared as sets but kept as sorted tuples (a frozenset's table per member
    was 117 MB at 50,000 groups); one given sorted is kept as the same object."""
    given = (("a", 0), ("a", 1), ("b", 0))
    assert Member("c", "h", given).assignment is given
    shuffled = Member("c", "h", (("b", 0), ("a", 1), ("a", 0), ("a", 1)))  # any order, a partition twice
    assert shuffled == Member("c", "h", given) and shuffled.assignment == given
    assert Member("c", "h", frozenset(given)).assignment == given  # type: ignore[arg-type]
    o = obs(1.0, "Stable", 3, ("m-1", shuffled))
    assert Observation.from_dict(o.to_dict()) == o


@pytest.mark.parametrize("seed", range(25))
def test_members_read_over_the_watchers_member_states_give_the_same_rebalances(seed) -> None:
    """MembersOf (the watcher's: a mapping over its list of member states, a Member made when one
    is read) against plain {member id: Member} dicts: random describes (states, generations,
    members joining, leaving and trading partitions, assignments as tuples or JSON's lists, a list
    carried over as it was), fed to one tracker each way, give the same rebalances."""
    import random

    from console.snapshots.model import MemberState
    from consumers_app.rebalance import MembersOf

    rng = random.Random(seed)
    partitions = [("t", p) for p in range(6)] + [("u", 0)]
    plain, over, again = RebalanceTracker(), RebalanceTracker(), RebalanceTracker()
    shortcuts = 0
    members: list[MemberState] = []
    at, generation, found = 0.0, 1, 0
    for _step in range(120):
        at += rng.choice([1.0, 3.0, -1.0])
        roll = rng.random()
        if roll < 0.4:  # carried over: the same list
            pass
        else:
            ids = sorted({m.member_id for m in members} | ({f"m{rng.randint(0, 4)}"} if rng.random() < 0.5 else set()))
            if ids and rng.random() < 0.3:
                ids.remove(rng.choice(ids))
            taken = rng.sample(partitions, rng.randint(0, len(partitions)))
            members = []
            for i, mid in enumerate(ids):
                mine = sorted(taken[i::len(ids)])
                assignment = tuple(mine) if rng.random() < 0.5 else [[t, p] for t, p in mine]
                members.append(MemberState(mid, f"client-{mid}", "/10.0.0.1", assignment))
            if rng.random() < 0.5:
                generation += rng.choice([1, 1, 2])
        state = rng.choice(["Stable", "Stable", "PreparingRebalance", "Empty"] if members else ["Empty", "Stable"])
        gen = generation if rng.random() < 0.8 else None
        as_dict = {m.member_id: Member(m.client_id, m.host, tuple((t, int(p)) for t, p in m.assignment)) for m in members}
        expected = plain.observe(Observation(at, state, gen, as_dict))
        got = over.observe(Observation(at, state, gen, MembersOf(members)))
        assert got == expected, (seed, _step)
        found += len(got)
        # The watcher's shortcut for a describe that is the last one again: the same as observing it.
        if again.seen_again(at, state, gen, members):
            shortcuts += 1
            assert got == []
        else:
            assert again.observe(Observation(at, state, gen, MembersOf(members))) == got, (seed, _step)
        for kept, theirs in ((again.last, over.last), (again.baseline, over.baseline)):
            assert (kept is None) == (theirs is None), (seed, _step)
            if kept is not None and theirs is not None:
                assert (kept.at, kept.state, kept.generation) == (theirs.at, theirs.state, theirs.generation), (seed, _step)
        assert again.started_at == over.started_at
    assert found > 0  # (the sequences make rebalances to compare)
    assert shortcuts > 0 or seed == 11  # (the shortcut is taken: in all but one of these sequences)


def test_a_describe_seen_again_notes_its_time_only_when_it_is_the_last_one_settled() -> None:
    from console.snapshots.model import MemberState
    from consumers_app.rebalance import MembersOf

    members = [MemberState("m-1", "c", "/h", (("t", 0),))]
    tracker = RebalanceTracker()
    assert not tracker.seen_again(1.0, "Stable", 4, members)  # (nothing observed yet)
    tracker.observe(Observation(1.0, "Stable", 4, MembersOf(members)))
    assert tracker.seen_again(2.0, "Stable", 4, members)
    assert tracker.last is not None and tracker.baseline is not None and tracker.last.at == tracker.baseline.at == 2.0
    assert not tracker.seen_again(1.5, "Stable", 4, members)  # (late)
    assert not tracker.seen_again(3.0, "Stable", 5, members)  # another generation
    assert not tracker.seen_again(3.0, "Stable", 4, list(members))  # another describe's members
    assert not tracker.seen_again(3.0, "PreparingRebalance", 4, members)
    tracker.observe(Observation(3.0, "PreparingRebalance", 4, MembersOf(members)))
    assert not tracker.seen_again(4.0, "PreparingRebalance", 4, members)  # (a rebalance in progress)
    assert tracker.last is not None and tracker.last.at == 3.0
