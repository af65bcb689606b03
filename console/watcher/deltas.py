"""A sampling pass as the sampling process sends it: what changed since the pass before
(SampleDelta), made by DeltaMaker in the child, with the changed groups and offsets sent ahead in
pieces so that neither process holds a whole pass's pickle at once.
"""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from console.snapshots import store
from console.snapshots.model import GroupState
from console.snapshots.parts import group_part
from console.watcher.columns import PackedOffsets, pack
from console.watcher.sample import Sample
from console.watcher.size_columns import PackedSizes, SizeColumns

# Changed groups per message: ahead of the delta they go in pieces of this many (the delta carries
# the last one), because one pickle of every changed group was held whole in both processes; the
# watcher puts each piece in place as it arrives (DeltaMerger.apply_piece).
GROUP_PIECE = 2000
# Partitions per message of a pass's changed offsets and sizes, sent ahead of the delta as the
# groups are: a pickle keeps its whole output and a copy of it, so a first pass sent whole made
# both processes peak far above what they held.
OFFSETS_PIECE = 20_000


@dataclass(frozen=True)
class SampleDelta:
    """One pass, as what changed since the pass before (or everything, when `full`)."""

    full: bool
    started: float
    # What changed, packed by topic (columns.pack, SizeColumns.changed_packed): a few arrays per
    # topic, not an object per partition to pickle.
    ends: PackedOffsets
    starts: PackedOffsets
    sizes: PackedSizes | None  # None: not read this pass
    rates: Mapping[str, float]
    groups: dict[str, tuple[bytes, list[str]]] | None  # of each group that changed: its JSON, the topics it reads;
    # None: the groups could not be read
    group_ids: list[str] | None  # every group, in order, when the set of groups changed (else None)
    groups_changed: bool
    events: list[dict[str, Any]] = field(default_factory=list)  # saved by the child, for the next broadcast
    stats: dict[str, Any] = field(default_factory=dict)


def _marks(g: GroupState) -> tuple[GroupState, int]:
    """What tells whether a group is as it was last sent: its state object (a state is never
    changed once made, but for its evaluation), and one digest of the evaluation's figures, which
    the evaluation renews in place (new lists or arrays when it judges the group). One digest,
    because holding the figures themselves kept every group's from the pass before alive through
    the next pass."""
    return (g, store.digest((g.status, g.time_lag, tuple(g.lag_keys), _figure(g.lag_status), _figure(g.lag_seconds))))


def _figure(value: Any) -> Any:
    """A per-partition figure as a hashable value: its type and bytes when it is packed (an array,
    or bytes of its own), else its items."""
    if isinstance(value, array):
        return (type(value), value.tobytes())
    if isinstance(value, bytes):
        return (type(value), bytes(value))
    return tuple(value)


def _same(a: tuple[GroupState, int], b: tuple[GroupState, int]) -> bool:
    return a[0] is b[0] and a[1] == b[1]


def _offset_pieces(which: str, packed: dict[str, Any], per_message: int) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """("offsets", which, {topic: packed values}) messages of whole topics, about `per_message`
    partitions each, taken out of `packed` (what stays goes with the delta) while more than that is
    left in it."""
    left = sum(len(parts[0]) for parts in packed.values())
    while left > per_message:
        piece: dict[str, Any] = {}
        count = 0
        for name in list(itertools.islice(packed, per_message)):
            if count >= per_message:
                break
            piece[name] = parts = packed.pop(name)
            count += len(parts[0])
        left -= count
        yield ("offsets", which, piece)
        del piece


class DeltaMaker:
    """In the child: each pass's Sample as a SampleDelta against the pass before. Groups go as
    their stored JSON (serialised here, where they are evaluated, and only when they changed), so
    the watcher never builds their objects."""

    def __init__(self) -> None:
        self._last: Sample | None = None
        self._sent: dict[str, tuple[GroupState, int]] = {}  # what each group was when last sent (`_marks`)

    def make(self, sample: Sample, events: list[dict[str, Any]], stats: dict[str, Any]) -> SampleDelta:
        """The pass as one delta, every changed group, offset and size in it."""
        [delta] = self.messages(sample, events, stats, piece=0, offsets_piece=0)
        return cast(SampleDelta, delta)

    def messages(self, sample: Sample, events: list[dict[str, Any]], stats: dict[str, Any],
                 piece: int | None = None, offsets_piece: int | None = None) -> Iterator[Any]:
        """The pass as the messages that carry it: ("offsets", "ends" | "starts" | "sizes", {...})
        pieces of whole topics' changed values, about `offsets_piece` partitions each
        (OFFSETS_PIECE; 0: none), and ("groups", {...}) pieces of `piece` changed groups
        (GROUP_PIECE; 0: none), then the delta with the rest (the watcher puts them together again:
        `RemoteSampler.receive`). Each piece's JSON is made as it is taken and each offsets piece
        let go once sent, so a pass that changed every group never holds all their JSON at once."""
        size = GROUP_PIECE if piece is None else piece
        per_message = OFFSETS_PIECE if offsets_piece is None else offsets_piece
        last = self._last
        full = last is None
        ends = pack(sample.ends, last.ends if last else None)
        starts = pack(sample.starts, last.starts if last else None)
        sizes = None
        if sample.sizes is not None and (last is None or sample.sizes is not last.sizes):
            assert isinstance(sample.sizes, SizeColumns)  # (what Sampler.take reads)
            sizes = sample.sizes.changed_packed(last.sizes if last else None)
        changed: list[str] | None = None
        group_ids = None
        states = sample.groups
        if (states is not None and last is not None and not sample.groups_changed and sample.groups_since
                and sample.groups_since == last.number and self._sent.keys() == states.keys()):
            # Every state the last pass's (the one sent last) and its evaluation as it was
            # (Sampler.take's groups_changed): nothing to digest and compare, as on an idle cluster.
            changed = []
        elif states is not None:
            sent = self._sent
            marks = {gid: _marks(g) for gid, g in states.items()}
            changed = [gid for gid in states if gid not in sent or not _same(sent[gid], marks[gid])]
            if full or marks.keys() != sent.keys():
                group_ids = list(marks)
            self._sent = marks
        self._last = sample
        gids = changed or []
        rest = (len(gids) - 1) // size * size if gids and size else 0  # (where the delta's own groups start)
        pieces = [gids[i:i + size] for i in range(0, rest, size)] if rest else []

        def serialised(part: list[str]) -> dict[str, tuple[bytes, list[str]]]:
            assert states is not None
            return {gid: (group_part(states[gid]), states[gid].topics()) for gid in part}

        def each() -> Iterator[Any]:
            if per_message:
                for which, packed in (("ends", ends), ("starts", starts), ("sizes", sizes)):
                    if packed:
                        yield from _offset_pieces(which, packed, per_message)
            # (taken before the next pass: the evaluation renews the states' figures in place)
            for part in pieces:
                yield ("groups", serialised(part))
            yield SampleDelta(full=full, started=sample.started, ends=ends, starts=starts, sizes=sizes, rates=sample.rates,
                              groups=serialised(gids[rest:]) if changed is not None else None, group_ids=group_ids,
                              groups_changed=sample.groups_changed, events=events, stats=stats)

        return each()

    def every_group(self, piece: int | None = None) -> Iterator[tuple[str, dict[str, tuple[bytes, list[str]]]]]:
        """Every group as last sent, again, in ("groups", {...}) pieces of `piece` groups
        (GROUP_PIECE): what the watcher asks for when it must write every group's part and holds
        only their digests (store.GroupParts). Between passes the states are as last sent (the
        evaluation renews their figures in place only within a pass)."""
        size = GROUP_PIECE if piece is None else piece
        gids = list(self._sent)
        for start in range(0, len(gids), size):
            part = {gid: self._sent[gid][0] for gid in gids[start:start + size]}
            yield ("groups", {gid: (group_part(g), g.topics()) for gid, g in part.items()})

