"""The sampling pass in a process of its own (WATCHER_SAMPLER_PROCESS, on by default).

A sampling pass (offsets, sizes, groups and their evaluation: lag status, time lag, rebalances, lag
history, analytics samples) costs seconds of CPU on a large cluster; in the watcher's process it
held the interpreter lock the metadata cycle needs, so a leader move waited for the groups to be
judged. Here the pass runs in a child process with its own lock (and core), and sends the watcher
only what changed since its last pass (`SampleDelta`): the offsets and sizes that moved, the group
states whose description, commits or evaluation changed (as the JSON the store keeps), the events
it saved (deltas.py). The watcher turns each delta back into a whole `Sample` (delta_merge.py) and
merges it as it merges one taken in its own thread, so everything after (snapshot, store, pages) is
the same either way.

The watcher tells the child what to sample (the online partitions and live brokers of its last
snapshot) when that changes, or to pause (lease lost, cluster unreachable). A child that dies is
started again by the next call; its first delta is whole. The child dies with the watcher.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import queue
import resource
import threading
import time
from collections import deque
from collections.abc import Callable, Collection
from typing import Any

from django.conf import settings

from console.gateway.types import TopicPartition
from console.lifecycle import die_with_parent, exit_reason, tune_malloc
from console.snapshots import changes
from console.watcher.delta_merge import DeltaMerger
from console.watcher.deltas import DeltaMaker, SampleDelta
from console.watcher.sample import Sample
from console.watcher.turns import CycleFirst

log = logging.getLogger(__name__)

ALIVE_EVERY_MAX = 10.0  # seconds between a pass's "alive" messages (at most a quarter of the stall limit)
RESTART_STABLE_SECONDS = 30.0  # a process that ran this long is started again at once when it ends
# A first pass that outlasts WATCHER_SAMPLER_STALL_SECONDS has the next process allowed twice as long,
# up to this many times the setting (RemoteSampler.stall_limit).
STALL_LIMIT_MAX_FACTOR = 8
GatewayFactory = Callable[[], Any]  # picklable; called in the child (None: the cluster's own gateway)


class _WriterStats:
    records = 0
    seconds = 0.0
    refused = 0


class _Outbox:
    """What the watcher tells one sampling process (targets, "pause", "groups", the last None),
    sent in order by a thread of its own. The sampling thread that takes the passes in must never
    wait on a send: while a pass's pieces fill the pipe the child waits for them to be read, and a
    large target sent from that thread would deadlock both, freezing offsets and lag."""

    def __init__(self, conn: Any, cluster: str) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._cluster = cluster
        self._thread = threading.Thread(target=self._run, args=(conn,), name=f"sampler-outbox-{cluster}", daemon=True)
        self._thread.start()

    def put(self, message: Any) -> None:
        self._queue.put(message)

    def _run(self, conn: Any) -> None:
        while True:
            message = self._queue.get()
            if message is _Outbox:  # (the process is let go of)
                return
            try:
                conn.send(message)
            except (OSError, ValueError):  # (the process ended, or its pipe was closed)
                log.info("could not reach the sampling process of %s", self._cluster)
                return
            del message

    def stop(self) -> None:
        """Send nothing more (what is queued is dropped once a send fails or the stop is reached)."""
        self._queue.put(_Outbox)


class RemoteSampler:
    """The watcher's side: starts the child, tells it what to sample, takes its deltas as Samples."""

    def __init__(self, cluster: str, incremental: bool, factory: GatewayFactory | None,
                 on_events: Callable[[list[dict[str, Any]]], None], on_restart: Callable[[str], None] | None = None,
                 turns: CycleFirst | None = None) -> None:
        self.cluster = cluster
        self.incremental = incremental
        self.factory = factory
        self.on_events = on_events
        self.on_restart = on_restart  # told why the last one ended, when a new sampling process is started
        # What Sampler offers the watcher's stats, as the child last reported it.
        self.requests = 0
        self.times: deque[float] = deque(maxlen=100)
        self.group_stats: dict[str, float | int] = {}
        self.writer = _WriterStats()
        self.child_rss_mb = 0.0
        self.child_cpu_seconds = 0.0
        self.restarts = 0
        self._process: Any = None
        self._conn: Any = None
        self._outbox: _Outbox | None = None
        self._turns = turns or CycleFirst()
        self._merger = DeltaMerger(self._turns.give_way)
        self._sent: tuple[Collection[TopicPartition], list[int]] | None = None
        self._heard_at = time.monotonic()  # the last sign of work from the child (a pass, its "alive" as one goes on, or being given work)
        self._stalled = False
        self._started_at = 0.0
        self._passes = 0  # passes taken from the process running now
        # How long a process's first pass may take before it is taken for hung (`stall_limit`).
        self._first_limit: float | None = None  # (None: WATCHER_SAMPLER_STALL_SECONDS)
        self._pause = 0.0  # before starting again a process that ended soon after its start
        self._not_before = 0.0
        self._groups_wanted = False  # every group's part to be sent again (`ask_groups_again`)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def _start(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        mine, theirs = ctx.Pipe()
        overrides = {k: getattr(settings, k) for k in dir(settings) if k.startswith(("WATCHER_", "ANALYTICS_"))}
        overrides["DATABASES"] = settings.DATABASES
        self._process = ctx.Process(target=child_main, name=f"sampler-{self.cluster}", daemon=True,
                                    args=(self.cluster, self.incremental, self.factory, overrides, theirs))
        self._process.start()
        theirs.close()
        self._conn, self._sent, self._merger = mine, None, DeltaMerger()
        self._outbox = _Outbox(mine, self.cluster)
        self._groups_wanted = False
        self._heard_at = self._started_at = time.monotonic()
        self._stalled = False
        self._passes = 0

    def _ensure(self) -> bool:
        """A sampling process is running (started again if it ended, unless it ended soon after its
        last start: then not before a pause that doubles up to a minute, so one that cannot start
        does not fill the timeline). False while there is none."""
        limit = self.stall_limit()
        if self._process is not None and self._process.is_alive():
            if self._sent is None or time.monotonic() - self._heard_at < limit:
                return True
            if self._conn.poll(0):
                # A message waits unread: the child worked, the watcher was slow to read (a loaded
                # machine); `receive` takes it in, and the child is judged by its own silence only.
                return True
            # Given work and silent for that long: hung (a native client library can deadlock); a
            # new process is better than offsets and lag frozen without a word.
            log.warning("the sampling process of %s sent nothing for %.0f s; stopping it", self.cluster,
                        time.monotonic() - self._heard_at)
            self._stalled = True
            if not self._passes:  # (its first pass may just be long: the next process's may take twice as long)
                self._first_limit = min(STALL_LIMIT_MAX_FACTOR * settings.WATCHER_SAMPLER_STALL_SECONDS, 2 * limit)
            self._process.kill()
            self._process.join(5)
        now = time.monotonic()
        if now < self._not_before:
            return False
        ended = None
        if self._process is not None:
            lived = now - self._started_at
            self._pause = 0.0 if lived >= RESTART_STABLE_SECONDS else min(60.0, max(1.0, self._pause * 2))
            self.restarts += 1
            ended = exit_reason(self._process.exitcode if self._process.exitcode is not None else 0)
            if self._stalled:
                ended = f"it sent nothing for {limit:.0f} s and was stopped"
                if not self._passes:
                    ended += f"; the next one's first pass may take {self.stall_limit():.0f} s"
            log.warning("the sampling process of %s ended (%s); starting it again%s", self.cluster, ended,
                        f" in {self._pause:.0f} s" if self._pause else "")
            self._let_go()
            self._not_before = now + self._pause
            if self.on_restart is not None:
                self.on_restart(ended)
            if self._pause:
                return False
        self._start()
        return True

    def stall_limit(self) -> float:
        """How long the running process may stay silent with work given: a first pass (it reads
        every offset, size and group, which on a large cluster takes minutes) as long as the last
        process's was allowed, doubled if that one was stopped before its first pass; after it,
        WATCHER_SAMPLER_STALL_SECONDS. Otherwise a first pass longer than the setting would have
        every new process stopped in its first pass, for ever."""
        base: float = settings.WATCHER_SAMPLER_STALL_SECONDS
        return max(base, self._first_limit or base) if not self._passes else base

    def target(self, partitions: Collection[TopicPartition], brokers: list[int]) -> None:
        """Sample these from now on (sent only when it differs from what the child has)."""
        if not self._ensure():
            return
        if self._sent is not None and (self._sent[0] is partitions or self._sent[0] == partitions) and self._sent[1] == brokers:
            return
        self._send(("target", partitions, brokers))
        if self._sent is None:
            self._heard_at = time.monotonic()  # (a paused child owes nothing)
        self._sent = (partitions, brokers)

    def _send(self, message: Any) -> None:
        if self._outbox is None:  # (a pipe given without `_start`: tests)
            self._outbox = _Outbox(self._conn, self.cluster)
        self._outbox.put(message)

    def _let_go(self) -> None:
        """The ended process's pipe closed, and its outbox stopped."""
        if self._outbox is not None:
            self._outbox.stop()
            self._outbox = None
        self._conn.close()
        self._process = None

    def pause(self) -> None:
        if self._process is None or self._sent is None:
            return
        self._send(("pause",))
        self._sent = None

    def ask_groups_again(self) -> None:
        """Have the child send every group's part again (any thread: the sampling thread sends the
        request with its next `receive`). The pieces come as a pass's do (DeltaMerger.apply_piece)."""
        self._groups_wanted = True

    def receive(self, wait: float) -> list[Sample]:
        """The passes the child finished, waiting up to `wait` seconds for one."""
        if not self._ensure():
            time.sleep(min(wait, 1.0))
            return []
        out: list[Sample] = []
        try:
            if self._groups_wanted:
                self._groups_wanted = False
                self._send(("groups",))
            ready = self._conn.poll(wait)
            while ready:
                message = self._conn.recv()
                self._heard_at = time.monotonic()
                if isinstance(message, tuple) and message[0] in ("groups_sent", "alive"):  # (no delta follows)
                    ready = self._conn.poll(0)
                    continue
                if isinstance(message, tuple):  # a piece of the next delta: the rest follows
                    if message[0] == "offsets":
                        self._merger.apply_offsets(message[1], message[2])
                    else:
                        self._merger.apply_piece(message[1])
                    del message
                    ready = self._conn.poll(max(wait, 5.0))
                    continue
                delta: SampleDelta = message
                with self._turns.merge():
                    out.append(self._merger.apply(delta))
                self._passes += 1
                self._took(delta)
                ready = self._conn.poll(0)
        except (EOFError, OSError):
            log.info("the sampling process of %s went away", self.cluster)
        return out

    def _took(self, d: SampleDelta) -> None:
        s = d.stats
        self.requests = s.get("requests", self.requests)
        if "seconds" in s:
            self.times.append(s["seconds"])
        self.group_stats = s.get("group_stats", self.group_stats)
        self.writer.records, self.writer.seconds, self.writer.refused = s.get("writer", (0, 0.0, 0))
        self.child_rss_mb = s.get("rss_mb", self.child_rss_mb)
        self.child_cpu_seconds = s.get("cpu_seconds", self.child_cpu_seconds)
        if d.events:
            self.on_events(d.events)

    def close(self) -> None:
        if self._process is None:
            return
        self._send(None)
        self._process.join(5)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(5)
        self._let_go()


def start_django() -> None:
    """Django, as a watcher's process loads it: it serves no page, so no web server (see settings)."""
    os.environ["CONSOLE_PROCESS"] = "watcher"
    import django

    django.setup()


def child_main(cluster: str, incremental: bool, factory: GatewayFactory | None, overrides: dict[str, Any], conn: Any) -> None:
    """The child: sample what the watcher last asked for, every WATCHER_OFFSETS_INTERVAL (at once
    when a change made through the console nudges it), and send each pass as a delta."""
    die_with_parent()
    tune_malloc()
    with contextlib.suppress(OSError):  # (WATCHER_SAMPLER_NICENESS, before Django: its setup is work too)
        os.nice(overrides["WATCHER_SAMPLER_NICENESS"])
    parent = os.getppid()
    start_django()

    def step_done() -> None:
        # (each step of starting said to the watcher as it ends: Django, then the gateway take
        # seconds each on a loaded machine, and the stall limit is for one step, not for all)
        with contextlib.suppress(OSError):
            conn.send(("alive",))

    step_done()
    for name, value in overrides.items():
        setattr(settings, name, value)
    from console import gateway
    from console.watcher import registry
    from console.watcher.memory import settle_gc, tune_gc
    from console.watcher.registry import EventRow
    from console.watcher.sampler import Sampler

    gw = factory() if factory is not None else gateway.for_cluster(cluster)
    events: list[dict[str, Any]] = []

    def emit(rows: list[EventRow]) -> None:
        try:
            events.extend(registry.events().save(rows))
        except Exception:  # noqa: BLE001 - an event that cannot be saved must not stop the sampling
            log.exception("saving events of %s failed", cluster)

    sampler = Sampler(cluster, gw, incremental, emit, alerts_apart=True)
    # A long pass says it goes on, so that only a process stuck in one call is taken for hung.
    every = min(ALIVE_EVERY_MAX, settings.WATCHER_SAMPLER_STALL_SECONDS / 4)
    said = [time.monotonic()]

    def alive() -> None:
        now = time.monotonic()
        if now - said[0] >= every:
            said[0] = now
            with contextlib.suppress(OSError):
                conn.send(("alive",))

    sampler.progress = alive
    step_done()  # (a process that hangs while starting is still stopped: one step)
    maker = DeltaMaker()
    target: tuple[list[TopicPartition], list[int]] | None = None
    tuned = False
    while True:
        try:
            while conn.poll(0 if target is not None else 1.0):
                message = conn.recv()
                if message is None:
                    return
                if message[0] == "groups":  # every group's part again, now (not a pass: paused too)
                    for piece in maker.every_group():
                        conn.send(piece)
                    conn.send(("groups_sent",))
                    continue
                # (the watcher's layout as the sampler's shared tuples, once per target)
                target = ([sampler.names.shared(tp) for tp in message[1]], message[2]) if message[0] == "target" else None
        except (EOFError, OSError):
            return
        if target is None:
            if os.getppid() != parent:
                return
            continue
        started = time.monotonic()
        sample = sampler.take(*target)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        stats = {"requests": sampler.requests, "seconds": round(time.monotonic() - started, 4),
                 "group_stats": dict(sampler.group_stats),
                 "writer": (sampler.writer.records, sampler.writer.seconds, sampler.writer.refused),
                 "rss_mb": round(usage.ru_maxrss / 1024, 1), "cpu_seconds": usage.ru_utime + usage.ru_stime}
        messages = maker.messages(sample, events, stats)
        events = []
        try:
            for message in messages:
                conn.send(message)
        except OSError:
            return
        del messages, message, sample
        # As the watcher's process does with its cycles: what survives a pass is frozen out of the
        # collector's sight (its defaults walked millions of objects many times a pass).
        if not tuned:
            tune_gc()
            tuned = True
        settle_gc()
        delay = max(0.1, settings.WATCHER_OFFSETS_INTERVAL - (time.monotonic() - started))
        changes.wait_for_nudge(cluster, "samples", delay)
