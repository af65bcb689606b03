"""The watcher's evaluation of consumer groups, registered with console.watcher.registry.

From each offsets sample: lag status (Burrow's rules, lagstatus.py), time lag (kafka-lag-exporter's
interpolation, timelag.py), each group's lag history (Redis, for the group page's chart) and
rebalances (rebalance.py; a row per rebalance and an event). The windows, tables and trackers live
here across samples. Its cost follows what changed: a group described and committed as last time,
caught up on every partition, is not re-evaluated (its windows note the commit, deferred, exactly).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from operator import itemgetter
from typing import Any

from django.conf import settings
from django.db import close_old_connections

from console.watcher import store
from console.watcher.history import LagHistoryFilter
from console.watcher.registry import EmitEvents, EventRow
from console.watcher.snapshot import GroupState, MemberState
from consumers_app.lagstatus import LagWindows, PartitionResult, evaluate_group, evaluate_partition
from consumers_app.rebalance import Member as RbMember
from consumers_app.rebalance import Observation, Rebalance, RebalanceTracker
from consumers_app.timelag import OffsetTimeTables, group_time_lag, time_lag

Key = tuple[str, str, int]  # (group, topic, partition)


class GroupEvaluation:
    def __init__(self, cluster: str, incremental: bool, emit: EmitEvents) -> None:
        """`incremental=False` evaluates every group at every sample (what the skipping must equal)."""
        self.cluster = cluster
        self.incremental = incremental
        self.emit = emit
        self.changed = True
        self.stats: dict[str, float | int] = {}
        # One window entry per offsets sample: samples closer than half the interval replace the last.
        self._lag_windows = LagWindows(min_distance=settings.WATCHER_OFFSETS_INTERVAL * 0.5)
        self._time_tables = OffsetTimeTables()
        self._trackers: dict[str, RebalanceTracker] = {}
        self._history = LagHistoryFilter()
        self._retained: list[frozenset[Key]] | None = None  # the key sets of the last retain, when all were skipped
        # Derived once per group state (a state carried over is the same object): the tracker's
        # member mapping and the (topic, partition, committed) entries with their window keys.
        self._members_cache: dict[str, tuple[list[MemberState], dict[str, RbMember]]] = {}
        self._entries_cache: dict[str, tuple[dict[str, int], tuple[tuple[str, int, int], ...], frozenset[Key], Any, Any]] = {}

    def evaluate(self, groups: dict[str, GroupState], before: Mapping[str, GroupState] | None,
                 ends: Mapping[tuple[str, int], int], now: float) -> None:
        self._record_rebalances(self._evaluate(groups, before or {}, ends, now))

    def _evaluate(self, groups: dict[str, GroupState], before: Mapping[str, GroupState], ends: Mapping[tuple[str, int], int],
                  now: float) -> list[tuple[str, Rebalance]]:
        self._time_tables.add_all(ends, now)
        ended: list[tuple[str, Rebalance]] = []
        live_keys: set[Key] = set()
        key_sets: list[frozenset[Key]] = []  # the keys of the groups skipped
        all_skipped = True
        history: dict[str, tuple[float, int, float | None]] = {}
        changed = groups.keys() != before.keys()
        skipped = 0
        for g in groups.values():
            results: dict[tuple[str, int], PartitionResult] = {}
            time_lags: list[float | None] = []
            last = before.get(g.group_id)
            if self.incremental and last is not None and self._caught_up_and_unchanged(last, g, ends):
                # Nothing to evaluate: the same members and offsets, every partition still at the end
                # of its log (lag 0 is OK whatever the window holds, time lag 0). Most groups of an
                # idle cluster. Their windows still note the commit, as the evaluation would have.
                g.status, g.time_lag, g.lag = last.status, last.time_lag, last.lag
                entries, keys = self._entries_of(g)
                key_sets.append(keys)
                self._lag_windows.note_caught_up(g.group_id, entries, now, committing=bool(g.members))
                history[g.group_id] = (round(now, 2), 0, g.time_lag)
                skipped += 1
                self._observe(g, now, ended)
                continue
            all_skipped = False
            was = (g.status, g.time_lag, dict(g.lag)) if last is g else None  # a state carried over: did it change?
            for key, committed in g.offsets.items():
                topic, _, part = key.rpartition(":")
                tp = (topic, int(part))
                end = ends.get(tp)
                if end is None:
                    continue
                live_keys.add((g.group_id, topic, tp[1]))
                # A group with no members cannot commit: an unchanged offset is then no commit, so STOP can fire.
                window = self._lag_windows.record(g.group_id, topic, tp[1], committed, end, now, committing=bool(g.members))
                status = evaluate_partition(window, now)
                table = self._time_tables.get(tp)
                seconds = time_lag(table, committed, now) if table is not None else None
                time_lags.append(seconds)
                lag = g.broker_lag.get(key, max(0, end - committed))  # share groups: Kafka's own figure
                results[tp] = PartitionResult(status=status, lag=lag, fullness=window.fullness)
                g.lag[key] = {"status": status, "time_lag": None if seconds is None else round(seconds, 3)}
            g.status = evaluate_group(results).status if results else None
            seconds = group_time_lag(time_lags)
            g.time_lag = None if seconds is None else round(seconds, 3)
            history[g.group_id] = (round(now, 2), sum(r.lag or 0 for r in results.values()), g.time_lag)
            self._observe(g, now, ended)
            changed = changed or was is None or was != (g.status, g.time_lag, g.lag)
        self.changed = changed
        self.stats["groups_skipped"] = int(self.stats.get("groups_skipped", 0)) + skipped
        # Every group skipped with the same window keys as last time: nothing to forget (skipped
        # groups only ever record windows among their keys).
        last_sets = self._retained
        if not (all_skipped and last_sets is not None and len(key_sets) == len(last_sets)
                and all(a is b for a, b in zip(key_sets, last_sets, strict=True))):
            for keys in key_sets:
                live_keys |= keys
            self._lag_windows.retain(live_keys)
        self._retained = key_sets if all_skipped else None
        written, trim = self._history.select(history)
        if store.append_lag_history(self.cluster, written, trim=trim):
            self._history.stored(written, trim)
        self._history.retain(groups)
        for gid in set(self._trackers) - set(groups):
            del self._trackers[gid]
        for cache in (self._members_cache, self._entries_cache):
            for gid in cache.keys() - groups.keys():
                del cache[gid]
        return ended

    def _observe(self, g: GroupState, now: float, ended: list[tuple[str, Rebalance]]) -> None:
        tracker = self._trackers.setdefault(g.group_id, RebalanceTracker())
        cached = self._members_cache.get(g.group_id)
        if cached is not None and cached[0] is g.members:
            members = cached[1]  # a state carried over: the same mapping (the tracker compares it by identity first)
        else:
            members = {m.member_id: RbMember(m.client_id, m.host, frozenset((a[0], int(a[1])) for a in m.assignment))
                       for m in g.members}
            self._members_cache[g.group_id] = (g.members, members)
        ended += [(g.group_id, r) for r in tracker.observe(Observation(now, g.state, g.generation, members))]

    def _entries_of(self, g: GroupState) -> tuple[tuple[tuple[str, int, int], ...], frozenset[Key]]:
        """(topic, partition, committed) of each committed offset, and the windows' keys; once per state."""
        cached = self._entries_cache.get(g.group_id)
        if cached is not None and cached[0] is g.offsets:
            return cached[1], cached[2]
        entries = tuple((topic, int(part), committed) for key, committed in g.offsets.items()
                        for topic, _, part in (key.rpartition(":"),))
        keys = frozenset((g.group_id, t, p) for t, p, _ in entries)
        # The end offsets of its partitions in one C call, to compare with the committed ones.
        getter = itemgetter(*[(t, p) for t, p, _ in entries]) if entries else None
        committed = tuple(c for _, _, c in entries) if len(entries) != 1 else entries[0][2]
        self._entries_cache[g.group_id] = (g.offsets, entries, keys, getter, committed)
        return entries, keys

    def _caught_up_and_unchanged(self, last: GroupState, g: GroupState, ends: Mapping[tuple[str, int], int]) -> bool:
        if last.status != "OK" or not g.offsets:
            return False
        if last is not g and (last.offsets != g.offsets or last.members != g.members or last.state != g.state
                              or last.generation != g.generation or last.broker_lag != g.broker_lag):
            return False
        self._entries_of(g)
        _, _, _, getter, committed = self._entries_cache[g.group_id]
        try:
            return getter is not None and getter(ends) == committed
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
