"""Page tallies: what each topic adds to the cluster's counts, broker rows and topics-list row,
made in one walk of its partitions and kept per cluster so a new version re-tallies only the
topics it changed."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from console.snapshots.model import PartitionState, Snapshot, TopicState


@dataclass(frozen=True, slots=True)
class TopicTally:
    """What a topic adds to the cluster's counts and broker rows (Snapshot.counts, broker_rows), and
    what else its row in the topics list says of its partitions (`replication_factor`, `size`,
    `messages`: the topic's own, not summed by `moved`): one walk of its partitions for both."""

    partitions: int
    under_replicated: int
    offline: int
    under_min_isr: int
    led: dict[int, int]  # broker -> partitions it leads
    led_under_replicated: dict[int, int]  # broker -> under-replicated partitions it leads
    hosted: dict[int, int]  # broker -> replicas it hosts
    replication_factor: int = 0  # (as TopicState.replication_factor, .size, .messages)
    size: int | None = None
    messages: int | None = None

    @classmethod
    def of(cls, topic: TopicState) -> TopicTally:
        """One walk of the partitions, each property of PartitionState and TopicState written out
        inline: a web process tallies every changed topic of each version, and one inlined walk for
        the overview and the topics list costs less than a walk per property. A topic read from the
        store has its tally already (StoredTopic: the watcher's, stored with its part)."""
        stored = topic.stored_tally
        if stored is not None:
            return stored
        urp = offline = under_min = rf = 0
        size = messages = None
        min_isr = topic.min_isr
        led: dict[int, int] = {}
        led_urp: dict[int, int] = {}
        hosted: dict[int, int] = {}
        for p in topic.partitions:
            replicas, in_sync, leader = p.replicas, len(p.isr), p.leader
            if in_sync < len(replicas):  # (under_replicated)
                urp += 1
                led_urp[leader] = led_urp.get(leader, 0) + 1
            if leader < 0:  # (offline)
                offline += 1
            if min_isr is not None and in_sync < min_isr:  # (under_min_isr)
                under_min += 1
            led[leader] = led.get(leader, 0) + 1
            if len(replicas) > rf:
                rf = len(replicas)
            for r in replicas:
                hosted[r] = hosted.get(r, 0) + 1
            if p.size is not None:
                size = p.size + (size or 0)
            if p.start_offset is not None and p.end_offset is not None:  # (messages)
                messages = max(0, p.end_offset - p.start_offset) + (messages or 0)
        return cls(len(topic.partitions), urp, offline, under_min, led, led_urp, hosted, rf, size, messages)

    def changed(self, before: TopicState, after: TopicState, places: Iterable[int]) -> TopicTally | None:
        """`TopicTally.of(after)` from this tally of `before`, looking only at the partitions at
        `places` (those not the same objects; partitions added included): the watcher stores a
        changed topic's tally with its part (`topic_summary`). Leader and ISR changes touch few
        partitions of each topic, and a partition whose leader, replicas and ISR are as they were
        moves the size and messages alone, so a tally moved by the changed partitions costs far less
        than a new walk. None when this cannot tell (its min ISR
        changed, partitions went, the replication factor may have dropped, a size or offsets went
        unknown): walk them all."""
        old, new = before.partitions, after.partitions
        min_isr = after.min_isr
        if min_isr != before.min_isr or len(new) < len(old):
            return None
        rf, size, messages = self.replication_factor, self.size, self.messages
        moves: list[tuple[PartitionState | None, PartitionState]] = []  # (each partition as it was, None when added, and as it is)
        for i in places:
            q = new[i]
            if i < len(old):
                p = old[i]
                if p.size is not None:
                    if q.size is None:
                        return None
                    size = (size or 0) - p.size
                if p.start_offset is not None and p.end_offset is not None:
                    if q.start_offset is None or q.end_offset is None:
                        return None
                    messages = (messages or 0) - max(0, p.end_offset - p.start_offset)
                if p.leader != q.leader or p.replicas != q.replicas or p.isr != q.isr:
                    if len(p.replicas) == rf > len(q.replicas):
                        return None
                    moves.append((p, q))
            else:
                moves.append((None, q))
            if q.size is not None:
                size = q.size + (size or 0)
            if q.start_offset is not None and q.end_offset is not None:
                messages = max(0, q.end_offset - q.start_offset) + (messages or 0)
        if not moves:  # (offsets alone: the counts and the brokers' dicts as they were, shared: no tally changes its own)
            return TopicTally(len(new), self.under_replicated, self.offline, self.under_min_isr, self.led,
                              self.led_under_replicated, self.hosted, rf, size, messages)  # (`replace`, in a fifth of its time)
        urp, offline, under_min = self.under_replicated, self.offline, self.under_min_isr
        # A dict is copied when a move first changes it, else shared: a leader moved or an ISR
        # changed leaves the replicas each broker hosts as they were (most moves, at scale).
        led, led_urp, hosted = self.led, self.led_under_replicated, self.hosted
        for was, q in moves:
            replicas, leader = q.replicas, q.leader
            is_urp = len(q.isr) < len(replicas)
            if len(replicas) > rf:
                rf = len(replicas)
            if was is None:
                was_urp, was_leader, was_replicas, was_offline, was_under = False, None, None, False, False
            else:
                was_urp, was_leader, was_replicas = len(was.isr) < len(was.replicas), was.leader, was.replicas
                was_offline, was_under = was.leader < 0, min_isr is not None and len(was.isr) < min_isr
            urp += is_urp - was_urp
            offline += (leader < 0) - was_offline
            under_min += (min_isr is not None and len(q.isr) < min_isr) - was_under
            if was_urp != is_urp or (is_urp and was_leader != leader):
                if led_urp is self.led_under_replicated:
                    led_urp = dict(led_urp)
                if was_urp:
                    _add(led_urp, was_leader, -1)  # type: ignore[arg-type] # (a partition that was: its leader)
                if is_urp:
                    _add(led_urp, leader, 1)
            if was_leader != leader:
                if led is self.led:
                    led = dict(led)
                if was_leader is not None:
                    _add(led, was_leader, -1)
                _add(led, leader, 1)
            if was_replicas != replicas:
                if hosted is self.hosted:
                    hosted = dict(hosted)
                for r in was_replicas or ():
                    _add(hosted, r, -1)
                for r in replicas:
                    _add(hosted, r, 1)
        return TopicTally(len(new), urp, offline, under_min, led, led_urp, hosted, rf, size, messages)

    @classmethod
    def total(cls, tallies: Iterable[TopicTally]) -> TopicTally:
        return cls(0, 0, 0, 0, {}, {}, {}).moved(tallies, ())

    def moved(self, added: Iterable[TopicTally], removed: Iterable[TopicTally]) -> TopicTally:
        """This total (a sum of tallies) with `added` counted in and `removed` out, as a new one."""
        counts = [self.partitions, self.under_replicated, self.offline, self.under_min_isr]
        per_broker = (dict(self.led), dict(self.led_under_replicated), dict(self.hosted))
        for sign, tallies in ((1, added), (-1, removed)):
            for t in tallies:
                counts[0] += sign * t.partitions
                counts[1] += sign * t.under_replicated
                counts[2] += sign * t.offline
                counts[3] += sign * t.under_min_isr
                for total, part in zip(per_broker, (t.led, t.led_under_replicated, t.hosted), strict=True):
                    for b, n in part.items():
                        total[b] = total.get(b, 0) + sign * n
        return TopicTally(counts[0], counts[1], counts[2], counts[3], *per_broker)


def _add(counts: dict[int, int], key: int, n: int) -> None:
    """`n` more for `key` (one that comes to 0 is taken out, as a walk would never have put it in)."""
    left = counts.get(key, 0) + n
    if left:
        counts[key] = left
    else:
        del counts[key]


# Per cluster, in this process: each topic's tally and their sum, of the last snapshot tallied (`tallied`).
_TALLIED: dict[str, tuple[dict[str, tuple[TopicState, TopicTally]], TopicTally]] = {}


def tallied(snap: Snapshot) -> tuple[dict[str, tuple[TopicState, TopicTally]], TopicTally]:
    """`snap.tallies`, from what it gave for the last snapshot of the same cluster tallied in this
    process: the overview's counts and broker rows and the topics list's rows share one tally per
    changed topic."""
    held = _TALLIED.get(snap.cluster)
    made, total = _TALLIED[snap.cluster] = snap.tallies(*held) if held is not None else snap.tallies()
    return made, total
