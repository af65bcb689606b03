"""Consumer groups: lag and ownership from the watcher's snapshot; offset resets through the gateway."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, cast

from django.db import connection
from django.db.models import Field

from console import gateway
from console.auth import require
from console.errors import BadParameter
from console.gateway.errors import NotFound
from console.listing import ordered, paginate, search
from console.snapshots import store
from console.snapshots.model import GroupState, Snapshot

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


def end_offsets(snap: Snapshot) -> dict[tuple[str, int], int | None]:
    return {(t.name, p.partition): p.end_offset for t in snap.topics.values() for p in t.partitions}


def _lag(g: GroupState, tp: tuple[str, int], offset: int | None, end: int | None) -> int | None:
    """End offset minus committed offset, floored at 0 (ALGORITHMS.md 1); for a share group, the lag
    Kafka itself reports, which leaves out records acknowledged beyond the start offset."""
    reported = g.broker_lag.get(f"{tp[0]}:{tp[1]}")
    if reported is not None:
        return reported
    return None if offset is None or end is None else max(0, end - offset)


def partition_rows(snap: Snapshot, g: GroupState, ends: dict[tuple[str, int], int | None] | None = None) -> list[dict[str, Any]]:
    """Per partition the group committed or is assigned: committed, end, lag (None = unknown), owner."""
    ends = end_offsets(snap) if ends is None else ends
    owners = {(a[0], a[1]): m for m in g.members for a in m.assignment}
    committed = {split_key(k): v for k, v in g.offsets.items()}
    evaluated = g.lag_of()
    rows = []
    for tp in sorted(committed.keys() | owners.keys()):
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

    def __init__(self, snap: Snapshot) -> None:
        self.topics = snap.topics
        self.of_text: dict[str, dict[str, int | None]] = {}

    def of(self, topic: str) -> dict[str, int | None]:
        """The topic's end offsets by partition number as text (as in a group's "topic:partition" keys)."""
        ends = self.of_text.get(topic)
        if ends is None:
            t = self.topics.get(topic)
            ends = self.of_text[topic] = {} if t is None else {str(p.partition): p.end_offset for p in t.partitions}
        return ends


# Per cluster: the version's key and its rows; and per group what its row was made from (the group,
# its topics' names and their TopicStates) with the row.
_rows_cache: dict[str, tuple[tuple[Any, ...], list[dict[str, Any]]]] = {}
_made: dict[str, dict[str, tuple[GroupState, list[str], list[Any], dict[str, Any]]]] = {}


def group_rows(snap: Snapshot) -> list[dict[str, Any]]:
    """One summary row per group (`group_row`), computed once per snapshot version."""
    key = (snap.version, snap.offsets_at, snap.groups_at)
    held = _rows_cache.get(snap.cluster)
    if held is not None and held[0] == key:
        return held[1]
    ends = _Ends(snap)
    rows = [group_row(snap, g, ends) for g in snap.groups.values()]
    made = _made.get(snap.cluster, {})
    if len(made) > len(snap.groups):  # (groups gone since)
        _made[snap.cluster] = {gid: made[gid] for gid in snap.groups if gid in made}
    _rows_cache[snap.cluster] = (key, rows)
    return rows


def group_row(snap: Snapshot, g: GroupState, ends: _Ends | None = None) -> dict[str, Any]:
    """The group's summary row. It is made from the group and its topics' end offsets only: a group
    whose GroupState and topics' TopicStates are the objects its row was last made from (the store
    keeps what did not change) keeps that row. At 50,000 groups of 30 partitions every row made
    again took 4 s a version."""
    made = _made.setdefault(snap.cluster, {})
    topics = snap.topics
    seen = made.get(g.group_id)
    if seen is not None and seen[0] is g:
        names = seen[1]
        depends = [topics.get(n) for n in names]
        if all(a is b for a, b in zip(depends, seen[2], strict=True)):
            return seen[3]
    else:
        names = g.topics()
        depends = [topics.get(n) for n in names]
    row = _group_row(snap, g, _Ends(snap) if ends is None else ends)
    made[g.group_id] = (g, names, depends, row)
    return row


def _group_row(snap: Snapshot, g: GroupState, ends: _Ends) -> dict[str, Any]:
    """The group's summary: what `partition_rows` gives summed up, without a row per partition (a
    fifth of the time: a lag sort at 50,000 groups makes tens of thousands of these a version)."""
    keys = set(g.offsets)
    for m in g.members:
        keys.update(f"{a[0]}:{a[1]}" for a in m.assignment)
    committed, reported = g.offsets, g.broker_lag
    topics: set[str] = set()
    total = unknown = 0
    top: int | None = None
    for key in keys:
        topic, _, partition = key.rpartition(":")
        topics.add(topic)
        lag = reported.get(key)
        if lag is None:
            offset = committed.get(key)
            end = ends.of(topic).get(partition) if offset is not None else None
            if end is None or offset is None:
                unknown += 1
                continue
            lag = max(0, end - offset)
        total += lag
        top = lag if top is None or lag > top else top
    time_lags = [s for k, s in zip(g.lag_keys, g.lag_seconds, strict=True) if s is not None and k in keys]
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
        "topics": sorted(topics),
        "partitions": len(keys),
        "unknown_lag_partitions": unknown,
        "total_lag": total,
        "max_lag": 0 if top is None else top,
        "time_lag": max(time_lags, default=None),
        "status": getattr(g, "status", None),
    }


@dataclass
class GroupsPage:
    rows: list[dict[str, Any]]
    total: int
    page: int
    pages: int


_STATUS_ORDER = {None: -1, "NOTFOUND": 0, "OK": 1, "WARN": 2, "ERR": 3}


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
    every = light_rows(snap) if light else group_rows(snap)

    def key(r: dict[str, Any]) -> Any:
        if sort == "status":
            return (_STATUS_ORDER.get(r["status"], -1), r["group"])
        value = r[sort]
        return (value is None, value if value is not None else 0, r["group"]) if sort != "group" else r["group"]

    def build() -> list[dict[str, Any]]:
        rows = every if visible is None else [r for r in every if visible(r["group"])]
        rows = search(rows, "group", query, regex)
        if state:
            rows = [r for r in rows if r["state"] == state]
        if kind:
            rows = [r for r in rows if r["group_type"] == kind]
        return sorted(rows, key=key, reverse=descending)

    rows = ordered("groups-light" if light else "groups", snap.cluster, every, (query, regex, state, kind, sort, descending, getattr(visible, "key", None)), build)
    shown, page, pages = paginate(rows, page, per_page)
    if light:
        ends = _Ends(snap)
        shown = [group_row(snap, snap.groups[r["group"]], ends) for r in shown]
    return GroupsPage(shown, len(rows), page, pages)


def group(snap: Snapshot, group_id: str) -> GroupState:
    g = snap.groups.get(group_id)
    if g is None:
        raise NotFound(f"Consumer group '{group_id}' does not exist on cluster '{snap.cluster}'.")
    return g


def group_detail(snap: Snapshot, group_id: str) -> dict[str, Any]:
    g = group(snap, group_id)
    summary = group_row(snap, g)
    return {
        **summary,
        "partitions": partition_rows(snap, g),
        "member_list": [
            {"member_id": m.member_id, "client_id": m.client_id, "host": m.host, "instance_id": m.instance_id,
             "epoch": m.epoch, "assignment": [f"{a[0]}-{a[1]}" for a in m.assignment],
             "target_assignment": None if m.target_assignment is None else [f"{a[0]}-{a[1]}" for a in m.target_assignment]}
            for m in g.members
        ],
    }


def lag_history(cluster: str, group_id: str, seconds: float = 3600) -> dict[str, list[Any]]:
    """The watcher's samples of the group's total lag and time lag over the last hour, for the chart."""
    import time

    from console.snapshots import store

    try:
        points = store.lag_history(cluster, group_id, time.time() - seconds)
    except Exception:  # noqa: BLE001 - the chart is secondary: an empty one beats a failed page
        points = []
    return {"t": [p[0] for p in points], "lag": [p[1] for p in points], "time_lag": [p[2] for p in points]}


def most_rebalancing(cluster: str, hours: float = 24, limit: int = 10,
                     visible: Callable[[str], bool] | None = None) -> list[dict[str, Any]]:
    """Groups that rebalanced most often in the last `hours`, with their total time spent rebalancing.
    `visible`: the group ids the user may see (the busiest 1,000 are read and cut)."""
    from datetime import UTC, datetime, timedelta

    from consumers_app.models import Rebalance

    since = datetime.now(tz=UTC) - timedelta(hours=hours)
    ended_at = cast(Field, Rebalance._meta.get_field("ended_at"))
    with connection.cursor() as cursor:
        cursor.execute(_busiest_sql(), [cluster, ended_at.get_db_prep_value(since, connection),
                                        limit if visible is None else max(limit, 1000)])
        found = [row for row in cursor.fetchall() if visible is None or visible(row[0])][:limit]
    return [{"group": group, "rebalances": count, "seconds": round(seconds or 0, 1), "last": _aware(last)}
            for group, count, seconds, last in found]


def _aware(value: Any) -> Any:
    """A time as the database hands it back from a raw query (text on SQLite) as an aware datetime."""
    from datetime import UTC

    from django.utils.dateparse import parse_datetime

    if isinstance(value, str):
        value = parse_datetime(value)
    if value is not None and value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value


@functools.cache
def _busiest_sql() -> str:
    """most_rebalancing's aggregate, written once (the ORM took longer to build it on each view of the
    groups page than the database took to answer it)."""
    from consumers_app.models import Rebalance

    qn = connection.ops.quote_name
    meta = Rebalance._meta
    column = {name: qn(str(cast(Field, meta.get_field(name)).column)) for name in ("id", "cluster", "group", "ended_at", "duration_s")}
    return (f"SELECT {column['group']}, COUNT({column['id']}), SUM({column['duration_s']}), MAX({column['ended_at']}) "
            f"FROM {qn(meta.db_table)} WHERE {column['cluster']} = %s AND {column['ended_at']} >= %s "
            f"GROUP BY {column['group']} ORDER BY COUNT({column['id']}) DESC, {column['group']} LIMIT %s")


# Offset reset (operator or admin; audited) ------------------------------------------------------------

RESET_TO = {"earliest", "latest", "timestamp", "offset", "shift", "group"}


@dataclass
class ResetSpec:
    to: str
    topics: list[str] = field(default_factory=list)  # empty: every topic the group has offsets for
    partitions: dict[str, list[int]] = field(default_factory=dict)  # topic -> partitions (only these)
    timestamp_ms: int | None = None
    offset: int | None = None
    shift: int | None = None
    from_group: str | None = None


def _scope(snap: Snapshot, g: GroupState, spec: ResetSpec) -> list[tuple[str, int]]:
    committed = [split_key(k) for k in g.offsets]
    if spec.partitions:
        chosen = []
        for topic, parts in spec.partitions.items():
            t = snap.topics.get(topic)
            if t is None:
                raise NotFound(f"Topic '{topic}' does not exist on cluster '{snap.cluster}'.")
            known = {p.partition for p in t.partitions}
            bad = sorted(set(parts) - known)
            if bad:
                raise BadParameter(f"Topic '{topic}' has no partition {', '.join(map(str, bad))}.")
            chosen += [(topic, p) for p in parts]
        return sorted(set(chosen))
    if spec.topics:
        chosen = []
        for topic in spec.topics:
            t = snap.topics.get(topic)
            if t is None:
                raise NotFound(f"Topic '{topic}' does not exist on cluster '{snap.cluster}'.")
            chosen += [(topic, p.partition) for p in t.partitions]
        return sorted(chosen)
    if not committed:
        raise BadParameter(f"Group '{g.group_id}' has no committed offsets; name the topics to reset.")
    return sorted(committed)


def plan_reset(cluster: str, snap: Snapshot, group_id: str, spec: ResetSpec) -> list[dict[str, Any]]:
    """The preview: per partition the current committed offset, the new one and the lag after.
    New offsets are clamped to the partition's current start and end, as Kafka's own tool does."""
    if spec.to not in RESET_TO:
        raise BadParameter(f"'to' must be one of {', '.join(sorted(RESET_TO))}, not '{spec.to[:30]}'.")
    g = group(snap, group_id)
    scope = _scope(snap, g, spec)
    gw = gateway.for_cluster(cluster)
    starts = gw.list_offsets(scope, "earliest")
    ends = gw.list_offsets(scope, "latest")
    current = {split_key(k): v for k, v in g.offsets.items()}
    if spec.to == "timestamp":
        if spec.timestamp_ms is None:
            raise BadParameter("Give the 'timestamp' to reset to.")
        import time

        if spec.timestamp_ms > time.time() * 1000 + 1000:
            raise BadParameter("The timestamp is in the future: there are no offsets there yet.")
        targets = gw.offsets_for_time(scope, spec.timestamp_ms)
    elif spec.to == "group":
        if not spec.from_group:
            raise BadParameter("Give the group to copy offsets from ('from_group').")
        other = {split_key(k): v for k, v in group(snap, spec.from_group).offsets.items()}
        missing = [f"{t}-{p}" for t, p in scope if (t, p) not in other]
        if missing:
            raise BadParameter(f"Group '{spec.from_group}' has no committed offset for {', '.join(missing[:10])}.")
        targets = {tp: other[tp] for tp in scope}
    else:
        targets = {}
        for tp in scope:
            if spec.to == "earliest":
                targets[tp] = starts.get(tp, 0)
            elif spec.to == "latest":
                targets[tp] = ends.get(tp, 0)
            elif spec.to == "offset":
                if spec.offset is None or spec.offset < 0:
                    raise BadParameter("Give a non-negative 'offset' to reset to.")
                targets[tp] = spec.offset
            else:
                if spec.shift is None:
                    raise BadParameter("Give the 'shift' (a positive or negative number of messages).")
                base = current.get(tp)
                if base is None:
                    raise BadParameter(f"Group '{group_id}' has no committed offset on {tp[0]}-{tp[1]} to shift from.")
                targets[tp] = base + spec.shift
    rows = []
    for tp in scope:
        lo, hi = starts.get(tp, 0), ends.get(tp, 0)
        new = min(max(targets[tp], lo), hi)
        rows.append({"topic": tp[0], "partition": tp[1], "current": current.get(tp), "new": new,
                     "start_offset": lo, "end_offset": hi, "lag_after": hi - new})
    return rows


def confirmed(group_id: str, confirm: str, change: str) -> None:
    """A change that loses a group's positions runs only when the group's id is typed again, on a page
    or in the API alike (`confirm`): a script or a stray click must not reach Kafka with a guess."""
    if confirm != group_id:
        given = "a different id" if confirm else "no confirmation"
        raise BadParameter(f"To {change}, give the group's id '{group_id}' again as 'confirm' ({given} was given); "
                           "nothing was changed.")


def check_sources(user: Any, cluster: str, spec: ResetSpec) -> None:
    """A reset that copies another group's offsets reads that group: the user must see it."""
    if spec.from_group:
        require(user, "group.view", cluster, group=spec.from_group)


def apply_reset(user: Any, cluster: str, snap: Snapshot, group_id: str, spec: ResetSpec, confirm: str) -> list[dict[str, Any]]:
    check_sources(user, cluster, spec)
    group(snap, group_id)  # an unknown group is a 404, as in the preview, before Kafka is asked
    confirmed(group_id, confirm, f"reset the offsets of group '{group_id}'")
    gw = gateway.for_cluster(cluster)
    state, members, kind = gw.group_state(group_id)
    if state not in {"Empty", "Dead"} or members:
        raise BadParameter(f"Group '{group_id}' is {state} with {members} member{'s' if members != 1 else ''}: Kafka "
                           "only lets offsets be reset while the group is empty. Stop its consumers first.")
    plan = plan_reset(cluster, snap, group_id, spec)
    new = {(r["topic"], r["partition"]): r["new"] for r in plan}
    if kind == "share":  # a share group's start offsets (KIP-932)
        gw.alter_share_group_offsets(group_id, new)
    else:
        gw.alter_group_offsets(group_id, new)
    store.note_change(cluster, {f"group:{group_id}": 1})
    return plan  # audited by the caller (console.audit.audited), like every change


def delete_group(user: Any, cluster: str, snap: Snapshot, group_id: str, confirm: str) -> None:
    group(snap, group_id)
    confirmed(group_id, confirm, f"delete group '{group_id}'")
    gateway.for_cluster(cluster).delete_group(group_id)
    store.note_change(cluster, {f"group:{group_id}": 0})


def delete_group_topic_offsets(user: Any, cluster: str, snap: Snapshot, group_id: str, topic: str, confirm: str) -> int:
    g = group(snap, group_id)
    confirmed(group_id, confirm, f"delete the offsets of group '{group_id}' on topic '{topic}'")
    parts = [split_key(k) for k in g.offsets if split_key(k)[0] == topic]
    if not parts:
        raise BadParameter(f"Group '{group_id}' has no committed offsets on topic '{topic}'.")
    if g.group_type == "share":  # share groups forget whole topics
        gateway.for_cluster(cluster).delete_share_group_offsets(group_id, [topic])
    else:
        gateway.for_cluster(cluster).delete_group_offsets(group_id, parts)
    store.note_change(cluster, {f"group:{group_id}": 1})
    return len(parts)
