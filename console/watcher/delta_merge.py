"""The watcher's side of the sampling process's deltas: each one put back together into a whole
Sample (DeltaMerger), in steps that give way to the metadata cycle.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any, cast

from console.snapshots import store
from console.snapshots.parts import GROUP_PART
from console.watcher.columns import ListColumns, OffsetColumns
from console.watcher.deltas import SampleDelta
from console.watcher.sample import Sample
from console.watcher.size_columns import unpack_sizes

TOPIC_LISTS_MAX = 100_000  # distinct lists of topics the merger shares (DeltaMerger._topics): forgotten all at once beyond
# Topics a step of DeltaMerger.apply takes: small enough that a cycle waiting for its turn
# (turns.CycleFirst) waits only a few tens of milliseconds.
MERGE_STEP_TOPICS = 1_000


def _chunks(packed: Mapping[str, Any], size: int) -> Iterator[dict[str, Any]]:
    items = iter(packed.items())
    while chunk := dict(itertools.islice(items, size)):
        yield chunk


class DeltaMerger:
    """In the watcher: each delta back into a whole Sample (new mappings; the ones handed out
    before are never changed, but for `group_parts`: see `apply_piece`)."""

    def __init__(self, give_way: Callable[[], None] | None = None) -> None:
        # Called between the steps of `apply` (turns.CycleFirst.give_way): the watcher's metadata
        # cycle, sharing this interpreter, runs first.
        self.give_way = give_way or (lambda: None)
        # (by topic: columns.py)
        self.ends = OffsetColumns()
        self.starts = OffsetColumns()
        self.sizes: ListColumns[Mapping[str, int]] | None = None
        # Each group's digest, and its JSON until a save wrote it, keyed as stored ("g:<id>"): what
        # the snapshot's content takes (store.GroupParts). None until the first groups came.
        self.group_parts: store.GroupParts | None = None
        self.group_topics: dict[str, list[str]] = {}
        self.rates: Mapping[str, float] = {}
        # One list of topic names for the groups that read the same topics (each delta brings new
        # lists and strings for every group it carries); never changed once handed out.
        self._topic_lists: dict[tuple[str, ...], list[str]] = {}
        # The groups of the pass on its way (its pieces, `apply_piece`): the topics each reads, put in
        # `group_topics` with the delta.
        self._arrived: dict[str, list[str]] = {}
        # The offsets and sizes of the pass on its way (its pieces, `apply_offsets`), by which.
        self._pending: dict[str, dict[str, Any]] = {}

    def _topics(self, names: list[str]) -> list[str]:
        key = tuple(names)
        found = self._topic_lists.get(key)
        if found is None:
            if len(self._topic_lists) >= TOPIC_LISTS_MAX:
                self._topic_lists = {}
            found = self._topic_lists[key] = [sys.intern(n) for n in names]
        return found

    def apply_piece(self, groups: Mapping[str, tuple[bytes, list[str]]]) -> None:
        """A piece of the next delta's changed groups (or of every group, sent again when asked:
        `DeltaMaker.every_group`): each group's JSON replaces its last one in `group_parts` at once,
        in the object handed out, because gathered until their delta came, a pass's changed
        groups were held next to the ones they replace and made the watcher's process peak with
        each pass. A snapshot made meanwhile stores each group as one pass or the next saw it, every group
        there: the set of groups, and the topics each reads, change only with the delta."""
        parts = self.group_parts
        if parts is None:
            parts = self.group_parts = store.GroupParts()
        parts.put((GROUP_PART + gid, raw) for gid, (raw, _topics) in groups.items())
        for gid, (_raw, topics) in groups.items():
            self._arrived[gid] = self._topics(topics)

    def apply_offsets(self, which: str, piece: Mapping[str, Any]) -> None:
        """A piece of the next delta's changed offsets or sizes ("ends", "starts" or "sizes"),
        packed by topic: kept until the delta comes (which brings the rest)."""
        self._pending.setdefault(which, {}).update(piece)

    def apply(self, d: SampleDelta) -> Sample:
        pending, self._pending = self._pending, {}
        if pending:  # (the pass's pieces first, then the delta's own: each topic is in one of them)
            d = replace(d, ends={**pending.get("ends", {}), **d.ends}, starts={**pending.get("starts", {}), **d.starts},
                        sizes={**pending["sizes"], **(d.sizes or {})} if "sizes" in pending else d.sizes)
            del pending
        if d.groups is not None:
            self.apply_piece(d.groups)  # (the delta's own groups: the pass's last piece)
        arrived, self._arrived = self._arrived, {}  # (every group the pass brought)
        if d.full:
            self.ends, self.starts, self.sizes, self.group_topics = OffsetColumns(), OffsetColumns(), None, {}
            if self.group_parts is not None:  # (a new process's first pass: only what it brought)
                self.group_parts.keep(map(GROUP_PART.__add__, arrived))
        give_way = self.give_way
        for chunk in _chunks(d.ends, MERGE_STEP_TOPICS):
            self.ends = self.ends.updated_packed(chunk)
            give_way()
        for chunk in _chunks(d.starts, MERGE_STEP_TOPICS):
            self.starts = self.starts.updated_packed(chunk)
            give_way()
        if d.sizes is not None:
            self.sizes = self.sizes or ListColumns()
            for chunk in _chunks(d.sizes, MERGE_STEP_TOPICS):
                self.sizes = self.sizes.updated(unpack_sizes(chunk))
                give_way()
        if d.groups is not None:
            parts, topics = cast(store.GroupParts, self.group_parts), self.group_topics
            if d.group_ids is not None:
                parts.keep(map(GROUP_PART.__add__, d.group_ids))  # (groups gone are left out)
                self.group_topics = {gid: arrived[gid] if gid in arrived else topics[gid] for gid in d.group_ids}
            elif arrived:
                self.group_topics = {**topics, **arrived}
        self.rates = d.rates
        changed = {(name, n) for packed in (d.ends, d.starts, d.sizes or {}) for name, parts in packed.items()
                   for n in parts[0].tolist()}
        give_way()
        return Sample(started=d.started, ends=self.ends, starts=self.starts, sizes=self.sizes, rates=d.rates,
                      groups=None, groups_changed=d.groups_changed and d.groups is not None, changed=tuple(changed),
                      group_parts=self.group_parts if d.groups is not None else None,
                      group_topics=self.group_topics if d.groups is not None else None)

