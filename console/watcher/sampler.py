"""The watcher's sampler: what one sampling pass reads from Kafka (start and end offsets of every
partition, log-dir sizes now and then, consumer groups and their committed offsets) and derives
(produce rates, the groups' evaluation through the registered evaluator, analytics samples), handed
back as one immutable `Sample` for the metadata cycle to merge (ClusterWatcher.sample_offsets).

It runs in the watcher's second thread: a partition whose leader just died can hold a call for
the whole request timeout, and that must not delay the metadata cycle. It keeps what the next pass
builds on (the merged offsets and sizes, the last group states), so a pass that could not read
something carries the last complete answer for it.
"""

from __future__ import annotations

import logging
import time
from array import array
from collections import deque
from collections.abc import Callable, Collection, Iterator, Mapping
from datetime import UTC, datetime
from itertools import count
from typing import Any

from django.conf import settings

from console.gateway.client import ClusterGateway
from console.gateway.errors import GatewayError
from console.gateway.types import ConsumerGroup, TopicPartition
from console.snapshots import changes
from console.snapshots.encoding import Commits, GroupPartitions
from console.snapshots.model import GroupState, MemberState
from console.snapshots.replica_lag import save_log_dirs
from console.watcher import registry
from console.watcher.alert_handoff import GroupAlertsApart
from console.watcher.columns import ABSENT, OffsetColumns
from console.watcher.partition_names import PartitionNames
from console.watcher.pass_offsets import PassOffsets, topic_runs
from console.watcher.registry import EmitEvents, EventRow
from console.watcher.sample import Sample
from console.watcher.size_columns import SizeColumns

log = logging.getLogger(__name__)

# Groups whose committed offsets are fetched and turned into states together (one OffsetFetch per
# coordinator each): what a pass holds of Kafka's answers at once.
GROUP_CHUNK = 2000
SIZE_BROKERS = 10  # brokers whose log dir sizes are read at a time (Sampler._read_sizes)
SILENT_KEPT = 3600.0  # seconds a broker that does not answer keeps its replicas' last sizes (Sampler._read_sizes)
_NONE: dict[Any, Any] = {}  # (a group's committed or share offsets when it has none: never changed)
_PASSES = count(1)  # (Sample.number)


def produce_rates(before: Mapping[TopicPartition, int], after: Mapping[TopicPartition, int], seconds: float) -> dict[str, float]:
    """Messages per second per topic between two samples of end offsets (partitions in both).
    Two OffsetColumns (a pass's offsets and the last pass's) are compared a topic at a time
    (`OffsetColumns.rates`); otherwise one walk of `after`, nothing per partition kept."""
    if isinstance(before, OffsetColumns) and isinstance(after, OffsetColumns):
        return after.rates(before, seconds)
    totals: dict[str, int] = {}
    was_of = before.get
    for key, end in after.items():
        was = was_of(key)
        if was is None:
            continue
        if was == end:  # (most partitions of a large cluster)
            totals.setdefault(key[0], 0)
        else:
            totals[key[0]] = totals.get(key[0], 0) + max(0, end - was)
    return {topic: round(n / seconds, 2) for topic, n in totals.items()}



def _described_as(state: GroupState, assignment_epoch: int | None, g: ConsumerGroup) -> bool:
    """Whether a group's description as the gateway answered is the one `state` was built from
    (with that assignment epoch, which the state does not keep)."""
    if (g.state, g.protocol_type, g.group_type, g.assignor, g.error, g.coordinator, g.generation, g.assignment_epoch,
            len(g.members)) != (state.state, state.protocol_type, state.group_type, state.assignor, state.error,
                                state.coordinator, state.generation, assignment_epoch, len(state.members)):
        return False
    return all(m.member_id == s.member_id and m.client_id == s.client_id and m.host == s.host
               and m.instance_id == s.instance_id and m.epoch == s.epoch and m.assignment == s.assignment
               and m.target_assignment == s.target_assignment for m, s in zip(g.members, state.members, strict=True))


def _same_commits(getter: Callable[[Mapping[TopicPartition, int]], Any] | None, answer: Mapping[TopicPartition, int],
                  offsets: Mapping[str, int]) -> bool:
    """Whether a group's committed offsets as the gateway answered (by partition) are the ones of
    its state (by key, in the order `getter` reads the answer)."""
    if len(answer) != len(offsets):
        return False
    if getter is None:
        return True  # (both empty)
    try:
        found = getter(answer)
    except KeyError:
        return False
    if isinstance(offsets, Commits):
        return offsets.same_as(found)
    return bool(found == (tuple(offsets.values()) if len(offsets) != 1 else next(iter(offsets.values()))))


class Sampler:
    def __init__(self, cluster: str, gateway: ClusterGateway, incremental: bool, emit: EmitEvents, alerts_apart: bool = False) -> None:
        """`alerts_apart`: the group alert rules run in a thread of their own (alert_handoff.py), as a
        sampling process runs them; else in the pass, as a watcher driven pass by pass expects."""
        self.cluster = cluster
        self.gateway = gateway
        self.incremental = incremental
        self.emit = emit
        self.writer = registry.sample_writer(cluster, gateway)
        self.evaluator = registry.group_evaluator(cluster, incremental, emit)
        alerts = registry.alert_evaluator(cluster, "groups")
        self.alerts: registry.AlertEvaluator | GroupAlertsApart = GroupAlertsApart(cluster, alerts) if alerts_apart else alerts
        self.requests = 0  # calls made to Kafka (offsets, groups, sizes, configs)
        self.group_stats: dict[str, float | int] = {}
        self.times: deque[float] = deque(maxlen=100)  # seconds per pass
        self._next_sizes = 0.0
        # brokers whose log dirs did not answer -> the read they last answered (_read_sizes): their
        # sizes are as of then, so their lag has grown since
        self._silent: dict[int, float] = {}
        self._answered_at: dict[int, float] = {}
        self._answered: set[int] = set()  # (... and those that answered the last read, or are carried)
        self._next_starts = 0.0  # (start offsets: read when due, `_starts_due`)
        self._starts_asked: list[TopicPartition] | None = None  # (the partitions they were last read for)
        self._starts_read_at = 0.0  # (... by the pass that started then)
        self._last: Sample | None = None
        # Called as a pass goes on, after each answer (a sampling process tells the watcher it is
        # alive: a large cluster's first pass takes minutes).
        self.progress: Callable[[], None] | None = None
        # group -> (its assignment epoch, what reads its committed offsets, share offsets, state): the
        # next answer is compared with the state itself (`_described_as`), not with a kept copy of
        # the description
        self._group_cache: dict[str, tuple[Any, Any, Any, GroupState]] = {}
        self.names = PartitionNames()
        # Each set of partitions groups commit on, once (GroupPartitions), by its tuples: this pass's
        # and (until the pass ends) the last one's.
        self._sets: dict[tuple[TopicPartition, ...], GroupPartitions] = {}
        self._sets_in_use: dict[tuple[TopicPartition, ...], GroupPartitions] = {}
        # The partitions to ask for as the shared tuples (`_asked`): of which collection, as of which names.
        self._asked_list: list[TopicPartition] = []
        self._asked_runs: list[tuple[str, int, int, Any]] = []  # (each topic's run in it: columns.topic_runs)
        self._asked_for: Collection[TopicPartition] | None = None
        self._asked_names = -1  # (the names' generation they were made in)
        # The last pass's whole answer of each kind ("latest", "earliest"), as PassOffsets.of shares
        # its arrays: the values array of each (8 bytes a partition) is what keeping it costs.
        self._answers: dict[str, PassOffsets | None] = {}

    def take(self, partitions: Collection[TopicPartition], live_brokers: list[int],
             on_refused: Callable[[str], None] | None = None) -> Sample:
        """Read and evaluate one pass over `partitions` (the online ones of the last snapshot)."""
        started = time.time()
        last = self._last
        asked = self._asked(partitions)
        last_ends = last.ends if last is not None else None
        last_starts = last.starts if last is not None else None
        # Each answer taken in as arrays at once (PassOffsets: the shared tuples asked with, and the
        # offsets by topic), its dict let go: held through the whole pass as the gateway's dict,
        # the end offsets were a large part of the sampling process's peak.
        latest = self._read_offsets(asked, "latest")
        ends_at = (started + time.time()) / 2  # (the brokers answered somewhere within the read)
        self._went_on()
        ends = OffsetColumns.merged(last_ends, latest.columns if latest is not None else {})
        rates = last.rates if last is not None else {}
        if last is not None and started > last.started and latest is not None:
            rates = produce_rates(last.ends, latest.columns, started - last.started)  # (over the partitions answered)
        if self._starts_due(started, asked, ends, last_ends, last_starts):
            earliest = self._read_offsets(asked, "earliest")
            self._went_on()
            starts = OffsetColumns.merged(last_starts, earliest.columns if earliest is not None else {})
            if earliest is not None:
                self._next_starts = started + settings.WATCHER_STARTS_INTERVAL
                self._starts_asked, self._starts_read_at = asked, started
            del earliest
        else:
            assert isinstance(last_starts, OffsetColumns)  # (else due)
            starts = last_starts  # (as they were: the same object, nothing to merge or send)
        groups = self._poll_groups(len(live_brokers), len(partitions))
        now = time.time()
        sizes = None
        if now >= self._next_sizes:
            try:
                sizes = self._read_sizes(live_brokers, last.sizes if last is not None else None)
                self._next_sizes = now + settings.WATCHER_SIZES_INTERVAL
            except GatewayError:
                log.info("could not read log dir sizes of %s", self.cluster)
        last_sizes = (last.sizes or {}) if last is not None else {}
        groups_changed = True  # unless the evaluation below says otherwise
        if groups is not None:
            try:
                evaluated = time.monotonic()
                self.evaluator.evaluate(groups, last.groups if last is not None else None,
                                        latest if latest is not None else (last_ends or {}), now, self.names.by_key,
                                        ends_at=ends_at if latest is not None else None)
                groups_changed = self.evaluator.changed
                self._went_on()
                self.group_stats.update(self.evaluator.stats)
                self.group_stats["groups_evaluate_seconds"] = round(time.monotonic() - evaluated, 3)
            except Exception:
                log.exception("evaluating consumer groups of %s failed", self.cluster)
        try:
            refused = self.writer.write(started, latest if latest is not None else {},
                                        sizes if sizes is not None else last_sizes, groups, len(live_brokers))
            if refused:
                self.emit([EventRow(cluster=self.cluster, at=datetime.now(tz=UTC), kind="analytics", severity="warning",
                                    message=refused)])
        except Exception:  # noqa: BLE001 - analytics must never stop the live console
            log.exception("writing analytics samples of %s failed", self.cluster)
        del latest
        last_ends = last_ends if last_ends is not None else {}
        # Only what changed makes the next metadata cycle rebuild anything: a pass over an idle
        # cluster costs that cycle nothing.
        changed = ends.changed_keys(last_ends) + starts.changed_keys(last_starts)
        if sizes is not None:
            changed += sizes.changed_keys(last_sizes)
        try:  # (the alert rules on groups, after their status and time lag are set; a pass without groups keeps them)
            self.alerts.groups(groups, ends, now, {tp[0] for tp in changed} if last is not None else None)
        except Exception:  # noqa: BLE001 - alerts must never stop the sampling
            log.exception("evaluating the alert rules on the groups of %s failed", self.cluster)
        last_groups = last.groups if last is not None else None
        sample = Sample(
            started=started, ends=ends, starts=starts,
            sizes=sizes if sizes is not None else (last.sizes if last is not None else None),
            rates=rates,
            groups=groups if groups is not None else last_groups,
            groups_changed=groups is not None and (
                last_groups is None or groups_changed
                or any(last_groups.get(gid) is not g for gid, g in groups.items()) or len(groups) != len(last_groups)),
            changed=tuple(changed),
            number=next(_PASSES),
            groups_since=last.number if last is not None and last_groups is not None else 0,
        )
        self._last = sample
        self.times.append(time.time() - started)
        return sample

    def _starts_due(self, now: float, asked: list[TopicPartition], ends: OffsetColumns,
                    last_ends: Mapping[TopicPartition, int] | None, last_starts: Mapping[TopicPartition, int] | None) -> bool:
        """Whether this pass reads the partitions' start offsets. A log's start moves only when
        Kafka deletes its oldest segments (retention, checked every few minutes), records are
        deleted, or the log is truncated or made anew; reading it every pass was a large share of an idle
        cluster's sampling. So: every WATCHER_STARTS_INTERVAL; at once when the partitions asked
        for changed (new topics and partitions, partitions back online), when a partition's end
        went down or below its start (a topic deleted and made again, a log truncated), and when a
        topic changed through the console (records deleted, a topic made anew: `changes.note_change`)
        since they were read, so that the user's next page shows it (read-your-writes)."""
        if last_starts is None or now >= self._next_starts or asked is not self._starts_asked:
            return True
        noted = changes.pending_changes(self.cluster, settings.WATCHER_STARTS_INTERVAL)
        if any(when >= self._starts_read_at and what.startswith(("offsets:", "topic:")) for what, (when, _v) in noted.items()):
            return True
        if not isinstance(last_ends, OffsetColumns) or not isinstance(last_starts, OffsetColumns):
            return True
        for name, _numbers in ends.changed(last_ends):
            held, was, start = ends.array(name), last_ends.array(name), last_starts.array(name)
            if held is None or was is None or start is None:
                return True
            n = min(len(held), len(was), len(start))
            known = (held[:n] != ABSENT) & (was[:n] != ABSENT)
            if (held[:n][known] < was[:n][known]).any() or (held[:n][known] < start[:n][known]).any():
                return True
        return False

    def _went_on(self) -> None:
        if self.progress is not None:
            self.progress()

    def _read_offsets(self, asked: list[TopicPartition], which: str) -> PassOffsets | None:
        """One offsets answer as arrays (None: the read failed, or nothing answered)."""
        try:
            self.requests += 1
            # (keyed by the shared tuples asked with: the gateway keys its answer with the objects asked for)
            answer = self.gateway.list_offsets(asked, which)
        except GatewayError:
            return None
        if not answer:
            return None
        previous = self._answers.get(which) if self.incremental else None
        got = PassOffsets.of(asked, self._asked_runs, answer, previous if previous is not None and previous.keys_ is asked else None)
        # (kept for the next pass's answer to share its unchanged topics' arrays: only a whole one)
        self._answers[which] = got if got.keys_ is asked else None
        return got

    def _asked(self, partitions: Collection[TopicPartition]) -> list[TopicPartition]:
        """`partitions` as the shared tuples, made once for each collection the watcher hands over
        (the same object while its layout is unchanged), and again after the names are cleared."""
        if self._asked_for is not partitions or self._asked_names != self.names.generation:
            shared = self.names.shared
            self._asked_list = [shared(tp) for tp in partitions]
            self._asked_runs = topic_runs(self._asked_list)
            self._asked_for, self._asked_names = partitions, self.names.generation
        return self._asked_list

    def _read_sizes(self, brokers: list[int], before: Mapping[TopicPartition, Mapping[str, int]] | None) -> SizeColumns:
        """Every replica's size, read SIZE_BROKERS brokers at a time (DescribeLogDirs is one request
        per broker either way) into per-topic arrays (size_columns.SizeColumns): no answer holds
        the whole cluster, and what is kept is no dict per partition. A topic whose sizes did not change keeps the arrays before. Any read that fails
        fails them all. A broker that answered before and is no longer listed (fenced: it stopped
        answering the controller) keeps its replicas' last answered sizes for SILENT_KEPT seconds,
        so its lag behind the leaders grows as theirs do (console/snapshots/replica_lag.py)."""
        silent = self._silent
        answered: set[int] = set()
        futures: dict[TopicPartition, dict[int, int]] = {}
        now = time.time()

        def answers() -> Iterator[Mapping[TopicPartition, Mapping[int, int]]]:
            for i in range(0, len(brokers), SIZE_BROKERS):
                self.requests += 1
                answer = self.gateway.log_dir_sizes(brokers[i:i + SIZE_BROKERS])
                answered.update(brokers[i:i + SIZE_BROKERS])
                self._went_on()
                for key, by in (getattr(answer, "futures", None) or {}).items():  # (intra-broker moves: a handful)
                    futures.setdefault(key, {}).update(by)
                yield answer
            for b in answered:
                silent.pop(b, None)
                self._answered_at[b] = now
            for b in self._answered - answered:
                silent.setdefault(b, self._answered_at.get(b, now))
            for b in [b for b, since in silent.items() if now - since > SILENT_KEPT]:
                del silent[b]
            self._answered = answered | silent.keys()
            if silent and isinstance(before, SizeColumns):
                yield before.replicas_on(silent.keys())

        read = SizeColumns.read(answers(), before)
        save_log_dirs(self.cluster, silent, futures)
        return read

    def _poll_groups(self, brokers: int, partitions: int) -> dict[str, GroupState] | None:
        """Every group's state: described a chunk at a time (the gateway's
        `consumer_group_chunks`), each chunk's committed offsets fetched and turned into states
        GROUP_CHUNK groups at a time, and each chunk's answers let go before the next is asked for
        (every group's answers at once were most of a pass's peak). None when any read failed: the pass keeps the last
        complete groups."""
        sent_before = self.gateway.kafka_python_requests.get("groups", 0)
        fetching = 0.0
        out: dict[str, GroupState] = {}
        cache: dict[str, tuple[Any, Any, Any, GroupState]] = {}
        # (the sets of partitions the last pass's states commit on, and this one's: those no state
        # uses any more are let go)
        sets_before = self._sets, self._sets_in_use
        self._sets, self._sets_in_use = {**self._sets, **self._sets_in_use}, {}
        names = self.names
        # (the group partitions of the last pass: this one's are known only at its end)
        names.bound(max(partitions, int(self.group_stats.get("group_partitions", 0))))
        group_partitions = count = described_chunks = fetches = 0
        coordinators: set[int] = set()
        kinds: set[str] = set()
        any_shared = False
        described_chunks_of = self.gateway.consumer_group_chunks(names.shared)
        self.requests += 1
        try:
            while True:
                asked = time.monotonic()
                described = next(described_chunks_of, None)
                fetching += time.monotonic() - asked
                if described is None:
                    break
                described_chunks += 1
                count += len(described)
                coordinators.update(g.coordinator for g in described if g.coordinator is not None)
                kinds.update(g.group_type for g in described)
                shared = [g.group_id for g in described if g.group_type == "share"]
                asked = time.monotonic()
                share_offsets = self.gateway.share_group_offsets(shared) if shared else {}
                fetching += time.monotonic() - asked
                if shared:
                    any_shared = True
                    self.requests += 1
                for i in range(0, len(described), GROUP_CHUNK):
                    chunk = described[i:i + GROUP_CHUNK]
                    fetches += any(g.group_type != "share" for g in chunk)
                    asked = time.monotonic()
                    committed = self.gateway.group_offsets([g.group_id for g in chunk if g.group_type != "share"])
                    self.requests += 1
                    fetching += time.monotonic() - asked
                    for gid in [g.group_id for g in chunk if g.group_type == "share"]:
                        committed[gid] = {tp: start for tp, (start, _lag) in share_offsets.get(gid, {}).items()}
                    group_partitions += sum(len(c) for c in committed.values())
                    self._states(chunk, committed, share_offsets, out, cache)
                    del chunk, committed
                    self._went_on()
                del described, share_offsets
        except GatewayError as exc:
            log.info("could not read the consumer groups of %s: %s", self.cluster, exc.message)
            self._sets, self._sets_in_use = sets_before
            described_chunks_of.close()  # (a chunk's offsets failed: the groups after it are not described)
            return None
        self._group_cache = cache
        self._sets = {}
        kinds &= {"classic", "consumer", "share"}
        self.group_stats = {
            "groups_evaluate_seconds": self.group_stats.get("groups_evaluate_seconds", 0),
            "groups": count,
            "group_partitions": group_partitions,
            "groups_fetch_seconds": round(fetching, 3),
            # ListGroups per broker, then for each chunk of groups described (DESCRIBE_CHUNK) one
            # batched FindCoordinator and per coordinator one describe per kind of group (classic,
            # consumer, share); per coordinator one offset fetch per chunk of groups, and one for
            # the share groups of each chunk described.
            "group_requests_bound": brokers + max(1, described_chunks) + (
                len(kinds) * max(1, described_chunks) + max(1, fetches) + (described_chunks if any_shared else 0)) * len(coordinators),
            # ... and what was really sent (counted at kafka-python's connection manager).
            "group_requests": self.gateway.kafka_python_requests.get("groups", 0) - sent_before,
            "coordinators": len(coordinators),
        }
        return out

    def _states(self, described: list[Any], committed: dict[str, dict[TopicPartition, int]],
                share_offsets: dict[str, dict[TopicPartition, tuple[int, int]]], out: dict[str, GroupState],
                cache: dict[str, tuple[Any, Any, Any, GroupState]]) -> None:
        """Each described group's state into `out` (and `cache`): the last pass's state when it was
        described and committed as then."""
        names = self.names
        key, entry = names.key, names.entry
        text = names.text
        for g in described:
            mine, shares = committed.get(g.group_id, _NONE), share_offsets.get(g.group_id, _NONE)
            last = self._group_cache.get(g.group_id)
            described_as_last = self.incremental and last is not None and _described_as(last[3], last[0], g)
            if described_as_last and last is not None and _same_commits(last[1], mine, last[3].offsets) and last[2] == shares:
                # Described and committed as the last pass saw it: the same state (its evaluation
                # is renewed in place by the evaluator).
                state = last[3]
                getter, shares = last[1], last[2]  # (this pass's equal answers are let go)
            else:
                if described_as_last and last is not None:
                    # Only its commits moved (as a busy group's do every pass): its members are the
                    # last state's (not two new objects per member for every group each pass, held
                    # next to the last ones until the pass ends).
                    members = last[3].members
                else:
                    # What is kept names its partitions with the shared tuples and keys.
                    members = [MemberState(m.member_id, text(m.client_id), text(m.host), names.tps(m.assignment),
                                           m.instance_id, m.epoch,
                                           None if m.target_assignment is None else names.tps(m.target_assignment))
                               for m in g.members]
                ordered = sorted(mine.items())
                offsets = Commits(self._partitions_of(tuple([entry(tp)[1] for tp, _o in ordered])),
                                  array("q", [o for _tp, o in ordered]))
                # The next pass compares its answer with the state's offsets through this, rather
                # than through the answer's dict kept for it.
                getter = offsets.partitions.getter
                state = GroupState(
                    group_id=g.group_id,
                    # (a handful of values across all groups: one string each, not four per group)
                    state=text(g.state),
                    protocol_type=text(g.protocol_type),
                    group_type=text(g.group_type),
                    assignor=text(g.assignor),
                    members=members,
                    offsets=offsets,
                    coordinator=g.coordinator,
                    generation=g.generation,
                    broker_lag={key(tp): lag for tp, (_start, lag) in shares.items() if lag >= 0} if shares else _NONE,
                    error=g.error,
                )
            out[g.group_id] = state
            cache[g.group_id] = (g.assignment_epoch, getter, shares, state)
            if isinstance(state.offsets, Commits):
                self._sets_in_use[state.offsets.partitions.tps] = state.offsets.partitions

    def _partitions_of(self, tps: tuple[TopicPartition, ...]) -> GroupPartitions:
        """The one GroupPartitions of these partitions (the shared tuples, in order): the groups
        that commit on the same partitions share it, and a state renewed keeps its group's."""
        found = self._sets_in_use.get(tps) or self._sets.get(tps)
        if found is None:
            found = GroupPartitions(tuple([self.names.key(tp) for tp in tps]), tps)
        self._sets_in_use[tps] = found
        return found
