"""The evaluation of one cluster's rules on its live data, registered with console.watcher.registry.

Two evaluators per cluster, each owning its conditions' rules: "metadata" runs after every watcher
cycle (brokers, controller, quorum, partitions, produce rates, failed jobs), "groups" after every
sampling pass that read the groups (status, lag, time lag). Each keeps, per rule and subject key,
the open alert: pending from when the condition was first seen, firing once it held for the rule's
duration, resolved when it clears. The open alerts are rows (Alert), loaded when an evaluator
starts, so a restarted process carries on without sending again.

A condition the cycle could not read (the cluster unreachable, the groups not read) is not looked
at: its alerts keep their state, neither firing nor resolving on one missing read; broker_down and
no_controller follow what the watcher says of an unreachable cluster.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from datetime import UTC, datetime

from django.db import transaction

from alerts_app.conditions import (
    CONNECT_CONDITIONS,
    EVENT_CONDITIONS,
    GROUP_CONDITIONS,
    JOB_CONDITIONS,
    METADATA_CONDITIONS,
    TRANSACTION_CONDITIONS,
    Found,
    GroupIndex,
    Match,
    MetadataIndex,
    mapping_end_of,
    passes,
)
from alerts_app.evaluation import rule_matches
from alerts_app.generation import read_generation
from alerts_app.held import Changes, Held, RuleState, stamp
from alerts_app.models import Alert, AlertRule, Silence
from alerts_app.notify import notify
from alerts_app.silences import Labels, active, silencing
from console.errors import BadParameter
from console.snapshots import GroupState, Snapshot

log = logging.getLogger(__name__)

THRESHOLDS = ("group_lag", "partition_lag", "time_lag")  # group conditions whose matches below every rule's threshold are not made
PARTS: dict[str, tuple[str, ...]] = {"metadata": METADATA_CONDITIONS + JOB_CONDITIONS + CONNECT_CONDITIONS + TRANSACTION_CONDITIONS, "groups": GROUP_CONDITIONS}
GENERATION_EVERY = 1.0  # seconds between looks at the generation
RULES_MAX_AGE = 30.0  # rules and silences read again at least this often (a change made around the signals)
SWEEP_EVERY = 1.0  # seconds between looks for repeats and alerts whose silence ended
LOAD_RETRY = 5.0  # seconds between tries to read the rules while the database refuses
VALUES_EVERY = 10.0  # seconds between writes of open alerts' values that changed (the pages show them)
JOBS_EVERY = 2.0  # seconds between reads of the failed jobs
# A restarted groups evaluator starts with empty lag windows (every partition OK until they fill):
# alerts it loaded do not resolve before this long.
GROUPS_SETTLE_SECONDS = 120.0


class Evaluator:
    def __init__(self, cluster: str, part: str = "metadata", clock: Callable[[], float] = time.time) -> None:
        self.cluster = cluster
        self.part = part
        self.conditions = PARTS[part]
        self.clock = clock
        self.rules: dict[int, RuleState] = {}
        self.by_condition: dict[str, list[RuleState]] = {}
        self._exact: dict[str, dict[str, list[RuleState]]] = {}
        self._patterns: dict[str, list[RuleState]] = {}
        self._by_pattern: dict[str, dict[str, list[RuleState]]] = {}  # condition -> subject -> its pattern rules
        self._floors: dict[str, float] = {}  # per threshold condition, the lowest threshold of its rules
        self.metadata = MetadataIndex()
        self.group_index = GroupIndex()
        self.silences: list[Silence] = []
        self._loaded = False
        self._failing = False  # the last read of the rules failed (said once, tried again every LOAD_RETRY s)
        self._generation: bytes | None = None
        self._generation_at = self._loaded_at = self._sweep_at = self._jobs_at = self._values_at = -math.inf
        self._jobs = Found()
        self._connect, self._connect_at = Found(), -math.inf
        self._transactions, self._transactions_at = Found(), -math.inf
        self._settle_until = clock() + GROUPS_SETTLE_SECONDS if part == "groups" else -math.inf
        self._deferred: set[tuple[int, str]] = set()  # loaded alerts that cleared while settling: (rule, key)
        self._moved: set[str] | None = set()  # topics whose ends moved while the groups were not read (None: not known)
        self.seconds = 0.0  # the last evaluation's
        self.found_seconds = 0.0  # ... of which finding the conditions' matches
        self.write_seconds = 0.0  # ... and writing what changed
        self.notifications = 0  # made so far

    # Entry points ---------------------------------------------------------------------------------
    def snapshot(self, snap: Snapshot) -> None:
        """After a watcher cycle: the metadata conditions of its snapshot."""
        started = time.perf_counter()
        now = self.clock()
        self._refresh(now)
        wanted = [c for c in METADATA_CONDITIONS if c in self.by_condition]
        found = self.metadata.update(snap, now, wanted) if wanted else {}
        self.found_seconds = time.perf_counter() - started
        if "job_failed" in self.by_condition and time.monotonic() - self._jobs_at >= JOBS_EVERY:
            from alerts_app.jobs import job_matches

            self._jobs.begin().put_all(job_matches(self.cluster, now))
            self._jobs_at = time.monotonic()
            found["job_failed"] = self._jobs
        if "connect_task_failing" in self.by_condition and time.monotonic() - self._connect_at >= JOBS_EVERY:
            from alerts_app.connect_tasks import task_matches

            self._connect.begin().put_all(task_matches(self.cluster))
            self._connect_at = time.monotonic()
            found["connect_task_failing"] = self._connect
        if "transaction_hanging" in self.by_condition and time.monotonic() - self._transactions_at >= JOBS_EVERY:
            from alerts_app.transactions import transaction_matches

            self._transactions.begin().put_all(transaction_matches(self.cluster))
            self._transactions_at = time.monotonic()
            found["transaction_hanging"] = self._transactions
        self._evaluate(found, now)
        self.seconds = time.perf_counter() - started

    def groups(self, groups: Mapping[str, GroupState] | None, ends: Mapping[tuple[str, int], int], now: float | None = None,
               moved: AbstractSet[str] | None = None) -> None:
        """After a sampling pass: the group conditions (`groups` None: not read, nothing changes;
        `moved`: the topics whose end offsets moved since the last pass, None when not known)."""
        started = time.perf_counter()
        now = self.clock() if now is None else now
        if self._moved is None:
            moved = None  # (some moved, unknown which, while the groups were not read)
        elif moved is not None:
            moved = self._moved | moved
        self._moved = set() if groups is not None else set(moved) if moved is not None else None
        self._refresh(now)
        wanted = [c for c in GROUP_CONDITIONS if c in self.by_condition]
        found = self.group_index.update(groups, mapping_end_of(ends), wanted, moved, self._floors) \
            if wanted and groups is not None else {}
        self.found_seconds = time.perf_counter() - started
        self._evaluate(found, now)
        self.seconds = time.perf_counter() - started

    # Rules ----------------------------------------------------------------------------------------
    def _refresh(self, now: float) -> None:
        mono = time.monotonic()
        if mono - self._generation_at < (GENERATION_EVERY if self._loaded or not self._failing else LOAD_RETRY):
            return
        self._generation_at = mono
        generation = read_generation()
        if not self._loaded or generation != self._generation or mono - self._loaded_at >= RULES_MAX_AGE:
            try:
                self._load(now)
            except Exception:  # noqa: BLE001 - the database down: the rules held so far go on
                if not self._failing:
                    log.warning("could not read the alert rules of %s", self.cluster, exc_info=True)
                self._failing = True
                return
            if self._failing:
                log.warning("the alert rules of %s are read again", self.cluster)
            self._generation, self._loaded_at, self._loaded, self._failing = generation, mono, True, False

    def _load(self, now: float) -> None:
        if self.part == "metadata" and not self._loaded:
            from alerts_app.defaults import ensure_defaults

            ensure_defaults(self.cluster)
        rules = list(AlertRule.objects.filter(cluster=self.cluster, condition__in=self.conditions).prefetch_related("channels"))
        enabled = {r.id: r for r in rules if r.enabled}
        for rid in [rid for rid in self.rules if rid not in enabled]:
            self._close(self.rules.pop(rid), now)
        new = [rid for rid in enabled if rid not in self.rules]
        opened: dict[int, list[Alert]] = {}
        for a in Alert.objects.filter(rule_id__in=new, state__in=("pending", "firing")).order_by("id"):
            opened.setdefault(a.rule_id, []).append(a)
        for rid, rule in enabled.items():
            channels = tuple(sorted(c.id for c in rule.channels.all() if c.enabled))
            held = self.rules.get(rid)
            try:
                if held is None:
                    held = RuleState(rule, channels)
                    for a in opened.get(rid, ()):
                        held.open[a.key] = Held(a, None, loaded=True)
                        if a.state == "pending":
                            held.pending.add(a.key)
                    self.rules[rid] = held
                elif held.stamp != stamp(rule):
                    held.set(rule, channels)
                else:
                    held.rule, held.channels = rule, channels
            except BadParameter as exc:  # (a target's regex that no longer compiles: the rule waits for a fix)
                log.warning("alert rule %s of %s is skipped: %s", rid, self.cluster, exc)
                self.rules.pop(rid, None)
        self._index()
        self.silences = list(Silence.objects.filter(cluster__in=(self.cluster, "*"), ends_at__gt=_at(now), expired_early_by=""))

    def _index(self) -> None:
        self.by_condition, self._exact, self._patterns, self._by_pattern = {}, {}, {}, {}
        self._floors = {}
        for r in self.rules.values():
            c = r.spec.condition
            self.by_condition.setdefault(c, []).append(r)
            if r.whole or r.target.exact is None:
                self._patterns.setdefault(c, []).append(r)
            else:
                self._exact.setdefault(c, {}).setdefault(r.target.exact, []).append(r)
            if c in THRESHOLDS:
                floor = max(0.0, r.spec.threshold or 0.0)
                self._floors[c] = min(self._floors.get(c, floor), floor)

    def _patterns_of(self, condition: str, subject: str) -> list[RuleState]:
        """The rules by pattern (or on every subject) of a condition that name a subject, found once."""
        by_subject = self._by_pattern.setdefault(condition, {})
        rules = by_subject.get(subject)
        if rules is None:
            if len(by_subject) > 200_000:  # (subjects come and go: bounded all the same)
                by_subject.clear()
            rules = by_subject[subject] = [r for r in self._patterns.get(condition, ()) if r.whole or r.target.matches(subject)]
        return rules

    def _close(self, r: RuleState, now: float) -> None:
        """A rule disabled or gone: its pending alerts go, its firing ones end (nothing is sent)."""
        pending = [h.row.id for h in r.open.values() if h.row.state == "pending"]
        firing = [h.row.id for h in r.open.values() if h.row.state == "firing"]
        Alert.objects.filter(id__in=pending).delete()
        Alert.objects.filter(id__in=firing).update(state="resolved", resolved_at=_at(now))

    # Evaluation -----------------------------------------------------------------------------------
    def _evaluate(self, found: Mapping[str, Found], now: float) -> None:
        changes = Changes()
        for condition, f in found.items():
            rules = self.by_condition.get(condition)
            if not rules:
                continue
            for r in rules:
                if r.fresh or f.changed is None:
                    self._full(r, f, now, changes)
                    r.fresh = False
            if f.changed:
                exact = self._exact.get(condition, {})
                for subject in f.changed:
                    for r in exact.get(subject, ()):
                        self._subject(r, f, subject, now, changes)
                    for r in self._patterns_of(condition, subject):
                        self._subject(r, f, subject, now, changes)
            for r in rules:
                if r.pending:
                    self._durations(r, now, changes)
        if self._deferred and now >= self._settle_until:
            deferred, self._deferred = self._deferred, set()
            for rid, key in deferred:
                waiting = self.rules.get(rid)
                if waiting is None or key not in waiting.open:
                    continue
                if waiting.spec.condition not in found:
                    self._deferred.add((rid, key))  # (its condition not read this time)
                elif not any(key in by_key for by_key in waiting.current.values()):
                    self._clears(waiting, key, now, changes)
        sweep = time.monotonic() - self._sweep_at >= SWEEP_EVERY
        self.write_seconds = 0.0
        if not changes and not sweep:
            return
        writing = time.perf_counter()
        try:
            with transaction.atomic():
                if changes:
                    self._write(changes, now)
                if sweep:
                    self._sweep_at = time.monotonic()
                    self._sweep(now)
            self.write_seconds = time.perf_counter() - writing
        except Exception:
            # What is held no longer says what the database does: read it all again next time.
            self._loaded = False
            self.rules = {}
            self._index()
            raise

    def _full(self, r: RuleState, f: Found, now: float, changes: Changes) -> None:
        current: dict[str, dict[str, Match]] = {}
        for m in rule_matches(r.spec, r.target, f):
            current.setdefault(m.subject, {})[m.key] = m
        r.current = current
        holding = {k: m for by_key in current.values() for k, m in by_key.items()}
        for key, m in holding.items():
            self._holds(r, key, m, now, changes)
        for key in [k for k in r.open if k not in holding]:
            self._clears(r, key, now, changes)

    def _subject(self, r: RuleState, f: Found, subject: str, now: float, changes: Changes) -> None:
        old = r.current.get(subject, {})
        new = {m.key: m for m in f.by_subject.get(subject, ()) if passes(r.spec, m)}
        if new:
            r.current[subject] = new
        elif old:
            del r.current[subject]
        for key, m in new.items():
            self._holds(r, key, m, now, changes)
        for key in old:
            if key not in new:
                self._clears(r, key, now, changes)

    def _holds(self, r: RuleState, key: str, m: Match, now: float, changes: Changes) -> None:
        held = r.open.get(key)
        if held is not None:
            held.match = m
            return
        rule = r.rule
        instant = rule.for_seconds == 0 or rule.condition in EVENT_CONDITIONS
        at = _at(now)
        row = Alert(rule=rule, cluster=self.cluster, key=key, state="firing" if instant else "pending", severity=rule.severity,
                    message=m.message, value=m.value, details=m.details, since=at, fired_at=at if instant else None)
        held = r.open[key] = Held(row, m)
        changes.created.append(held)
        if instant:
            self._fired(r, held, now, changes)
        else:
            r.pending.add(key)

    def _durations(self, r: RuleState, now: float, changes: Changes) -> None:
        due = now - r.rule.for_seconds
        for key in [k for k in r.pending if r.open[k].since <= due]:
            held = r.open[key]
            if held.match is None:  # (loaded, not seen holding since: its condition decides first)
                continue
            r.pending.discard(key)
            row, m = held.row, held.match
            row.state, row.fired_at, row.message, row.value, row.details = "firing", _at(now), m.message, m.value, m.details
            if row.pk is not None:
                changes.updated.append(held)
            self._fired(r, held, now, changes)

    def _fired(self, r: RuleState, held: Held, now: float, changes: Changes) -> None:
        s = silencing(self.silences, self._labels(r, held), _at(now))
        held.row.silenced_by_id = s.id if s is not None else None  # type: ignore[attr-defined]
        changes.fired.setdefault(r.rule.id, []).append(held)

    def _clears(self, r: RuleState, key: str, now: float, changes: Changes) -> None:
        held = r.open[key]
        if held.loaded and now < self._settle_until:
            self._deferred.add((r.rule.id, key))  # (looked at again once settled)
            return
        del r.open[key]
        if held.row.state == "pending":
            r.pending.discard(key)
            if held.row.pk is not None:
                changes.dropped.append(held)
            return
        held.row.state, held.row.resolved_at = "resolved", _at(now)
        if held.row.pk is not None:
            changes.updated.append(held)
        changes.resolved.setdefault(r.rule.id, []).append(held)

    def _labels(self, r: RuleState, held: Held) -> Labels:
        rule = r.rule
        return Labels(self.cluster, rule.name, rule.id, rule.condition, held.row.key, rule.severity, rule.target)

    # Writing --------------------------------------------------------------------------------------
    def _write(self, changes: Changes, now: float) -> None:
        """The evaluation's rows, then one notification per rule of those that fired and of those
        that resolved (their sending is marked on the rows before they are written: no second write)."""
        at = _at(now)
        to_send: list[tuple[RuleState, str, list[Alert]]] = []
        for rid, fired in changes.fired.items():
            r = self.rules.get(rid)
            if r is not None and r.channels:
                to_send.append((r, "firing", [h.row for h in fired if h.row.silenced_by_id is None]))  # type: ignore[attr-defined]
        for rid, resolved in changes.resolved.items():
            r = self.rules.get(rid)
            if r is not None and r.channels and r.spec.condition not in EVENT_CONDITIONS:
                to_send.append((r, "resolved", [h.row for h in resolved if h.row.pk is not None and h.row.last_notified_at is not None
                                                and silencing(self.silences, self._labels(r, h), at) is None]))
        for _, _, rows in to_send:
            for row in rows:
                row.last_notified_at = at
        created = [h.row for h in changes.created if h.row.state != "resolved"]
        if created:
            Alert.objects.bulk_create(created)
        if changes.dropped:
            Alert.objects.filter(id__in=[h.row.id for h in changes.dropped]).delete()
        if changes.updated:
            Alert.objects.bulk_update([h.row for h in changes.updated], ["state", "fired_at", "resolved_at", "message", "value", "details",
                                                                          "silenced_by", "last_notified_at"])
        for r, kind, rows in to_send:
            if notify(r.rule, r.channels, kind, rows, at) is not None:
                self.notifications += 1

    def _sent(self, rows: list[Alert], at: datetime) -> None:
        for row in rows:
            row.last_notified_at = at
        if rows:
            Alert.objects.bulk_update(rows, ["last_notified_at", "message", "value", "details"])

    def _sweep(self, now: float) -> None:
        """Firing alerts due again: never sent (their silence ended, their rule got a channel) or
        sent `repeat_seconds` ago and not acknowledged; one notification per rule and kind."""
        at = _at(now)
        if time.monotonic() - self._values_at >= VALUES_EVERY:
            self._values_at = time.monotonic()
            self._write_values()
        due: list[tuple[RuleState, Held]] = []
        for r in self.rules.values():
            if not r.channels:
                continue
            repeat = r.rule.repeat_seconds
            for held in r.open.values():
                row = held.row
                if row.state != "firing" or row.pk is None:
                    continue
                if row.last_notified_at is None:
                    if not self._still_silenced(row, at):
                        due.append((r, held))
                elif repeat and r.spec.condition not in EVENT_CONDITIONS and now - row.last_notified_at.timestamp() >= repeat:
                    due.append((r, held))
        if not due:
            return
        fresh = {i: (ack, silenced) for i, ack, silenced in
                 Alert.objects.filter(id__in=[h.row.id for _, h in due]).values_list("id", "acknowledged_by", "silenced_by")}
        by_rule: dict[tuple[int, str], list[Alert]] = {}
        for r, held in due:
            row = held.row
            ack, silenced = fresh.get(row.id, ("", None))
            row.acknowledged_by = ack or ""
            s = silencing(self.silences, self._labels(r, held), at)
            row.silenced_by_id = s.id if s is not None else (silenced if self._still_silenced(row, at, silenced) else None)  # type: ignore[attr-defined]
            if row.silenced_by_id is not None:  # type: ignore[attr-defined]
                Alert.objects.filter(id=row.id).update(silenced_by=row.silenced_by_id)  # type: ignore[attr-defined]
                continue
            if silenced is not None:
                Alert.objects.filter(id=row.id).update(silenced_by=None)
            if ack and row.last_notified_at is not None:
                continue
            if held.match is not None:  # (sent as it is now: a lag that grew says its new value)
                row.message, row.value, row.details = held.match.message, held.match.value, held.match.details
            by_rule.setdefault((r.rule.id, "firing" if row.last_notified_at is None else "repeat"), []).append(row)
        sent: list[Alert] = []
        for (rid, kind), rows in by_rule.items():
            r = self.rules[rid]
            if rows and notify(r.rule, r.channels, kind, rows, at) is not None:
                self.notifications += 1
                sent += rows
        self._sent(sent, at)

    def _write_values(self) -> None:
        """Open alerts whose value or sentence changed since written (a lag growing), written now."""
        moved = []
        for r in self.rules.values():
            for held in r.open.values():
                row, m = held.row, held.match
                if m is not None and row.pk is not None and (row.value != m.value or row.message != m.message):
                    row.message, row.value, row.details = m.message, m.value, m.details
                    moved.append(row)
        if moved:
            Alert.objects.bulk_update(moved, ["message", "value", "details"], batch_size=500)

    def _still_silenced(self, row: Alert, at: datetime, silence_id: int | None = -1) -> bool:
        sid = row.silenced_by_id if silence_id == -1 else silence_id  # type: ignore[attr-defined]
        if sid is None:
            return False
        return any(s.id == sid and active(s, at) for s in self.silences)


def _at(now: float) -> datetime:
    return datetime.fromtimestamp(now, tz=UTC)


def factory(cluster: str, part: str) -> Evaluator:
    return Evaluator(cluster, part)
