"""Where each watcher cycle's outcome goes: its events into the store the apps registered, the
snapshot into Redis (in parts: only what changed), and one small update over the Channels layer
that every open page of the cluster receives. Events found by the sampling thread (rebalances, a
refused analytics topic) are queued here and go out with the next update. After its events, each
cycle's snapshot goes to the alert rules (registry.alert_evaluator), in the same thread: the
metadata cycle never waits for them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Collection
from datetime import UTC, datetime
from typing import Any

from console.lifecycle import failure_seen
from console.realtime import cluster_group, group_send
from console.snapshots import store
from console.snapshots.model import Snapshot
from console.snapshots.parts import ContentParts
from console.watcher import registry
from console.watcher.diff import Change
from console.watcher.registry import EventRow

log = logging.getLogger(__name__)

UNSAVED_LIMIT = 100_000  # events kept while the database refuses them
# Events saved between cycles (the sampling process's, those found outside a cycle) kept for the
# next update's broadcast: the newest this many, which is all an update carries. While Redis refuses
# saves no update goes out, and the list grew with every event of the outage (they are in the
# database: the events page shows them all).
PENDING_KEPT = 200
# The events thread runs below the metadata cycle's priority (Linux sets a nice value per thread), as
# the sampling process does: a large cluster's events are many rows a second into a table that
# grows, and on a busy host the cycle (leader moves reaching the pages) goes first.
WRITER_NICENESS = 10


class Publisher:
    def __init__(self, cluster: str, background: bool = False) -> None:
        """`background`: a cycle's events are written by a thread of their own (`record_later`),
        so the next cycle does not wait for the database (that work is mostly out of the
        interpreter lock).
        `manage.py watch` writes so; a watcher driven cycle by cycle (tests, tools) writes in the
        cycle, where the caller reads them back."""
        self.cluster = cluster
        self.redis_ok = True
        self.saved_once = False  # the content is in Redis (else the next save writes it, changed or not)
        self._stored: store.StoredContent | None = None  # what the last save stored (the next writes the difference)
        self._lock = threading.Lock()
        self._pending: list[dict[str, Any]] = []  # events found between cycles, as broadcast
        self._unsaved: list[EventRow] = []  # events the database refused, saved with the next cycle's
        self._writer: EventWriter | None = EventWriter(self) if background else None
        self._alerts: registry.AlertEvaluator | None = None  # (made at the first cycle, in the thread that evaluates)
        self._alerts_failing = False

    @property
    def writes_all(self) -> bool:
        """The next save writes every part (the first, or the first since Redis refused one)."""
        return self._stored is None

    def restart(self, saved: bool) -> None:
        """After loading the last snapshot from Redis: write the content in full at the first save."""
        self.saved_once, self._stored = saved, None

    def emit(self, rows: list[EventRow]) -> None:
        """Keep events found outside a cycle (any thread); the next update broadcasts them."""
        saved = registry.events().save(rows)
        self.queue(saved)

    def queue(self, saved: list[dict[str, Any]]) -> None:
        """Events already saved (by the sampling process): the next update broadcasts them (the
        newest PENDING_KEPT)."""
        with self._lock:
            self._pending += saved
            del self._pending[:-PENDING_KEPT]

    def record_later(self, snap: Snapshot, changes: list[Change]) -> None:
        """Save and announce a cycle's events: in the writer thread (`background`), else now."""
        if self._writer is None:
            self.announce(self.record(snap, changes))
            self.evaluate_alerts(snap)
        else:
            self._writer.put(self.rows(snap, changes) if changes or self._unsaved else None, snap)

    def evaluate_alerts(self, snap: Snapshot) -> None:
        """The alert rules on a cycle's snapshot; a failure is logged once until it passes again."""
        try:
            if self._alerts is None:
                self._alerts = registry.alert_evaluator(self.cluster, "metadata")
            self._alerts.snapshot(snap)
            if self._alerts_failing:
                log.warning("alert evaluation of %s works again", self.cluster)
            self._alerts_failing = False
        except Exception:  # noqa: BLE001 - alerts must never stop the live console
            failure_seen()
            if not self._alerts_failing:
                log.exception("alert evaluation of %s failed", self.cluster)
            self._alerts_failing = True

    def flush(self, timeout: float = 60.0) -> bool:
        """Wait until the events handed to the writer thread are written (or refused and kept);
        False if that took longer than `timeout`."""
        return self._writer.flush(timeout) if self._writer is not None else True

    def close(self) -> None:
        """Write what the writer thread still holds, and end it."""
        if self._writer is not None:
            self._writer.close()

    @property
    def writer_cpu_seconds(self) -> float:
        return self._writer.cpu_seconds if self._writer is not None else 0.0

    def rows(self, snap: Snapshot, changes: list[Change]) -> list[EventRow]:
        at = datetime.fromtimestamp(snap.checked_at or time.time(), tz=UTC)
        return [EventRow(cluster=self.cluster, at=at, kind=c.kind, severity=c.severity, message=c.message,
                         topic=c.topic, partition=c.partition, broker=c.broker, details=c.details)
                for c in changes]

    def record(self, snap: Snapshot, changes: list[Change]) -> list[dict[str, Any]]:
        """Keep the events of a cycle's changes. When the database refuses them they are kept here
        and saved with the next cycle's (its snapshot is already published, so they are not found
        again by comparing snapshots)."""
        return self.save_rows(self.rows(snap, changes))

    def save_rows(self, new: list[EventRow]) -> list[dict[str, Any]]:
        """Save rows after those the database refused before (see `record`)."""
        rows = self._unsaved + new
        if not rows:
            return []
        try:
            saved = registry.events().save(rows)
        except Exception:  # noqa: BLE001 - the database down: the live console goes on, the events wait
            failure_seen()
            if len(rows) > UNSAVED_LIMIT:
                log.error("the database refused events of %s for long: the oldest %d are dropped", self.cluster,
                          len(rows) - UNSAVED_LIMIT)
                rows = rows[-UNSAVED_LIMIT:]
            if not self._unsaved:
                log.warning("cannot save the events of %s; kept for the next cycle", self.cluster, exc_info=True)
            self._unsaved = rows
            return []
        if self._unsaved:
            log.warning("saved %d events of %s the database had refused", len(self._unsaved), self.cluster)
        self._unsaved = []
        return saved

    def announce(self, events: list[dict[str, Any]]) -> None:
        """Broadcast events saved after the update that carried their snapshot went out (not while
        Redis is down: the events page shows them on its next load)."""
        if not events or not self.redis_ok:
            return
        try:
            group_send(cluster_group(self.cluster), {"type": "events.added", "events": events[:200], "at": time.time()})
        except Exception:  # noqa: BLE001 - the events page shows them on its next load
            failure_seen()
            log.warning("broadcast of events to %s failed", self.cluster, exc_info=True)

    def publish(self, snap: Snapshot, previous: Snapshot | None, events: list[dict[str, Any]], changed: bool,
                content: ContentParts | None, digests: dict[str, int] | None = None, ahead: Collection[str] = (),
                changes: store.PartChanges | None = None) -> bool:
        """Store the snapshot (`content` None: only its stamp changed; `digests`: its parts',
        store.digests_of; `ahead`: parts written ahead, and `changes`, how the digests differ from the
        last content's: store.save) and broadcast the update; False
        when Redis could not take it (the next publish writes the whole content again)."""
        try:
            self._stored = store.save(snap, content, self._stored, digests, ahead, changes)
            if not self.redis_ok:
                log.warning("Redis is reachable again")
            self.redis_ok = True
        except store.StoreUnavailable as exc:
            if self.redis_ok:
                log.warning("cannot save the snapshot of %s: %s", self.cluster, exc)
            self.redis_ok = False
            self.saved_once, self._stored = False, None  # Redis may have lost everything: write it all again
            return False
        self.saved_once = self.saved_once or content is not None
        with self._lock:
            pending, self._pending = self._pending, []
        message = {
            "type": "cluster.update",
            "cluster": self.cluster,
            "version": snap.version,
            "changed": changed,
            "taken_at": snap.taken_at,
            "checked_at": snap.checked_at,
            "reachable": snap.reachable,
            "error": snap.error,
            "cause": snap.cause,
            "quorum_changed": snap.quorum != (previous.quorum if previous else None),
            "events": (events + pending)[:PENDING_KEPT],
            "sent_at": time.time(),  # (pages and benches see how long the broadcast and their redraw took)
        }
        try:
            group_send(cluster_group(self.cluster), message)
        except Exception:  # noqa: BLE001 - a broadcast failure must not stop the watcher
            failure_seen()
            log.warning("broadcast to %s failed", self.cluster, exc_info=True)
        return True


class EventWriter:
    """The thread that saves and announces a watcher's events (Publisher with `background`). It
    takes what the cycles handed it in order; rows that piled up while it wrote go in one save.
    Rows the database refuses are kept by the publisher and saved with the next (as `record` does)."""

    def __init__(self, publisher: Publisher) -> None:
        self.publisher = publisher
        self.cpu_seconds = 0.0  # (the thread's own CPU time: the simulator counts it with the watcher's)
        self._cond = threading.Condition()
        self._queue: list[list[EventRow]] = []
        self._snap: Snapshot | None = None  # the latest cycle's, for the alert rules
        self._busy = False
        self._closed = False
        self.native_id: int | None = None  # (the thread's, once it runs)
        self._thread = threading.Thread(target=self._run, name=f"events-{publisher.cluster}", daemon=True)
        self._thread.start()

    def put(self, rows: list[EventRow] | None, snap: Snapshot | None = None) -> None:
        """A cycle's event rows (None: it had none) and its snapshot for the alert rules (only the
        latest is evaluated when cycles come faster than the thread writes)."""
        with self._cond:
            if not self._closed:
                if rows is not None:
                    self._queue.append(rows)
                if snap is not None:
                    self._snap = snap
                self._cond.notify_all()
                return
        # A cycle that ended after the writer was closed (a stop racing the last cycle): written here.
        if rows is not None:
            self.publisher.announce(self.publisher.save_rows(rows))

    def flush(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._queue or self._snap is not None or self._busy:
                left = deadline - time.monotonic()
                if left <= 0 or not self._thread.is_alive():
                    return False
                self._cond.wait(left)
        return True

    def close(self) -> None:
        self.flush(30.0)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(5.0)

    def _run(self) -> None:
        from django.db import connection

        self.native_id = threading.get_native_id()
        with contextlib.suppress(OSError):  # (who=0: this thread, on Linux)
            os.setpriority(os.PRIO_PROCESS, 0, min(19, os.getpriority(os.PRIO_PROCESS, 0) + WRITER_NICENESS))
        try:
            while True:
                with self._cond:
                    while not self._queue and self._snap is None and not self._closed:
                        self._cond.wait()
                    if not self._queue and self._snap is None:
                        return
                    batches, self._queue = self._queue, []
                    snap, self._snap = self._snap, None
                    self._busy = True
                started = time.thread_time()
                try:
                    if batches:
                        rows = [row for batch in batches for row in batch]
                        self.publisher.announce(self.publisher.save_rows(rows))
                except Exception:  # noqa: BLE001 - the writer must outlive one bad save (the rows are kept)
                    log.exception("writing the events of %s failed", self.publisher.cluster)
                try:
                    if snap is not None:
                        self.publisher.evaluate_alerts(snap)
                finally:
                    self.cpu_seconds += time.thread_time() - started
                    with self._cond:
                        self._busy = False
                        self._cond.notify_all()
        finally:
            connection.close()  # (this thread's own database connection)
