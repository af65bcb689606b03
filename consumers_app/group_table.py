"""The groups list's summary rows of a cluster, kept across snapshot versions (`GroupTable`): a new
version makes again only the rows of the groups it changed and of the groups reading a topic whose
end offsets it moved, and moves each sort order kept by those rows only (KeptOrder)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from console.kept_order import KeptOrder, Key
from console.snapshots import GroupState, Snapshot, TopicState, group_holders

_STATUS_ORDER = {None: -1, "NOTFOUND": 0, "OK": 1, "WARN": 2, "ERR": 3}


def sort_key(sort: str, row: Mapping[str, Any]) -> Key:
    """A row's key in the groups list sorted by `sort` (ascending; unknown values last), ending with
    its group's id (unique: descending is the exact reverse)."""
    gid = row["group"]
    if sort == "group":
        return (gid,)
    if sort == "status":
        return (_STATUS_ORDER.get(row["status"], -1), gid)
    value = row[sort]
    return (value is None, value if value is not None else 0, gid)


def _ends(t: TopicState | None) -> Any:
    """What a group's row reads of a topic: its end offsets (a topic read from the store has them
    from its summary, without parsing its partitions)."""
    if t is None:
        return None
    stored = t.stored_ends
    if stored is not None:
        return stored
    return [x for p in t.partitions for x in (p.partition, p.end_offset)]


RowMaker = Callable[[Snapshot, GroupState, Any], dict[str, Any]]


class GroupTable:
    """Every group's summary row of one cluster, brought up to each snapshot version it is given
    (`update`). A row is made from its group and its topics' end offsets only, so the groups whose
    object the store kept (the same holder of its stored part) and whose topics' end offsets are
    the same keep their rows: what a version changes is found by comparing the two versions' dicts
    by identity (a pass in C, not a step per row in Python), and the end offsets of the topics it
    changed by value (a topic whose leader or ISR alone moved changes no group's lag)."""

    def __init__(self, make_row: RowMaker, ends_cache: Callable[[Snapshot, dict[str, Any]], Any]) -> None:
        self._make_row = make_row
        self._ends_cache = ends_cache
        self.holders: Mapping[str, object] = {}  # the snapshot's groups as held (GroupsRead's holders, or the states)
        self.topics: Mapping[str, TopicState] = {}
        self.ends: dict[str, Any] = {}  # topic -> its end offsets the rows were made from (`_ends`)
        self.ends_text: dict[str, Any] = {}  # topic -> its end offsets as the rows read them (group_rows._Ends)
        self.rows: dict[str, dict[str, Any]] = {}
        self.read: dict[str, list[str]] = {}  # group -> the topics its row read
        self.readers: dict[str, set[str]] = {}  # topic -> the groups whose rows read it
        self.orders: dict[str, KeptOrder] = {}
        self._listed: list[dict[str, Any]] | None = None
        self.made = 0  # rows made by the last update (what a version cost)
        # (a web process may serve two requests at once: one brings the rows and orders up to date at a time)
        self._lock = threading.Lock()

    def update(self, snap: Snapshot) -> list[str]:
        """Bring the rows up to `snap`; the groups whose rows were made again or dropped."""
        if group_holders(snap.groups) is self.holders and snap.topics is self.topics:
            return []
        with self._lock:
            return self._update(snap)

    def _update(self, snap: Snapshot) -> list[str]:
        groups = snap.groups
        holders = group_holders(groups)
        topics = snap.topics
        if holders is self.holders and topics is self.topics:
            return []
        before, topics_before = self.holders, self.topics
        affected = {gid for gid, h in holders.items() if before.get(gid) is not h}
        gone = before.keys() - holders.keys()
        moved = [name for name, t in topics.items() if topics_before.get(name) is not t]
        moved.extend(topics_before.keys() - topics.keys())
        readers = self.readers
        for name in moved:
            ends = _ends(topics.get(name))
            if self.ends.get(name) != ends:
                if ends is None:
                    self.ends.pop(name, None)
                else:
                    self.ends[name] = ends
                self.ends_text.pop(name, None)
                affected.update(readers.get(name, ()))
        affected.difference_update(gone)
        ends_of = self._ends_cache(snap, self.ends_text)
        rows, read = self.rows, self.read
        for gid in affected:
            row = rows[gid] = self._make_row(snap, groups[gid], ends_of)
            names = row["topics"]
            if read.get(gid) != names:
                self._read_by(gid, read.get(gid, ()), names)
                read[gid] = names
        for gid in gone:
            rows.pop(gid, None)
            self._read_by(gid, read.pop(gid, ()), ())
        for sort, order in self.orders.items():
            order.move({gid: sort_key(sort, rows[gid]) for gid in affected}, gone)
        self.holders, self.topics, self._listed, self.made = holders, topics, None, len(affected)
        return [*affected, *gone]

    def _read_by(self, gid: str, was: Any, now: Any) -> None:
        readers = self.readers
        for name in was:
            held = readers.get(name)
            if held is not None:
                held.discard(gid)
                if not held:
                    del readers[name]
        for name in now:
            readers.setdefault(name, set()).add(gid)

    def listed(self) -> list[dict[str, Any]]:
        """The rows in the order of the snapshot's groups (one list per version)."""
        if self._listed is None:
            rows = self.rows
            self._listed = [rows[gid] for gid in self.holders]
        return self._listed

    def order(self, sort: str) -> KeptOrder:
        """The rows sorted by `sort` (group_rows.SORTS), made on first use and kept from then on."""
        order = self.orders.get(sort)
        if order is None:
            with self._lock:
                order = self.orders.get(sort)
                if order is None:
                    order = self.orders[sort] = KeptOrder(sort_key(sort, r) for r in self.rows.values())
        return order
