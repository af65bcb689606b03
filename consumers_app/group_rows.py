"""Consumer groups as rows from the watcher's snapshot: the groups list (filtered, sorted, paged), each
group's summary row and its detail (lag and owner per partition)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import Any

from console import gateway
from console.errors import BadParameter
from console.gateway.errors import GatewayError, NotAuthorized, NotFound
from console.listing import ordered, paginate, search
from console.snapshots import GroupState, Snapshot
from consumers_app import readable
from consumers_app.group_table import GroupTable, sort_key

SORTS = {
    "group": "group",
    "state": "state",
    "members": "members",
    "total_lag": "total lag",
    "max_lag": "max lag",
    "time_lag": "time lag",
    "status": "status",
}


# Filters of the groups list: the states of every kind of group, and the kinds (group types).
STATES = ("Stable", "Empty", "PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling", "NotReady", "Dead")
KINDS = ("classic", "consumer", "share", "streams")


def filter_params(params: Mapping[str, str]) -> dict[str, str]:
    """`state` and `type` of the groups list (empty: any), checked against what Kafka has."""
    state, kind = params.get("state", "") or "", params.get("type", "") or ""
    if state and state not in STATES:
        raise BadParameter(f"'state' must be one of {', '.join(STATES)}, not '{state[:40]}'.")
    if kind and kind not in KINDS:
        raise BadParameter(f"'type' must be one of {', '.join(KINDS)}, not '{kind[:40]}'.")
    return {"state": state, "kind": kind}


def split_key(key: str) -> tuple[str, int]:
    topic, _, partition = key.rpartition(":")
    return topic, int(partition)


def end_offsets(snap: Snapshot, names: Iterable[str] | None = None) -> dict[tuple[str, int], int | None]:
    """(topic, partition) -> end offset, of the topics named (None: of every topic). A group's
    answer names its own topics: the whole cluster's would parse and walk every topic a version
    changed for one group's rows."""
    if names is None:
        return {(t.name, p.partition): p.end_offset for t in snap.topics.values() for p in t.partitions}
    topics = snap.topics
    return {(name, n): end for name in names if (t := topics.get(name)) is not None for n, end in t.end_offsets().items()}


def _lag(g: GroupState, tp: tuple[str, int], offset: int | None, end: int | None) -> int | None:
    """End offset minus committed offset, floored at 0 (ALGORITHMS.md 1); for a share group, the lag
    Kafka itself reports, which leaves out records acknowledged beyond the start offset."""
    reported = g.broker_lag.get(f"{tp[0]}:{tp[1]}")
    if reported is not None:
        return reported
    return None if offset is None or end is None else max(0, end - offset)


def partition_rows(snap: Snapshot, g: GroupState, ends: dict[tuple[str, int], int | None] | None = None) -> list[dict[str, Any]]:
    """Per partition the group committed or is assigned: committed, end, lag (None = unknown), owner."""
    owners = {(a[0], a[1]): m for m in g.members for a in m.assignment}
    committed = {split_key(k): v for k, v in g.offsets.items()}
    keys = sorted(committed.keys() | owners.keys())
    ends = end_offsets(snap, {tp[0] for tp in keys}) if ends is None else ends
    evaluated = g.lag_of()
    rows = []
    for tp in keys:
        end = ends.get(tp)
        offset = committed.get(tp)
        owner = owners.get(tp)
        lag_info = evaluated.get(f"{tp[0]}:{tp[1]}", {})
        rows.append({
            "topic": tp[0],
            "partition": tp[1],
            "committed": offset,
            "end_offset": end,
            "lag": _lag(g, tp, offset, end),
            "time_lag": lag_info.get("time_lag"),
            "status": lag_info.get("status"),
            "member_id": owner.member_id if owner else None,
            "client_id": owner.client_id if owner else None,
            "host": owner.host if owner else None,
        })
    return rows


class _Ends:
    """A snapshot's end offsets, as `end_offsets`, made per topic when first asked for (`of`): a
    version's group rows ask for the topics of the groups made again only."""

    def __init__(self, snap: Snapshot, of_text: dict[str, dict[str, int | None]] | None = None) -> None:
        self.topics = snap.topics
        self.of_text: dict[str, dict[str, int | None]] = {} if of_text is None else of_text

    def of(self, topic: str) -> dict[str, int | None]:
        """The topic's end offsets by partition number as text (as in a group's "topic:partition" keys)."""
        ends = self.of_text.get(topic)
        if ends is None:
            t = self.topics.get(topic)
            ends = self.of_text[topic] = {} if t is None else {str(n): end for n, end in t.end_offsets().items()}
        return ends


# Per cluster: every group's row kept across versions (GroupTable); and per group what its row was
# made from (the group, its topics' names and their TopicStates) with the row.
_rows_cache: dict[str, GroupTable] = {}
_made: dict[str, dict[str, tuple[GroupState, list[str], list[Any], dict[str, Any]]]] = {}


def table(snap: Snapshot) -> GroupTable:
    """The cluster's GroupTable brought up to this snapshot: a new version makes the rows of the
    groups it changed and of those reading a topic whose end offsets moved, no others."""
    held = _rows_cache.get(snap.cluster)
    if held is None:
        held = _rows_cache[snap.cluster] = GroupTable(group_row, _Ends)
    if held.update(snap):
        _prune(snap)
    return held


def group_rows(snap: Snapshot) -> list[dict[str, Any]]:
    """One summary row per group (`group_row`), in the snapshot's order of the groups."""
    return table(snap).listed()


def _prune(snap: Snapshot) -> None:
    """Forget what rows and plans were made from for groups gone since."""
    made = _made.get(snap.cluster, {})
    if len(made) > len(snap.groups):  # (groups gone since)
        _made[snap.cluster] = {gid: made[gid] for gid in snap.groups if gid in made}
    plans = _plans.get(snap.cluster, {})
    if len(plans) > len(snap.groups):
        _plans[snap.cluster] = {gid: plans[gid] for gid in snap.groups if gid in plans}


def group_row(snap: Snapshot, g: GroupState, ends: _Ends | None = None) -> dict[str, Any]:
    """The group's summary row. It is made from the group and its topics' end offsets only: a group
    whose GroupState and topics' TopicStates are the objects its row was last made from (the store
    keeps what did not change) keeps that row, so that a new version costs the rows of the groups
    that changed only."""
    made = _made.setdefault(snap.cluster, {})
    topics = snap.topics
    seen = made.get(g.group_id)
    if seen is not None and seen[0] is g:
        names = seen[1]
        depends = [topics.get(n) for n in names]
        if all(a is b for a, b in zip(depends, seen[2], strict=True)):
            return seen[3]
    else:
        names = _plan(snap, g).head["topics"]  # (g.topics(), from the plan its row is made of)
        depends = [topics.get(n) for n in names]
    row = _group_row(snap, g, _Ends(snap) if ends is None else ends)
    made[g.group_id] = (g, names, depends, row)
    return row


class _Plan:
    """What a group's summary row is made of that the group alone says (its fields, its partitions by
    topic, its time lag and status), kept while the group is the same object: a version that moves
    its topics' end offsets only costs the row the lag arithmetic alone. A group made again with the
    same partitions and assignments as the plan before (its offsets and evaluation moved: most groups
    on each sampling pass) keeps that plan's partitions by topic and, when its fields are the same,
    its head: only its time lag is taken again."""

    __slots__ = ("by_topic", "group", "head", "keys", "tail")

    def __init__(self, g: GroupState, before: _Plan | None = None) -> None:
        self.group = g
        self.keys: set[str]
        self.by_topic: list[tuple[str, list[tuple[str, str]]]]
        self.head: dict[str, Any]
        if before is not None and _same_partitions(g, before.group):
            self.keys, self.by_topic = before.keys, before.by_topic
            head = before.head
            if head["group"] != g.group_id or head["state"] != g.state or head["members"] != len(g.members) \
                    or head["protocol_type"] != g.protocol_type or head["group_type"] != g.group_type \
                    or head["assignor"] != g.assignor or head["generation"] != g.generation or head["error"] != g.error \
                    or head["coordinator"] != g.coordinator:
                head = _head(g, head["topics"], len(self.keys))
            self.head = head
        else:
            keys = self.keys = set(g.offsets)
            for m in g.members:
                keys.update(f"{a[0]}:{a[1]}" for a in m.assignment)
            by_topic: dict[str, list[tuple[str, str]]] = {}
            for key in keys:
                topic, _, partition = key.rpartition(":")
                by_topic.setdefault(topic, []).append((partition, key))
            self.by_topic = list(by_topic.items())
            self.head = _head(g, sorted(by_topic), len(keys))
        keys = self.keys
        time_lags = [s for k, s in zip(g.lag_keys, g.lag_seconds, strict=True) if s is not None and k in keys]
        self.tail: dict[str, Any] = {"time_lag": max(time_lags, default=None), "status": getattr(g, "status", None)}


def _same_partitions(g: GroupState, before: GroupState) -> bool:
    """Does `g` commit on and assign the same partitions as `before`?"""
    return g.offsets.keys() == before.offsets.keys() and len(g.members) == len(before.members) and \
        all(a.assignment == b.assignment for a, b in zip(g.members, before.members, strict=True))


def _head(g: GroupState, topics: list[str], partitions: int) -> dict[str, Any]:
    return {
        "group": g.group_id,
        "state": g.state,
        "protocol_type": g.protocol_type,
        "group_type": g.group_type,
        "assignor": g.assignor,
        "generation": g.generation,
        "error": g.error,
        "members": len(g.members),
        "coordinator": g.coordinator,
        "topics": topics,
        "partitions": partitions,
    }


# Per cluster, per group: its row's plan, of the GroupState it was made from.
_plans: dict[str, dict[str, _Plan]] = {}


def _plan(snap: Snapshot, g: GroupState) -> _Plan:
    plans = _plans.setdefault(snap.cluster, {})
    plan = plans.get(g.group_id)
    if plan is None or plan.group is not g:
        plan = plans[g.group_id] = _Plan(g, plan)
    return plan


def _group_row(snap: Snapshot, g: GroupState, ends: _Ends) -> dict[str, Any]:
    """The group's summary: what `partition_rows` gives summed up, without a row per partition (a
    lag sort makes one for every group of a version, so it stays a single pass over the keys)."""
    plan = _plan(snap, g)
    committed, reported = g.offsets, g.broker_lag
    total = unknown = 0
    top: int | None = None
    for topic, entries in plan.by_topic:
        of = ends.of(topic)
        for partition, key in entries:
            lag = reported.get(key) if reported else None
            if lag is None:
                offset = committed.get(key)
                end = of.get(partition) if offset is not None else None
                if end is None or offset is None:
                    unknown += 1
                    continue
                lag = end - offset if end > offset else 0
            total += lag
            if top is None or lag > top:
                top = lag
    return {**plan.head, "unknown_lag_partitions": unknown, "total_lag": total, "max_lag": 0 if top is None else top,
            **plan.tail}


@dataclass
class GroupsPage:
    rows: list[dict[str, Any]]
    total: int
    page: int
    pages: int


# The sorts (and every filter) that need only what a group says of itself, not its lag: a page
# sorted by them makes the rows it shows only (`light_rows`).
LIGHT_SORTS = frozenset({"group", "state", "members", "status"})
_light_cache: dict[str, tuple[tuple[Any, ...], list[dict[str, Any]]]] = {}


def light_rows(snap: Snapshot) -> list[dict[str, Any]]:
    """Per group, what the groups list filters and sorts by when not by lag: its id, state, type,
    members and status (once per snapshot version). The full rows, with the lag over every
    partition, are then made for the rows a page shows."""
    key = (snap.version, snap.groups_at)
    held = _light_cache.get(snap.cluster)
    if held is not None and held[0] == key:
        return held[1]
    rows = [{"group": g.group_id, "state": g.state, "group_type": g.group_type, "members": len(g.members),
             "status": getattr(g, "status", None)} for g in snap.groups.values()]
    _light_cache[snap.cluster] = (key, rows)
    return rows


_name_order: dict[str, tuple[Mapping[str, GroupState], bool]] = {}


def _in_name_order(snap: Snapshot) -> bool:
    """Are the snapshot's groups in the order of their names (as the store reads them)? Once per version's dict."""
    held = _name_order.get(snap.cluster)
    if held is None or held[0] is not snap.groups:
        names = list(snap.groups)
        held = _name_order[snap.cluster] = (snap.groups, names == sorted(names))  # (a sort of sorted names: a pass in C)
    return held[1]


def groups_page(snap: Snapshot, *, query: str = "", regex: bool = False, sort: str = "group", descending: bool = False,
                page: int = 1, per_page: int = 50, state: str = "", kind: str = "",
                visible: Callable[[str], bool] | None = None) -> GroupsPage:
    """`visible`: the group ids the user may see (None: all of them), cut before the count and the pages."""
    if sort not in SORTS:
        raise BadParameter(f"'sort' must be one of {', '.join(SORTS)}, not '{sort[:50]}'.")
    light = sort in LIGHT_SORTS
    if light and sort == "group" and not (query or state or kind) and visible is None and _in_name_order(snap):
        # Every group, by name (the order the store keeps them in): the page's groups are a slice.
        total = len(snap.groups)
        pages = max(1, math.ceil(total / per_page))
        page = min(max(1, page), pages)
        names = reversed(list(snap.groups)) if descending else iter(snap.groups)  # (names: a group is parsed when asked for)
        ends = _Ends(snap)
        shown = [group_row(snap, snap.groups[gid], ends) for gid in islice(names, (page - 1) * per_page, page * per_page)]
        return GroupsPage(shown, total, page, pages)
    if not light:
        return _lag_page(snap, query, regex, sort, descending, page, per_page, state, kind, visible)
    every = light_rows(snap)

    def build() -> list[dict[str, Any]]:
        rows = _filtered(every, query, regex, state, kind, visible)
        return sorted(rows, key=lambda r: sort_key(sort, r), reverse=descending)

    rows = ordered("groups-light", snap.cluster, every, (query, regex, state, kind, sort, descending, getattr(visible, "key", None)), build)
    shown, page, pages = paginate(rows, page, per_page)
    ends = _Ends(snap)
    shown = [group_row(snap, snap.groups[r["group"]], ends) for r in shown]
    return GroupsPage(shown, len(rows), page, pages)


def _lag_page(snap: Snapshot, query: str, regex: bool, sort: str, descending: bool, page: int, per_page: int, state: str,
              kind: str, visible: Callable[[str], bool] | None) -> GroupsPage:
    """A page of the groups sorted by what needs every group's lag: from the sort order the
    cluster's GroupTable keeps (moved by each version's changed rows), a slice of it when nothing is
    filtered, else it filtered in order (once per version and parameters)."""
    kept = table(snap)
    order = kept.order(sort)
    if not (query or state or kind) and visible is None:
        total = len(order)
        pages = max(1, math.ceil(total / per_page))
        page = min(max(1, page), pages)
        names = order.names(descending, (page - 1) * per_page, page * per_page)
        return GroupsPage([kept.rows[gid] for gid in names], total, page, pages)

    def build() -> list[dict[str, Any]]:
        return _filtered([kept.rows[gid] for gid in order.names(descending)], query, regex, state, kind, visible)

    rows = ordered("groups", snap.cluster, kept.listed(), (query, regex, state, kind, sort, descending, getattr(visible, "key", None)), build)
    shown, page, pages = paginate(rows, page, per_page)
    return GroupsPage(shown, len(rows), page, pages)


def _filtered(rows: list[dict[str, Any]], query: str, regex: bool, state: str, kind: str,
              visible: Callable[[str], bool] | None) -> list[dict[str, Any]]:
    """The rows the user may see that match the search and the state and type filters, in their order."""
    rows = rows if visible is None else [r for r in rows if visible(r["group"])]
    rows = search(rows, "group", query, regex)
    if state:
        rows = [r for r in rows if r["state"] == state]
    if kind:
        rows = [r for r in rows if r["group_type"] == kind]
    return rows


_absent: dict[tuple[str, str], float] = {}  # (cluster, group) -> until when it is not asked about again


def group(snap: Snapshot, group_id: str) -> GroupState:
    g = snap.groups.get(group_id)
    if g is None:
        _said_if_refused(snap, group_id)
        raise NotFound(f"Consumer group '{group_id}' does not exist on cluster '{snap.cluster}'.")
    return g


def _said_if_refused(snap: Snapshot, group_id: str) -> None:
    """Kafka lists only the groups the console's principal may describe: a group the snapshot lacks
    may be one it hides, and then Kafka's refusal (which names what is missing) is the answer, not a
    404. A group found absent or hidden is not asked about again for two seconds."""
    key = (snap.cluster, group_id)
    if not snap.reachable or _absent.get(key, 0.0) >= time.monotonic():
        return
    try:
        gateway.for_cluster(snap.cluster).group_state(group_id)
    except NotAuthorized:
        raise
    except GatewayError:
        pass  # unreachable or absent: the snapshot's answer stands
    _absent[key] = time.monotonic() + 2.0


def group_detail(snap: Snapshot, group_id: str) -> dict[str, Any]:
    g = group(snap, group_id)
    summary = group_row(snap, g)
    rows = partition_rows(snap, g)
    blocked = readable.add_stable_offsets(snap.cluster, rows)
    return {
        **summary,
        "partitions": rows,
        "lag_readable": sum(r["lag_readable"] or 0 for r in rows),
        "blocked_by": blocked,
        "as_of": snap.groups_at,  # (when the sample these offsets, lags and time lags come from began, epoch seconds)
        "member_list": [
            {"member_id": m.member_id, "client_id": m.client_id, "host": m.host, "instance_id": m.instance_id,
             "epoch": m.epoch, "assignment": [f"{a[0]}-{a[1]}" for a in m.assignment],
             "target_assignment": None if m.target_assignment is None else [f"{a[0]}-{a[1]}" for a in m.target_assignment]}
            for m in g.members
        ],
    }
