"""Cutting a snapshot into its stored parts (`content_parts`), each object's part kept while the
watcher holds the same object (TopicBytes, GroupBytes) so a cycle serialises only what changed."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping
from dataclasses import replace
from itertools import compress
from operator import is_not
from typing import Any

import orjson

from console.snapshots.encoding import CONTENT_OPTIONS, ReplicaSizes, sizes_fragment
from console.snapshots.model import Snapshot, json_default
from console.snapshots.parts import (
    GROUP_PART,
    TOPIC_FIELDS,
    TOPIC_PART,
    ContentParts,
    GroupsRead,
    group_part,
    header_with_format,
    part_json,
    topic_part,
    topic_summary,
)
from console.snapshots.tallies import TopicTally


def _content_default(obj: Any) -> Any:
    """`json_default` for CONTENT_OPTIONS (sorted keys), a partition's ReplicaSizes written from the
    text kept per replica set (`sizes_fragment`)."""
    if type(obj) is ReplicaSizes:
        return sizes_fragment(obj)
    return json_default(obj)


class TopicBytes:
    """Each topic's stored part (its JSON, compressed: `topic_part`), kept while the same TopicState
    object is in the snapshot.

    The watcher never changes a topic object once it is in a snapshot (a topic whose offsets
    changed is copied first), so the object's identity says its JSON is still what it was: a cycle
    serialises only the topics it built or changed. Nor does it change a partition's state once in
    a snapshot (a changed partition is a new object): of a changed topic, only the partitions that
    are not the same objects as in its last JSON are serialised, the others' JSON is copied from
    it: a cycle's changes touch many topics but few partitions of each, and serialising those
    topics whole would cost much of the metadata cycle."""

    def __init__(self) -> None:
        # name -> (the object, its stored part, its marks (a group's; a topic's: its tally, alone),
        # where each partition's JSON starts in it and each one's length)
        self._cache: dict[str, tuple[Any, bytes, tuple[Any, ...], array[int] | None]] = {}
        self.serialised = 0  # objects serialised by the last call
        self.partitions_serialised = 0  # of their partitions, those serialised (not copied)
        # The names (as `each` gave them out) serialised anew or gone since `take_touched`: the parts
        # whose digest can differ from what they were then (the watcher's next content's changes).
        # A cache nobody asks (the groups' in the watcher's process, the topics' when it samples in
        # its own) stops listing past TOUCHED_MAX and says "all" (None) when asked.
        self._touched: list[str] | None = []
        # What the last call was given and gave out (`_each_same_names`): the names and objects in
        # their order, the prefix, and the parts under their prefixed names.
        self._names: list[str] = []
        self._objects: list[Any] = []
        self._prefix = ""
        self._out: dict[str, bytes] = {}

    TOUCHED_MAX = 100_000

    def take_touched(self) -> list[str] | None:
        """The names serialised anew or gone since the last call (each once or more); None when
        more than TOUCHED_MAX were: then every part may have changed."""
        touched, self._touched = self._touched, []
        return touched

    def _touch(self, names: Iterable[str]) -> None:
        touched = self._touched
        if touched is not None:
            touched.extend(names)
            if len(touched) > self.TOUCHED_MAX:
                self._touched = None

    MARKED = False  # whether `_marks` says anything (a topic's: no; identity alone decides)

    @staticmethod
    def _marks(obj: Any) -> tuple[Any, ...]:
        """What, besides the object's identity, says its JSON is unchanged."""
        return ()

    def _entry(self, obj: Any, last: tuple[Any, bytes, tuple[Any, ...], array[int] | None] | None) -> \
            tuple[Any, bytes, tuple[Any, ...], array[int] | None]:
        """A topic's JSON, as `orjson.dumps(topic, option=CONTENT_OPTIONS)` writes it, with where its
        partitions are in it: where the first starts, then each one's length (`last`: the name's
        entry before, whose partitions' JSON is reused for the same partition objects at the same
        places). A run of partitions reused is copied as one slice of the JSON before: a sampling
        pass changes one or two partitions of thousands of topics, and copying them one by one
        cost more than serialising the changed ones."""
        # (orjson writes a dataclass's fields in their order, sorted keys or not: so is the shell)
        shell = orjson.dumps({name: _NO_PARTITIONS if name == "partitions" else getattr(obj, name) for name in TOPIC_FIELDS})
        cut = shell.index(_PARTITIONS_KEY) + len(_PARTITIONS_KEY) - 1  # (between the brackets)
        head = shell[:cut]
        parts = obj.partitions
        places = array("I", [len(head)])
        pieces: list[bytes] = []
        if last is not None and last[3] is not None:
            old_parts, old_raw, old_places = last[0].partitions, part_json(last[1]), last[3]
            changed = list(compress(range(len(parts)), map(is_not, old_parts, parts)))  # (the places not the same objects)
            changed.extend(range(len(old_parts), len(parts)))  # (partitions added)
            at = old_places[0]  # (where the partition `done` starts in the JSON before)
        else:
            old_raw, old_places, changed, at = b"", array("I"), list(range(len(parts))), 0
        done = 0
        for i in [*changed, len(parts)]:
            if i > done:  # partitions done..i-1 as they were: one slice, their commas with them
                lengths = old_places[done + 1:i + 1]
                size = sum(lengths) + len(lengths) - 1
                pieces.append(old_raw[at:at + size])
                places.extend(lengths)
                at += size + 1
            if i == len(parts):
                break
            raw = orjson.dumps(parts[i], default=_content_default, option=CONTENT_OPTIONS)
            pieces.append(raw)
            places.append(len(raw))
            if i + 1 < len(old_places):
                at += old_places[i + 1] + 1  # (past its JSON before)
            done = i + 1
        self.partitions_serialised += len(changed)
        # Its tally, from the one kept with its last part when it can tell (TopicTally.changed).
        tally = last[2][0].changed(last[0], obj, changed) if last is not None and last[3] is not None and last[2] else None
        if tally is not None:
            summary = topic_summary(obj, tally, last[2][0], last[1])  # type: ignore[index]
        else:
            tally = TopicTally.of(obj)
            summary = topic_summary(obj, tally)
        return obj, topic_part(head + b",".join(pieces) + shell[cut:], summary), (tally,), places

    def each(self, objects: Mapping[str, Any], prefix: str = "") -> dict[str, bytes]:
        """Each object's stored part (a topic's `topic_part`, a group's `group_part`; the same bytes
        object as last time for an object seen then), under `prefix` + its name."""
        if not self.MARKED:
            names = list(objects)
            if names == self._names and prefix == self._prefix:
                return self._each_same_names(names, list(objects.values()))
            self._names, self._objects, self._out = [], [], {}  # (no second hold on the parts replaced below)
        kept: dict[str, tuple[Any, bytes, tuple[Any, ...], array[int] | None]] = {}
        out: dict[str, bytes] = {}
        cache, fresh, marks = self._cache, 0, self._marks if self.MARKED else None
        touched: list[str] = []
        known = len(cache)
        self.partitions_serialised = 0
        for name, t in objects.items():
            hit = cache.get(name)
            # (nearly every topic is the same object as last cycle: no marks to make and compare for them)
            if hit is None or hit[0] is not t or (marks is not None and not _same_marks(hit[2], marks(t))):
                # (the last JSON let go of as the new one is made: a cycle that changes every topic
                # does not hold both; an exception on the way only costs those topics a new one)
                if hit is None:
                    known += 1  # (a name new to the cache)
                hit = self._entry(t, cache.pop(name, None))
                fresh += 1
                touched.append(prefix + name if prefix else name)
            kept[name] = hit
            out[prefix + name if prefix else name] = hit[1]
        if known != len(kept):  # (names of the cache before that `objects` no longer has)
            touched.extend(prefix + name if prefix else name for name in cache if name not in kept)
        self._touch(touched)
        self._cache, self.serialised = kept, fresh
        if not self.MARKED:
            self._names, self._objects, self._prefix, self._out = names, list(objects.values()), prefix, dict(out)
        return out

    def _each_same_names(self, names: list[str], objects: list[Any]) -> dict[str, bytes]:
        """`each` given the same names in the same order as last time: the objects that are not
        the same ones found by comparing the two lists (in C, not a step per topic in Python: a
        cycle looks at every topic and changes few of them), only those
        serialised, and the parts given out last time copied with theirs put in."""
        cache, out, prefix = self._cache, self._out, self._prefix
        touched: list[str] = []
        self.partitions_serialised = 0
        changed = list(compress(range(len(names)), map(is_not, objects, self._objects)))
        try:
            for i in changed:
                name = names[i]
                key = prefix + name if prefix else name
                # (as `each`: the last JSON let go of as the new one is made; its place in `out` kept)
                out[key] = b""
                hit = cache[name] = self._entry(objects[i], cache.pop(name, None))
                out[key] = hit[1]
                touched.append(key)
                self._objects[i] = objects[i]
        finally:
            self._touch(touched)
        self.serialised = len(changed)
        return dict(out)

    def fragments(self, topics: dict[str, Any]) -> dict[str, orjson.Fragment]:
        return {name: orjson.Fragment(part_json(b)) for name, b in self.each(topics).items()}


_NO_PARTITIONS: list[Any] = []
_PARTITIONS_KEY = b'"partitions":[]'


def _same_marks(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return len(a) == len(b) and all(x is y or x == y for x, y in zip(a, b, strict=True))


class GroupBytes(TopicBytes):
    """Each group's JSON, kept while the same GroupState object holds the same evaluation. Within
    the watcher's process the evaluation renews a group state's status and lag columns in place
    (new lists each time it judges the group), so those are compared too: by identity first."""

    MARKED = True

    @staticmethod
    def _marks(obj: Any) -> tuple[Any, ...]:
        return (obj.status, obj.time_lag, obj.lag_keys, obj.lag_status, obj.lag_seconds)

    def _entry(self, obj: Any, last: tuple[Any, bytes, tuple[Any, ...], array[int] | None] | None) -> \
            tuple[Any, bytes, tuple[Any, ...], array[int] | None]:
        return obj, group_part(obj), self._marks(obj), None



def content_parts(snap: Snapshot, topic_bytes: TopicBytes | None = None, group_bytes: GroupBytes | None = None,
                  group_parts: dict[str, bytes] | None = None) -> ContentParts:
    """The content as stored: a header (everything but the stamp, the topics and the groups), and
    each topic's and each group's JSON (what `Snapshot.content_bytes` holds, in parts, so a change
    rewrites only the topics and groups it touched). The caches keep each object's JSON while
    it is the same object. `group_parts`: the groups' JSON as made elsewhere (the sampling
    process), keyed as stored ("g:<id>"), used instead of `groups`: those not stored yet (the
    watcher holds only the digests of the others: GroupParts)."""
    blank = replace(snap, version=0, taken_at=None, checked_at=None, offsets_at=None, groups_at=None, quorum=None,
                    quorum_error=None, topics={}, groups={})
    header = header_with_format(orjson.dumps(blank, option=CONTENT_OPTIONS))
    parts = (topic_bytes if topic_bytes is not None else TopicBytes()).each(snap.topics, TOPIC_PART)
    if group_parts is not None:
        parts.update(group_parts)
    elif isinstance(snap.groups, GroupsRead):  # (as read: their stored parts)
        parts.update((GROUP_PART + gid, held.raw) for gid, held in snap.groups.held().items())
    else:
        parts.update((group_bytes if group_bytes is not None else GroupBytes()).each(snap.groups, GROUP_PART))
    return header, parts
