"""Rebalances of a consumer group, told from successive describes (ALGORITHMS.md section 4); pure, no I/O.

The watcher feeds each describe of a group to that group's `RebalanceTracker` as an `Observation`
and gets back the rebalances that ended with it.

- Stable, Empty and Dead are settled states; any other state (PreparingRebalance,
  CompletingRebalance, the new protocol's Assigning and Reconciling, ...) means a rebalance is in
  progress. States are compared ignoring case, so "STABLE" (an enum name) is Stable.
- A rebalance starts at the first observation that shows the group in progress, and ends at the
  next settled one; the record compares the members and assignments at the last settled
  observation before it with those at the end.
- Polling can miss a rebalance entirely. Between two settled observations, a changed generation,
  changed members or changed assignments mean one happened (classic groups described with
  DescribeGroups do not report their generation, so the member set is all there is). Such a
  rebalance is recorded with `missed=True` and the window between the two observations.
- A generation that moved by n > 1 over the window is n rebalances with the same window, not one.
  What changed is known only for the whole window, so the last of them carries the members and
  partitions and the trigger; the others carry none and are `missed=True` (polling never saw them).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from console.gateway.types import TopicPartition

SETTLED = frozenset({"stable", "empty", "dead"})
_GONE = frozenset({"empty", "dead"})

MEMBER_JOINED = "member joined"
MEMBER_LEFT = "member left or timed out"
SUBSCRIPTION_CHANGE = "subscription change"
ALL_MEMBERS_LEFT = "all members left"
UNKNOWN = "unknown"


def _norm(state: str) -> str:
    return state.lower()


_SETTLED_OF: dict[str, bool] = {}  # (each state string seen: a handful; asked for every group every sample)


def is_settled(state: str) -> bool:
    found = _SETTLED_OF.get(state)
    if found is None:
        if len(_SETTLED_OF) > 1000:
            _SETTLED_OF.clear()
        found = _SETTLED_OF[state] = _norm(state) in SETTLED
    return found


@dataclass(frozen=True, slots=True)  # (one per member of every group the watcher follows)
class Member:
    client_id: str
    host: str
    # The partitions, sorted and each once (any iterable is made so), so that two members with the
    # same partitions are equal. A tuple, not a frozenset, whose hash table costs several times the
    # tuple for every member the watcher follows; an assignment given already sorted (the sampler's
    # shared tuple) is kept as it is.
    assignment: tuple[TopicPartition, ...] = ()

    def __post_init__(self) -> None:
        given = self.assignment
        canonical = tuple(sorted(set(given)))
        if type(given) is not tuple or canonical != given:
            object.__setattr__(self, "assignment", canonical)


class MembersOf(Mapping[str, Member]):
    """A group's members by member id, over the list of its member states the watcher keeps
    (anything with a member_id, client_id, host and assignment): a Member is made when one is read.
    A tracker compares two observations' members only when they are not over the same list (a
    state carried over is), so most are never read, and a mapping of Members made for every group at
    each sample would be held by the sampling process for nothing."""

    __slots__ = ("source",)

    def __init__(self, source: Sequence[Any]) -> None:
        self.source = source

    def __getitem__(self, key: str) -> Member:
        for m in self.source:
            if m.member_id == key:
                return _member_of(m)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (m.member_id for m in self.source)

    def __len__(self) -> int:
        return len(self.source)


def _member_of(m: Any) -> Member:
    assignment = m.assignment
    if type(assignment) is not tuple or not all(type(a) is tuple for a in assignment):
        assignment = tuple((str(a[0]), int(a[1])) for a in assignment)  # (from JSON: lists)
    return Member(m.client_id, m.host, assignment)


def _by_id(members: Mapping[str, Member]) -> dict[str, Member]:
    """The members as a dict, each made once (a MembersOf makes one at every read)."""
    if isinstance(members, MembersOf):
        return {m.member_id: _member_of(m) for m in members.source}
    return dict(members)


def _same_members(before: Mapping[str, Member], after: Mapping[str, Member]) -> bool:
    """Whether two observations' members are the same object, or over the same list of member states."""
    return before is after or (isinstance(before, MembersOf) and isinstance(after, MembersOf) and before.source is after.source)


@dataclass(frozen=True, slots=True)
class Observation:
    at: float  # seconds since the epoch
    state: str
    generation: int | None  # generation id (classic) or group epoch (new protocol); None when not reported
    members: Mapping[str, Member] = field(default_factory=dict)  # by member id

    @property
    def settled(self) -> bool:
        return is_settled(self.state)

    def to_dict(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "state": self.state,
            "generation": self.generation,
            "members": {
                mid: {"client_id": m.client_id, "host": m.host, "assignment": sorted([t, p] for t, p in m.assignment)}
                for mid, m in sorted(self.members.items())
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Observation:
        generation = data.get("generation")
        return cls(
            at=float(data["at"]),
            state=str(data["state"]),
            generation=None if generation is None else int(generation),
            members={
                str(mid): Member(
                    client_id=str(m["client_id"]),
                    host=str(m["host"]),
                    assignment=tuple((str(t), int(p)) for t, p in m.get("assignment", [])),
                )
                for mid, m in data.get("members", {}).items()
            },
        )


@dataclass(frozen=True)
class MemberRef:
    member_id: str
    client_id: str
    host: str


@dataclass(frozen=True)
class PartitionMove:
    topic: str
    partition: int
    old_client_id: str | None  # None: nobody owned it before
    new_client_id: str | None  # None: nobody owns it after


@dataclass(frozen=True)
class Rebalance:
    start: float
    end: float
    generation_before: int | None
    generation_after: int | None
    joined: tuple[MemberRef, ...] = ()
    left: tuple[MemberRef, ...] = ()
    moved: tuple[PartitionMove, ...] = ()
    trigger: str = UNKNOWN
    missed: bool = False  # polling never saw it in progress: start and end bound it, they are not its times

    @property
    def duration(self) -> float:
        return self.end - self.start

    def to_dict(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "end": self.end,
            "duration": self.duration,
            "generation_before": self.generation_before,
            "generation_after": self.generation_after,
            # The same shapes as the JSON fields of consumers_app.models.Rebalance.
            "joined": [_ref_dict(m) for m in self.joined],
            "left": [_ref_dict(m) for m in self.left],
            "moved": [
                {"topic": m.topic, "partition": m.partition, "from": m.old_client_id, "to": m.new_client_id} for m in self.moved
            ],
            "trigger": self.trigger,
            "missed": self.missed,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Rebalance:
        return cls(
            start=float(data["start"]),
            end=float(data["end"]),
            generation_before=data.get("generation_before"),
            generation_after=data.get("generation_after"),
            joined=tuple(MemberRef(m.get("member_id", ""), m["client_id"], m["host"]) for m in data.get("joined", [])),
            left=tuple(MemberRef(m.get("member_id", ""), m["client_id"], m["host"]) for m in data.get("left", [])),
            moved=tuple(PartitionMove(m["topic"], int(m["partition"]), m["from"], m["to"]) for m in data.get("moved", [])),
            trigger=str(data.get("trigger", UNKNOWN)),
            missed=bool(data.get("missed", False)),
        )


@dataclass(slots=True)  # (one per group)
class RebalanceTracker:
    """Follows one group across describes."""

    last: Observation | None = None  # the previous observation
    baseline: Observation | None = None  # the last settled observation before the rebalance in progress
    started_at: float | None = None  # when the rebalance in progress was first seen; None when none is

    @property
    def in_rebalance(self) -> bool:
        return self.started_at is not None

    def observe(self, obs: Observation) -> list[Rebalance]:
        """Take the next describe of the group; return the rebalances that ended with it, oldest first."""
        prev = self.last
        if prev is not None and obs.at < prev.at:
            return []  # an answer that arrived late says nothing new
        self.last = obs
        if not obs.settled:
            if self.started_at is None:
                self.started_at = obs.at
                if self.baseline is None:
                    # A group first seen mid-rebalance has nothing settled before it: compare with what we saw.
                    self.baseline = obs
            return []
        if self.started_at is not None:
            before, start = self.baseline or obs, self.started_at
            self.started_at, self.baseline = None, obs
            return _records(before, obs, start, seen=True)
        self.baseline = obs
        if prev is None or not _changed(prev, obs):
            return []
        return _records(prev, obs, prev.at, seen=False)

    def seen_again(self, at: float, state: str, generation: int | None, members: Sequence[Any]) -> bool:
        """`observe` of a describe that is the last one again (its state, generation and the same
        list of member states: a group state the watcher carried over), settled (so no rebalance is
        in progress: the last observation settled one): only its time is noted, nothing compared or
        made beyond the observation. False, with nothing done, when it is not that case (then
        `observe` it)."""
        prev = self.last
        if (prev is None or at < prev.at or prev.generation != generation
                or prev.state != state or not isinstance(prev.members, MembersOf) or prev.members.source is not members
                or not is_settled(state)):
            return False
        self.last = self.baseline = Observation(at, prev.state, prev.generation, prev.members)
        return True

    def to_dict(self) -> dict[str, Any]:
        return {
            "last": None if self.last is None else self.last.to_dict(),
            "baseline": None if self.baseline is None else self.baseline.to_dict(),
            "started_at": self.started_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RebalanceTracker:
        last, baseline, started_at = data.get("last"), data.get("baseline"), data.get("started_at")
        return cls(
            last=None if last is None else Observation.from_dict(last),
            baseline=None if baseline is None else Observation.from_dict(baseline),
            started_at=None if started_at is None else float(started_at),
        )


def _changed(before: Observation, after: Observation) -> bool:
    """Whether a rebalance happened between two settled observations that polling did not see."""
    if before.generation is not None and after.generation is not None and before.generation != after.generation:
        return True
    if _same_members(before.members, after.members):
        return False  # the same describe's members, carried over by the watcher
    was, now = _by_id(before.members), _by_id(after.members)
    return _owners(was) != _owners(now) or was.keys() != now.keys()


def _owners(members: Mapping[str, Member]) -> dict[TopicPartition, str]:
    return {tp: mid for mid, m in members.items() for tp in m.assignment}


def _topics(members: Mapping[str, Member]) -> set[str]:
    return {t for m in members.values() for t, _ in m.assignment}


def _records(before: Observation, after: Observation, start: float, seen: bool) -> list[Rebalance]:
    was, now = _by_id(before.members), _by_id(after.members)
    joined = tuple(_ref(mid, now[mid]) for mid in sorted(now.keys() - was.keys()))
    left = tuple(_ref(mid, was[mid]) for mid in sorted(was.keys() - now.keys()))
    old, new = _owners(was), _owners(now)
    moved = tuple(
        PartitionMove(
            tp[0],
            tp[1],
            was[old[tp]].client_id if tp in old else None,
            now[new[tp]].client_id if tp in new else None,
        )
        for tp in sorted(old.keys() | new.keys())
        if old.get(tp) != new.get(tp)
    )
    if _norm(after.state) in _GONE and was:
        trigger = ALL_MEMBERS_LEFT
    elif joined:
        trigger = MEMBER_JOINED
    elif left:
        trigger = MEMBER_LEFT
    elif _topics(was) != _topics(now):
        trigger = SUBSCRIPTION_CHANGE
    else:
        trigger = UNKNOWN

    g0, g1 = before.generation, after.generation
    records: list[Rebalance] = []
    last_before = g0
    # A generation that went down means the group was deleted and created again: that counts as one.
    if g0 is not None and g1 is not None and g1 - g0 > 1:
        records = [Rebalance(start, after.at, g, g + 1, missed=True) for g in range(g0, g1 - 1)]
        last_before = g1 - 1
    records.append(Rebalance(start, after.at, last_before, g1, joined, left, moved, trigger, missed=not seen))
    return records


def _ref_dict(ref: MemberRef) -> dict[str, str]:
    return {"member_id": ref.member_id, "client_id": ref.client_id, "host": ref.host}


def _ref(member_id: str, member: Member) -> MemberRef:
    return MemberRef(member_id, member.client_id, member.host)
