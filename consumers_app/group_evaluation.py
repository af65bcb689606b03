"""The evaluation of consumer groups at each offsets sample, registered with console.watcher.registry.

From each offsets sample: lag status (Burrow's rules, lagstatus.py), time lag (kafka-lag-exporter's
interpolation, timelag.py), each group's lag history (Redis, for the group page's chart) and
rebalances (rebalance.py; a row per rebalance and an event). The windows, tables and trackers live
here across samples. Its cost follows what changed: a group described and committed as last time,
caught up on every partition, is not re-evaluated (its windows still record the commit). The
windows and tables are columns (lag_windows.py, time_tables.py): one sample records and judges
them in a few array operations.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from operator import is_
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from django.conf import settings
from django.db import close_old_connections

from console import snapshots
from console.snapshots import Commits, GroupState
from console.watcher.columns import OffsetColumns
from console.watcher.history import LagHistoryFilter
from console.watcher.pass_offsets import PassOffsets
from console.watcher.registry import EmitEvents, EventRow
from consumers_app.group_entries import GroupEntries, offset_columns
from consumers_app.lag_values import LagSeconds, LagStatuses, uniform
from consumers_app.lag_windows import CODE_OK, GROUP_RANK, STATUS_NAMES, STATUS_OF_RANK, WindowColumns
from consumers_app.narrow_columns import Rows
from consumers_app.rebalance import MembersOf, Observation, Rebalance, RebalanceTracker
from consumers_app.time_tables import TimeColumns

_ZERO = 0.0
# Windows recorded and judged together (`_evaluate_batch`): a batch's arrays stay a few MB however
# many groups there are.
BATCH_WINDOWS = 1 << 17
# Windows of the batches kept whole for the next sample when every group in them was caught up and
# unchanged (`_Steady`, 17 bytes a window): a bound on what an idle cluster's shortcut holds.
STEADY_WINDOWS = 1 << 18
_NO_ROWS: Rows = np.zeros(0, np.int64)


def _behind(end: int, committed: int) -> int:
    return end - committed if end > committed else 0


class _Steady:
    """A batch whose groups were all caught up and unchanged (none judged): what it recorded in the
    windows (each group's rows, its committed offsets as the end offsets, whether it can commit),
    and the arrays of the offsets by topic it found them at the end in. The next sample's batch of
    the same state objects, with the same arrays, records the same again: on an idle cluster a
    sample costs a few operations per batch, not a look-up chain per group (`_evaluate_batch`)."""

    __slots__ = ("committed", "committing", "rows", "states", "topics")

    def __init__(self, states: list[GroupState], topics: list[tuple[str, Any]], rows: Rows,
                 committed: npt.NDArray[np.int64], committing: npt.NDArray[np.bool_]) -> None:
        self.states, self.topics = states, topics
        self.rows, self.committed, self.committing = rows, committed, committing

    def holds(self, states: list[GroupState], columns: OffsetColumns) -> bool:
        """Whether `states` are this batch's (the same objects, in order) and each of its topics'
        offsets is the same array in `columns` (arrays are never changed once made)."""
        if len(states) != len(self.states) or not all(map(is_, states, self.states)):
            return False
        array_of = columns.array
        return all(array_of(name) is held for name, held in self.topics)


class GroupEvaluation:
    def __init__(self, cluster: str, incremental: bool, emit: EmitEvents) -> None:
        """`incremental=False` evaluates every group at every sample (what the skipping must equal)."""
        self.cluster = cluster
        self.incremental = incremental
        self.emit = emit
        self.changed = True
        self.stats: dict[str, float | int] = {}
        # One window entry per offsets sample: samples closer than half the interval replace the last.
        self._windows = WindowColumns(min_distance=settings.WATCHER_OFFSETS_INTERVAL * 0.5)
        self._time_tables = TimeColumns()
        self._trackers: dict[str, RebalanceTracker] = {}
        self._history = LagHistoryFilter()
        # Derived once per group state (a state carried over is the same object): the committed
        # offsets with their partitions.
        self._entries_cache: dict[str, GroupEntries] = {}
        # The time tables' rows of each set of partitions groups commit on (the set's tuple), for the
        # time tables' `generation` they were read in: one array for the groups that share the set,
        # as many groups commit on the same partitions.
        self._time_rows: dict[tuple[tuple[str, int], ...], array[int]] = {}
        self._time_rows_generation = -1
        # One (topic, partition) tuple per "topic:partition" key, shared by the groups that commit on
        # it: the caller's (`partitions`), else parsed from the keys here.
        self._tp_of: dict[str, tuple[str, int]] = {}
        self._shared: Mapping[str, tuple[str, int]] = {}
        # The last sample's batches that were steady (`_Steady`; None for the others), and the groups
        # it was given: the next sample's batches of the same states are recorded as they were.
        self._steady: list[_Steady | None] = []
        self._steady_for: Mapping[str, GroupState] | None = None
        self._steady_windows = 0  # (the windows kept so this sample: at most STEADY_WINDOWS)
        self.steady_batches = 0  # batches recorded as the last sample's (to read: tests, stats)

    def evaluate(self, groups: dict[str, GroupState], before: Mapping[str, GroupState] | None,
                 ends: Mapping[tuple[str, int], int], now: float, partitions: Mapping[str, tuple[str, int]] | None = None,
                 ends_at: float | None = None) -> None:
        self._shared = partitions if partitions is not None else {}
        self._record_rebalances(self._evaluate(groups, before or {}, ends, now, now if ends_at is None else ends_at))

    def _evaluate(self, groups: dict[str, GroupState], before: Mapping[str, GroupState], ends: Mapping[tuple[str, int], int],
                  now: float, ends_at: float) -> list[tuple[str, Rebalance]]:
        """The windows observed this sample are recorded in batches of groups (BATCH_WINDOWS windows
        or so each), the evaluated ones of each batch judged and their time lags interpolated in one
        go (lagcolumns.py); what stays per partition in Python is the snapshot's per-partition entry
        of the groups that changed."""
        # The time tables' points are the logs' ends at the time they were read: stamped with the
        # later time the groups were read, every time lag would come out short by the groups' read.
        if isinstance(ends, PassOffsets):
            self._time_tables.add_aligned(ends.keys_, ends.values_, ends_at)
        else:
            self._time_tables.add_all(ends, ends_at)
        self._windows.reserve(sum(map(len, (g.offsets for g in groups.values()))))
        ended: list[tuple[str, Rebalance]] = []
        history: dict[str, tuple[float, int, float | None]] = {}
        changed = groups.keys() != before.keys()
        skipped = 0
        batch: list[GroupState] = []
        windows = total = 0
        # (the last sample's steady batches hold for this one only if it was given these groups' last states)
        steady_before = self._steady if self.incremental and before is self._steady_for and before else []
        steady: list[_Steady | None] = []
        self._steady_windows = 0
        for g in groups.values():
            batch.append(g)
            windows += len(g.offsets)
            total += len(g.offsets)
            if windows >= BATCH_WINDOWS:
                kept = steady_before[len(steady)] if len(steady) < len(steady_before) else None
                changed, skipped = self._batch(kept, batch, before, ends, now, ended, history, changed, skipped, steady)
                batch, windows = [], 0
        if batch:
            kept = steady_before[len(steady)] if len(steady) < len(steady_before) else None
            changed, skipped = self._batch(kept, batch, before, ends, now, ended, history, changed, skipped, steady)
        del steady_before
        self._steady, self._steady_for = steady, groups
        self.changed = changed
        self.stats["groups_skipped"] = int(self.stats.get("groups_skipped", 0)) + skipped
        self.stats["lag_windows"] = self._windows.windows()
        if self._windows.groups() != len(groups):
            self._windows.retain(groups)
        self._windows.settle()
        written, trim = self._history.select(history)
        if snapshots.append_lag_history(self.cluster, written, trim=trim):
            self._history.stored(written, trim)
        self._history.retain(groups)
        for gid in set(self._trackers) - set(groups):
            del self._trackers[gid]
        for gid in self._entries_cache.keys() - groups.keys():
            del self._entries_cache[gid]
        if len(self._tp_of) > 2 * total + 100_000:  # partitions no group commits on any more
            self._tp_of = {}
        return ended

    def _batch(self, kept: _Steady | None, states: list[GroupState], before: Mapping[str, GroupState],
               ends: Mapping[tuple[str, int], int], now: float, ended: list[tuple[str, Rebalance]],
               history: dict[str, tuple[float, int, float | None]], changed: bool, skipped: int,
               steady: list[_Steady | None]) -> tuple[bool, int]:
        """One batch of `_evaluate`: as the last sample's when it was steady and still is (`_Steady`:
        what `_evaluate_batch` would do with it, without asking each group), else evaluated. Its
        `_Steady`, or None, appended to `steady`."""
        columns = offset_columns(ends)
        if kept is not None and columns is not None and kept.holds(states, columns):
            self._windows.record(kept.rows, kept.committed, kept.committed, now, kept.committing)
            point = round(now, 2)
            for g in states:  # (as `_evaluate_batch` does for a group caught up and unchanged)
                history[g.group_id] = (point, 0, g.time_lag)
                self._observe(g, now, ended)
            self.steady_batches += 1
            self._steady_windows += len(kept.rows)
            steady.append(kept)
            return changed, skipped + len(states)
        changed, skipped, found = self._evaluate_batch(states, before, ends, now, ended, history, changed, skipped)
        steady.append(found)
        return changed, skipped

    def _steady_of(self, states: list[GroupState], rows: Rows, committed: npt.NDArray[np.int64],
                   committing: npt.NDArray[np.bool_]) -> _Steady | None:
        """A batch of groups all found caught up and unchanged, as `_Steady`, when each was found so
        on arrays of the offsets by topic (`GroupEntries.at_end_of`) and the windows kept are in bounds."""
        if not self.incremental or self._steady_windows + len(rows) > STEADY_WINDOWS:
            return None
        topics: dict[str, Any] = {}
        cache = self._entries_cache
        for g in states:
            entries = cache.get(g.group_id)
            if entries is None or entries.at_end_of is None or not isinstance(g.offsets, Commits):
                return None
            for run, held in zip(g.offsets.partitions.runs, entries.at_end_of, strict=True):
                topics[run[0]] = held
        self._steady_windows += len(rows)
        return _Steady(list(states), list(topics.items()), rows, committed, committing)

    def _evaluate_batch(self, states: list[GroupState], before: Mapping[str, GroupState], ends: Mapping[tuple[str, int], int],
                        now: float, ended: list[tuple[str, Rebalance]], history: dict[str, tuple[float, int, float | None]],
                        changed: bool, skipped: int) -> tuple[bool, int, _Steady | None]:
        """One batch of `_evaluate`: its windows recorded, judged and interpolated together (batches,
        not every group at once, so that the pass's arrays stay small on a cluster of many groups).
        Returns `changed` and `skipped` brought up to date, and the batch as `_Steady` when no group
        in it was judged (else None)."""
        # The batch: rows, committed and end offsets, whether the group can commit (per group). As
        # arrays (8 bytes an entry), not lists of Python ints, which with their copies into arrays
        # would be several times the size at each pass's peak.
        rows: list[Rows] = []  # each group's block of rows (the windows' own arrays, not copied)
        committed = array("q")
        end_offsets = array("q")
        committing: list[bool] = []
        lengths: list[int] = []
        time_rows = array("q")  # the evaluated windows' partitions in the time tables
        judged: list[tuple[GroupState, Any, Sequence[str], Sequence[int], list[int]]] = []  # evaluated groups, in batch order
        judged_rows = 0  # the evaluated groups' rows come first in the batch
        later: list[tuple[Rows, Sequence[int], bool]] = []  # the skipped groups' rows, recorded after
        for g in states:
            last = before.get(g.group_id)
            entries = self._entries_of(g)
            group_rows = self._windows.rows_of(g.group_id, entries.tps) if entries.tps else _NO_ROWS
            if self.incremental and last is not None and self._caught_up_and_unchanged(last, g, ends):
                # Nothing to judge: the same members and offsets, every partition still at the end
                # of its log (lag 0 is OK whatever the window holds, time lag 0). Most groups of an
                # idle cluster. Their windows still record the commit, as the evaluation would have.
                g.status, g.time_lag = last.status, last.time_lag
                g.lag_keys, g.lag_status, g.lag_seconds = last.lag_keys, last.lag_status, last.lag_seconds
                later.append((group_rows, entries.committed, bool(g.members)))
                history[g.group_id] = (round(now, 2), 0, g.time_lag)
                skipped += 1
                self._observe(g, now, ended)
                continue
            # A state carried over: did its evaluation change?
            was = (g.status, g.time_lag, g.lag_keys, g.lag_status, g.lag_seconds) if last is g else None
            looked_up = entries.ends(ends)
            if None in looked_up:  # partitions without an end offset are left out of this sample
                present = [i for i, e in enumerate(looked_up) if e is not None]
                keys: Sequence[str] = [entries.keys[i] for i in present]
                mine: Sequence[int] = [entries.committed[i] for i in present]
                group_rows = group_rows[present]
                found = [e for e in looked_up if e is not None]
                time_rows.extend(cast(list[int], self._time_tables.rows(entries.tps[i] for i in present)))
            else:
                keys, mine, found = entries.keys, entries.committed, cast(list[int], looked_up)
                if entries.time_rows is None or entries.time_rows_of != self._time_tables.generation:
                    entries.time_rows = self._time_rows_of(entries.tps)
                    entries.time_rows_of = self._time_tables.generation
                time_rows.extend(entries.time_rows)
            rows.append(group_rows)
            committed.extend(mine)
            end_offsets.extend(found)
            committing.append(bool(g.members))
            lengths.append(len(group_rows))
            judged.append((g, was, keys, mine, found))
        judged_rows = len(committed)
        for group_rows, caught_up, can_commit in later:
            rows.append(group_rows)
            committed.extend(caught_up)
            end_offsets.extend(caught_up)  # caught up: the end offset is the committed one
            committing.append(can_commit)
            lengths.append(len(group_rows))
        del later
        kept: _Steady | None = None
        if len(committed):
            batch = np.concatenate(rows)
            del rows
            mine_all = np.frombuffer(committed, np.int64)
            committing_rows = np.repeat(np.array(committing, np.bool_), lengths)
            self._windows.record(batch, mine_all, np.frombuffer(end_offsets, np.int64), now, committing_rows)
            codes = self._windows.status(batch[:judged_rows], now)
            lags = self._time_tables.time_lag(np.frombuffer(time_rows, np.int64), mine_all[:judged_rows], now)
            if not judged:
                kept = self._steady_of(states, batch, mine_all, committing_rows)
        else:
            codes, lags = np.zeros(0, np.int8), np.zeros(0)
        i = 0
        names = STATUS_NAMES
        for g, was, keys, mine, found in judged:
            n = len(keys)
            if not n:
                g.status, g.time_lag = None, None
                g.lag_keys, g.lag_status, g.lag_seconds = [], [], []
                history[g.group_id] = (round(now, 2), 0, None)
                self._observe(g, now, ended)
                changed = changed or was is None or was != (g.status, g.time_lag, g.lag_keys, g.lag_status, g.lag_seconds)
                continue
            # (a group's slice at a time: the whole pass's time lags as Python floats would be large)
            group_codes = codes[i:i + n].tolist()
            seconds_of = lags[i:i + n].tolist()
            i += n
            if g.broker_lag:  # share groups: Kafka's own figure where it gives one
                total = sum(g.broker_lag.get(key, max(0, e - c)) for key, c, e in zip(keys, mine, found, strict=True))
                # ... and a partition Kafka reports with no lag is OK (Burrow's rule 2 on the lag
                # shown): its window follows the share-partition start, which trails the end by
                # the records in flight, and judged a busy queue with nothing waiting WARN.
                broker_lag = g.broker_lag
                group_codes = [CODE_OK if broker_lag.get(key) == 0 else code for key, code in zip(keys, group_codes, strict=True)]
            else:
                total = sum(map(_behind, found, mine))
            # Unknown time lags (NaN) are None and left out of the group's (timelag.group_time_lag).
            # (a lag of 0, most of them, is one shared float, not a float object a partition)
            rounded: Sequence[float | None]
            if seconds_of.count(0.0) == n:  # caught up everywhere, most groups: one shared list of zeros
                rounded = uniform(_ZERO, n)
                known = seconds_of
            else:
                rounded = LagSeconds([-1.0 if s != s else round(s, 3) or _ZERO for s in seconds_of])
                known = [s for s in seconds_of if s == s]
            statuses = uniform(names[CODE_OK], n) if group_codes.count(CODE_OK) == n else \
                cast(Sequence[str], LagStatuses(group_codes))
            g.lag_keys, g.lag_status, g.lag_seconds = keys, statuses, rounded
            g.status = STATUS_OF_RANK[max(map(GROUP_RANK.__getitem__, group_codes))]
            g.time_lag = round(max(known), 3) if known else None
            history[g.group_id] = (round(now, 2), total, g.time_lag)
            self._observe(g, now, ended)
            changed = changed or was is None or was != (g.status, g.time_lag, g.lag_keys, g.lag_status, g.lag_seconds)
        return changed, skipped, kept

    def _observe(self, g: GroupState, now: float, ended: list[tuple[str, Rebalance]]) -> None:
        tracker = self._trackers.get(g.group_id)
        if tracker is None:
            tracker = self._trackers[g.group_id] = RebalanceTracker()
        elif tracker.seen_again(now, g.state, g.generation, g.members):
            return  # (a state carried over, settled: most groups of a steady cluster)
        # (a state carried over has the same list of members: the tracker tells it by that, unread)
        ended += [(g.group_id, r) for r in tracker.observe(Observation(now, g.state, g.generation, MembersOf(g.members)))]

    def _time_rows_of(self, tps: tuple[tuple[str, int], ...]) -> array[int]:
        """The time tables' rows of `tps` (each has a table: every one has an end offset), shared by
        the groups that commit on an equal tuple, as of the tables' current generation."""
        generation = self._time_tables.generation
        if generation != self._time_rows_generation or len(self._time_rows) > 2 * len(self._entries_cache) + 1000:
            self._time_rows, self._time_rows_generation = {}, generation
        found = self._time_rows.get(tps)
        if found is None:
            found = self._time_rows[tps] = array("q", cast(list[int], self._time_tables.rows(tps)))
        return found

    def _entries_of(self, g: GroupState) -> GroupEntries:
        cached = self._entries_cache.get(g.group_id)
        if cached is not None and cached.offsets is g.offsets:
            return cached
        entries = self._entries_cache[g.group_id] = GroupEntries(g.offsets, self._shared, self._tp_of)
        return entries

    def _caught_up_and_unchanged(self, last: GroupState, g: GroupState, ends: Mapping[tuple[str, int], int]) -> bool:
        if last.status != "OK" or not g.offsets or len(last.lag_keys) != len(g.offsets):
            return False  # (a partition left out of the last evaluation, its end offset missing, has no entry to carry)
        if last is not g and (last.offsets != g.offsets or last.members != g.members or last.state != g.state
                              or last.generation != g.generation or last.broker_lag != g.broker_lag):
            return False
        entries = self._entries_of(g)
        try:
            return entries.at_end(ends)
        except KeyError:
            return False  # a partition without an end offset

    def _record_rebalances(self, ended: list[tuple[str, Rebalance]]) -> None:
        from consumers_app.models import Rebalance as RebalanceRow

        if not ended:
            return
        rows = [
            RebalanceRow(cluster=self.cluster, group=gid, started_at=datetime.fromtimestamp(r.start, tz=UTC),
                         ended_at=datetime.fromtimestamp(r.end, tz=UTC), duration_s=r.duration,
                         generation_before=r.generation_before, generation_after=r.generation_after,
                         joined=[{"client_id": m.client_id, "host": m.host} for m in r.joined],
                         left=[{"client_id": m.client_id, "host": m.host} for m in r.left],
                         moved=[{"topic": m.topic, "partition": m.partition, "from": m.old_client_id, "to": m.new_client_id}
                                for m in r.moved],
                         trigger=r.trigger, missed=r.missed)
            for gid, r in ended
        ]
        close_old_connections()
        RebalanceRow.objects.bulk_create(rows)
        self.emit([
            EventRow(cluster=self.cluster, at=row.ended_at, kind="rebalance", severity="warning",
                     message=f"Group {row.group} rebalanced ({row.trigger}) in {row.duration_s:.1f} s: "
                             f"{len(row.joined)} joined, {len(row.left)} left, {len(row.moved)} partitions moved",
                     details={"group": row.group, "trigger": row.trigger, "missed": row.missed})
            for row in rows
        ])

