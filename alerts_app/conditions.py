"""Which subjects each condition (models.CONDITIONS) holds for in a cluster's snapshot: pure, no I/O.

Each condition's matches are found once per evaluation whatever the number of rules, then every
rule on it picks those its target and threshold name (`passes`). The indexes (`MetadataIndex`,
`GroupIndex`) keep each topic's and group's matches while its state is the same object (the watcher
and the sampler share what did not change), so an evaluation looks again only at what changed and
says which subjects did (`Found.changed`).

A subject is what a rule's target names: a broker id, a topic, a group, a job kind, or "cluster".
A key names one alert of a rule: "broker:2", "partition:orders:3", "group:g1", "topic:t", "cluster".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from console.snapshots import GroupState, Snapshot, TopicState
from consumers_app.lagstatus import GROUP_ORDER

TOPIC_CONDITIONS = ("under_replicated", "under_min_isr", "offline", "produce_rate_zero")
CLUSTER_CONDITIONS = ("broker_down", "no_controller", "controller_moved", "quorum_lag")
METADATA_CONDITIONS = TOPIC_CONDITIONS + CLUSTER_CONDITIONS
GROUP_CONDITIONS = ("group_status", "group_lag", "partition_lag", "time_lag")
JOB_CONDITIONS = ("job_failed",)
CONNECT_CONDITIONS = ("connect_task_failing",)  # read from the Connect reads and restart policies (alerts_app/connect_tasks.py)
TRANSACTION_CONDITIONS = ("transaction_hanging",)  # read from the watcher's last transactions listing (alerts_app/transactions.py)
# Read from an unreachable cluster's snapshot too: they follow what the watcher says of the brokers.
FOLLOW_WATCHER = frozenset({"broker_down", "no_controller"})
# Conditions that are events, not states: they hold for this long after they happened, fire
# without waiting for a duration, and end without a "resolved" message.
EVENT_CONDITIONS = frozenset({"controller_moved", "job_failed"})
EVENT_HOLD_SECONDS = 300.0
# Conditions whose target is ignored: they are about the cluster as a whole.
WHOLE_CLUSTER = frozenset({"no_controller", "controller_moved"})
STATUSES = ("WARN", "ERR", "STOP", "STALL")


@dataclass(frozen=True, slots=True)
class Match:
    key: str
    subject: str
    value: float | None
    message: str
    details: dict[str, Any] = field(default_factory=dict)


class Found:
    """One condition's matches by subject, kept across evaluations; `changed`: the subjects whose
    matches changed in the last one (None: look at them all)."""

    __slots__ = ("begun", "by_subject", "changed")

    def __init__(self) -> None:
        self.by_subject: dict[str, list[Match]] = {}
        self.changed: set[str] | None = None
        self.begun = False

    def begin(self) -> Found:
        """Start an evaluation: from now on the subjects that change are noted (the first one: all)."""
        self.changed = set() if self.begun else None
        self.begun = True
        return self

    def put(self, subject: str, matches: list[Match] | None) -> None:
        old = self.by_subject.get(subject)
        if matches:
            if old != matches:
                self.by_subject[subject] = matches
                self._touch(subject)
        elif old is not None:
            del self.by_subject[subject]
            self._touch(subject)

    def put_all(self, found: Mapping[str, list[Match]]) -> None:
        """Every subject's matches: those not named hold no more."""
        for subject in [s for s in self.by_subject if s not in found]:
            self.put(subject, None)
        for subject, matches in found.items():
            self.put(subject, matches)

    def _touch(self, subject: str) -> None:
        if self.changed is not None:
            self.changed.add(subject)

    def matches(self) -> Iterable[Match]:
        for listed in self.by_subject.values():
            yield from listed


@dataclass(frozen=True)
class Spec:
    """What of a rule decides its matches (the rest is how and where it is sent)."""

    condition: str
    threshold: float | None = None
    status: str = ""


def passes(spec: Spec, match: Match) -> bool:
    """Whether a match of the spec's condition is one of the spec's: above its threshold, at its status."""
    condition = spec.condition
    if condition == "group_status":
        wanted = spec.status or "ERR"
        details = match.details
        if wanted in ("STOP", "STALL"):
            return bool(details.get(wanted.lower()))
        return GROUP_ORDER.get(details.get("status") or "", 0) >= GROUP_ORDER[wanted]
    if condition in ("group_lag", "partition_lag", "time_lag", "quorum_lag"):
        return match.value is not None and match.value > max(0.0, spec.threshold or 0.0)
    return True


# Topics ------------------------------------------------------------------------------------------

def _partition_match(t: TopicState, p: Any, what: str, extra: str) -> Match:
    return Match(f"partition:{t.name}:{p.partition}", t.name, float(len(p.isr)), f"Partition {p.partition} of topic '{t.name}' {what}{extra}.",
                 {"topic": t.name, "partition": p.partition, "leader": p.leader, "replicas": list(p.replicas), "isr": list(p.isr),
                  "min_isr": t.min_isr})


def topic_matches(t: TopicState) -> dict[str, list[Match] | None]:
    """The topic's matches per topic condition; None where this snapshot could not say (its
    min.insync.replicas or its produce rate not read yet): the alerts on it keep their state."""
    offline: list[Match] = []
    under: list[Match] = []
    below: list[Match] = []
    min_isr = t.min_isr
    for p in t.partitions:
        if p.leader < 0:
            offline.append(_partition_match(t, p, "is offline", f" (no leader; replicas {_ids(p.replicas)})"))
            continue
        isr = len(p.isr)
        if isr < len(p.replicas):
            under.append(_partition_match(t, p, "is under-replicated", f" (in sync {_ids(p.isr)} of {_ids(p.replicas)})"))
        if min_isr is not None and isr < min_isr:
            below.append(_partition_match(t, p, "is under min ISR", f" ({isr} in sync, min.insync.replicas {min_isr})"))
    rate = t.produce_rate
    idle = None if rate is None else [Match(f"topic:{t.name}", t.name, rate, f"Topic '{t.name}' takes no new records.",
                                            {"topic": t.name, "produce_rate": rate})] if rate == 0 else []
    return {"offline": offline, "under_replicated": under, "under_min_isr": below if min_isr is not None else None,
            "produce_rate_zero": idle}


def _ids(ids: Iterable[int]) -> str:
    return "[" + ", ".join(map(str, ids)) + "]"


# The cluster -------------------------------------------------------------------------------------

def broker_matches(snap: Snapshot) -> dict[str, list[Match]]:
    found = {}
    for b in snap.brokers.values():
        reachable = getattr(b, "reachable", True)
        if b.up and reachable:
            continue
        why = "has left the cluster" if not b.up else "does not answer the console"
        found[str(b.id)] = [Match(f"broker:{b.id}", str(b.id), float(b.id), f"Broker {b.id} ({b.host}:{b.port}) {why}.",
                                  {"broker": b.id, "host": b.host, "port": b.port, "rack": b.rack, "up": b.up,
                                   "reachable": reachable})]
    return found


def controller_matches(snap: Snapshot) -> dict[str, list[Match]]:
    if snap.controller_id is not None and snap.controller_id >= 0:
        return {}
    return {"cluster": [Match("cluster", "cluster", None, f"Cluster '{snap.cluster}' has no active controller.", {})]}


def quorum_matches(snap: Snapshot) -> dict[str, list[Match]] | None:
    quorum = snap.quorum
    if quorum is None:
        return None  # (not read: a cluster without KRaft, or the quorum call failed)
    found = {}
    for role, members in (("voter", quorum.voters), ("observer", quorum.observers)):
        for m in members:
            if m.id == quorum.leader_id or m.lag is None:
                continue
            found[str(m.id)] = [Match(f"{role}:{m.id}", str(m.id), float(m.lag),
                                      f"KRaft {role} {m.id} is {m.lag} records behind the leader {quorum.leader_id}.",
                                      {"member": m.id, "role": role, "lag": m.lag, "leader": quorum.leader_id})]
    return found


class ControllerMoves:
    """When the active controller last changed (a move holds for EVENT_HOLD_SECONDS)."""

    def __init__(self) -> None:
        self.controller: int | None = None
        self.moved: Match | None = None
        self.moved_at = 0.0

    def see(self, snap: Snapshot, now: float) -> dict[str, list[Match]]:
        new = snap.controller_id if snap.controller_id is not None and snap.controller_id >= 0 else None
        if new is not None and self.controller is not None and new != self.controller:
            self.moved = Match("cluster", "cluster", float(new), f"The active controller moved from broker {self.controller} to {new}.",
                               {"from": self.controller, "to": new, "at": now})
            self.moved_at = now
        if new is not None:
            self.controller = new
        if self.moved is not None and now - self.moved_at < EVENT_HOLD_SECONDS:
            return {"cluster": [self.moved]}
        return {}


class MetadataIndex:
    """The metadata conditions of one cluster across its snapshots."""

    def __init__(self) -> None:
        self.found = {c: Found() for c in METADATA_CONDITIONS}
        self._topics: dict[str, TopicState] = {}  # each topic's state its matches were found in
        self._moves = ControllerMoves()

    def update(self, snap: Snapshot, now: float, wanted: Iterable[str] = METADATA_CONDITIONS) -> dict[str, Found]:
        """The conditions `wanted` found in `snap` (those it could not read left out: their
        alerts keep their state)."""
        wanted = set(wanted)
        out: dict[str, Found] = {}
        for condition, read in (("broker_down", broker_matches), ("no_controller", controller_matches)):
            if condition in wanted and snap.brokers:  # (no broker known: a first look that failed says nothing)
                out[condition] = self.found[condition].begin()
                out[condition].put_all(read(snap))
        if not snap.reachable:
            return out
        if "controller_moved" in wanted:
            out["controller_moved"] = self.found["controller_moved"].begin()
            out["controller_moved"].put_all(self._moves.see(snap, now))
        if "quorum_lag" in wanted:
            quorum = quorum_matches(snap)
            if quorum is not None:
                out["quorum_lag"] = self.found["quorum_lag"].begin()
                out["quorum_lag"].put_all(quorum)
        topics_wanted = [c for c in TOPIC_CONDITIONS if c in wanted]
        if topics_wanted:
            for c in topics_wanted:
                out[c] = self.found[c].begin()
            self._update_topics(snap)
        return out

    def _update_topics(self, snap: Snapshot) -> None:
        seen, found = self._topics, self.found
        topics = snap.topics
        get = seen.get
        added = False
        for name, t in [(name, t) for name, t in topics.items() if get(name) is not t]:  # (the topics this snapshot built anew)
            added = added or name not in seen
            seen[name] = t
            for condition, matches in topic_matches(t).items():
                if matches is not None:
                    found[condition].put(name, matches)
        if len(seen) != len(topics) or added and seen.keys() != topics.keys():
            for name in [n for n in seen if n not in topics]:
                del seen[name]
                for condition in TOPIC_CONDITIONS:
                    found[condition].put(name, None)


# Groups ------------------------------------------------------------------------------------------

EndOf = Callable[[str, int], "int | None"]


def group_lags(g: GroupState, end_of: EndOf, ends: Sequence[int | None] | None = None) -> tuple[int, list[tuple[str, int, int]]]:
    """The group's total lag and each partition's above 0 (ALGORITHMS.md 1: end minus committed,
    floored at 0; a share group's as Kafka reports it; unknown ends left out), as consumers_app's
    group rows count them. `ends`: the end offsets of its commits (`ends_of`), when already read."""
    total = 0
    behind = []
    reported = g.broker_lag
    commits = _commits(g)
    if ends is None:
        ends = ends_of(commits, end_of)
    for (key, topic, partition, committed), end in zip(commits, ends, strict=True):
        lag = reported.get(key) if reported else None
        if lag is None:
            if end is None or committed is None:
                continue
            lag = end - committed if end > committed else 0
        if lag > 0:
            total += lag
            behind.append((topic, partition, lag))
    return total, behind


def ends_of(commits: list[tuple[str, str, int, int]], end_of: EndOf) -> tuple[int | None, ...]:
    return tuple([end_of(topic, partition) for _, topic, partition, _ in commits])


_parsed: dict[str, tuple[GroupState, list[tuple[str, str, int, int]], frozenset[str]]] = {}


def _commits(g: GroupState) -> list[tuple[str, str, int, int]]:
    """The group's commits as (key, topic, partition, offset), parsed once per group state."""
    return _parse(g)[1]


def _topics_of(g: GroupState) -> frozenset[str]:
    return _parse(g)[2]


def _parse(g: GroupState) -> tuple[GroupState, list[tuple[str, str, int, int]], frozenset[str]]:
    held = _parsed.get(g.group_id)
    if held is not None and held[0] is g:
        return held
    commits = []
    for key, committed in g.offsets.items():
        topic, _, number = key.rpartition(":")
        commits.append((key, topic, int(number), committed))
    if len(_parsed) > 200_000:  # (groups come and go: bounded all the same)
        _parsed.clear()
    held = _parsed[g.group_id] = (g, commits, frozenset(c[1] for c in commits))
    return held


def group_status_match(g: GroupState) -> Match | None:
    """The group's status when not OK, or when some partition is STOP or STALL."""
    status = g.status or "NOTFOUND"
    stop = [k for k, s in zip(g.lag_keys, g.lag_status, strict=False) if s == "STOP"]
    stall = [k for k, s in zip(g.lag_keys, g.lag_status, strict=False) if s == "STALL"]
    if GROUP_ORDER.get(status, 0) < GROUP_ORDER["WARN"] and not stop and not stall:
        return None
    parts = [f"status {status}"] + ([f"{len(stop)} partitions stopped"] if stop else []) + ([f"{len(stall)} stalled"] if stall else [])
    return Match(f"group:{g.group_id}", g.group_id, float(GROUP_ORDER.get(status, 0)),
                 f"Consumer group '{g.group_id}' has {', '.join(parts)}.",
                 {"group": g.group_id, "status": status, "stop": stop[:100], "stall": stall[:100]})


def group_matches(g: GroupState, end_of: EndOf, wanted: set[str], ends: Sequence[int | None] | None = None,
                  floors: Mapping[str, float] | None = None) -> dict[str, list[Match]]:
    """The group's matches per condition; `floors`: per threshold condition, a value no rule's
    threshold is below (a match at or under it is not made: most groups lag a little, always)."""
    out: dict[str, list[Match]] = {}
    gid = g.group_id
    floors = floors or {}
    if "group_status" in wanted:
        m = group_status_match(g)
        out["group_status"] = [m] if m is not None else []
    if "time_lag" in wanted:
        seconds = g.time_lag
        out["time_lag"] = [Match(f"group:{gid}", gid, round(seconds, 1), f"Consumer group '{gid}' is {seconds:.0f} s behind.",
                                 {"group": gid, "time_lag": seconds})] if seconds and seconds > floors.get("time_lag", 0.0) else []
    if wanted & {"group_lag", "partition_lag"}:
        total, behind = group_lags(g, end_of, ends)
        if "group_lag" in wanted:
            out["group_lag"] = [Match(f"group:{gid}", gid, float(total), f"Consumer group '{gid}' is {total} records behind.",
                                      {"group": gid, "lag": total, "partitions_behind": len(behind)})] \
                if total and total > floors.get("group_lag", 0.0) else []
        if "partition_lag" in wanted:
            floor = floors.get("partition_lag", 0.0)
            out["partition_lag"] = [Match(f"group:{gid}:partition:{topic}:{p}", gid, float(lag),
                                          f"Consumer group '{gid}' is {lag} records behind on partition {p} of '{topic}'.",
                                          {"group": gid, "topic": topic, "partition": p, "lag": lag})
                                    for topic, p, lag in behind if lag > floor]
    return out


def _evaluated_anew(mark: tuple[str | None, float | None, Sequence[str]] | None, g: GroupState) -> bool:
    return mark is None or mark[2] is not g.lag_status or mark[0] != g.status or mark[1] != g.time_lag


class GroupIndex:
    """The group conditions of one cluster across its samples. A group's status and time lag are
    kept while its state and its evaluation are the same; its lag follows the end offsets too, so when a rule
    asks for lag the groups reading a topic whose ends moved are looked at again."""

    def __init__(self) -> None:
        self.found = {c: Found() for c in GROUP_CONDITIONS}
        self._groups: dict[str, GroupState] = {}
        self._ends: dict[str, tuple[int | None, ...]] = {}  # the end offsets each group's lag was found at
        self._readers: dict[str, set[str]] = {}  # topic -> the groups that commit on it
        # Each group's evaluation as last looked at (the partition statuses held, not their id, which may be reused).
        self._marks: dict[str, tuple[str | None, float | None, Sequence[str]]] = {}
        self._wanted: set[str] = set()
        self._floors: dict[str, float] = {}

    def update(self, groups: Mapping[str, GroupState], end_of: EndOf, wanted: Iterable[str] = GROUP_CONDITIONS,
               moved: AbstractSet[str] | None = None, floors: Mapping[str, float] | None = None) -> dict[str, Found]:
        """The conditions `wanted` of these groups; `moved`: the topics whose end offsets moved
        since the last update (None: not known, every group's are looked at); `floors`: see
        `group_matches`."""
        wanted = set(wanted) & set(GROUP_CONDITIONS)
        found = self.found
        floors = dict(floors or {})
        if wanted != self._wanted or floors != self._floors:  # (a condition or threshold asked for anew: every group looked at once)
            self._wanted, self._floors, self._groups, self._ends, self._readers = wanted, floors, {}, {}, {}
            self._marks = {}
        for c in wanted:
            found[c].begin()
        lag = wanted & {"group_lag", "partition_lag"}
        seen, seen_ends, readers = self._groups, self._ends, self._readers
        get = seen.get
        marks = self._marks
        # A new state, or the same one evaluated again in place (consumers_app sets a carried
        # group's status, time lag and partition statuses on the object it keeps): every condition.
        new = [(gid, g) for gid, g in groups.items() if get(gid) is not g or _evaluated_anew(marks.get(gid), g)]
        for gid, g in new:
            marks[gid] = (g.status, g.time_lag, g.lag_status)
            old = seen.get(gid)
            if old is not None:
                for topic in _topics_of(old):
                    readers.get(topic, set()).discard(gid)
            seen[gid] = g
            for topic in _topics_of(g):
                readers.setdefault(topic, set()).add(gid)
            ends = ends_of(_commits(g), end_of) if lag else None
            if ends is not None:
                seen_ends[gid] = ends
            for condition, matches in group_matches(g, end_of, wanted, ends, floors).items():
                found[condition].put(gid, matches)
        if lag:  # (the same state: its lag again if its ends moved)
            renewed = {gid for gid, _ in new}
            if moved is None:
                again: Iterable[str] = [gid for gid in groups if gid not in renewed]
            else:
                again = {gid for topic in moved for gid in readers.get(topic, ()) if gid not in renewed and gid in groups}
            for gid in again:
                g = groups[gid]
                ends = ends_of(_commits(g), end_of)
                if seen_ends.get(gid) != ends:
                    seen_ends[gid] = ends
                    for condition, matches in group_matches(g, end_of, lag, ends, floors).items():
                        found[condition].put(gid, matches)
        if len(seen) != len(groups) or seen.keys() != groups.keys():
            for gid in [n for n in seen if n not in groups]:
                for topic in _topics_of(seen.pop(gid)):
                    readers.get(topic, set()).discard(gid)
                seen_ends.pop(gid, None)
                self._marks.pop(gid, None)
                for f in found.values():
                    f.put(gid, None)
        return {c: found[c] for c in wanted}


def snapshot_end_of(snap: Snapshot) -> EndOf:
    """A group's end offsets read from the snapshot's topics (each topic's looked up once)."""
    by_topic: dict[str, dict[int, int | None]] = {}

    def end_of(topic: str, partition: int) -> int | None:
        ends = by_topic.get(topic)
        if ends is None:
            t = snap.topics.get(topic)
            ends = by_topic[topic] = t.end_offsets() if t is not None else {}
        return ends.get(partition)

    return end_of


def mapping_end_of(ends: Mapping[tuple[str, int], int]) -> EndOf:
    """A group's end offsets from a sample's (topic, partition) -> end offset."""
    get = ends.get
    return lambda topic, partition: get((topic, partition))
