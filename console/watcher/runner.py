"""The watcher's runner: one thread per cluster holding a Redis lease (one active watcher per
cluster, others stand by), each running the metadata cycle, with a second thread sampling offsets
and groups; both woken at once by a change made through the console.
"""

from __future__ import annotations

import gc
import logging
import os
import socket
import threading
import time

from django.conf import settings

from console import gateway
from console.lifecycle import failures_seen, return_free_memory
from console.snapshots import store
from console.watcher.loop import ClusterWatcher

log = logging.getLogger(__name__)


def tune_gc() -> None:
    """For the watcher's process, once its first snapshot is built: what exists then (settings,
    clients, the snapshot's objects) is moved out of the collector's sight, and young objects are
    collected less often. A sample allocates hundreds of thousands of short-lived objects, and the
    default thresholds made the collector walk the whole heap many times a minute."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)


# The full collection (settle_gc): due this long after the last one at first; each one that finds
# fewer than GARBAGE_FEW objects to free doubles the wait (up to FULL_COLLECTION_LONGEST), one that
# finds more brings it back to FULL_COLLECTION_INTERVAL. Cyclic garbage frozen waits that long.
FULL_COLLECTION_INTERVAL = 600.0
FULL_COLLECTION_LONGEST = 6 * 3600.0
GARBAGE_FEW = 1000
# What a full collection is expected to take per object it walks, until one was measured (the most
# measured: 1.39 us, 870,000 objects in 1.21 s at 300,000 partitions after ten minutes of changes).
FULL_COLLECTION_SECONDS_PER_OBJECT = 1.5e-6
# A full collection runs after a cycle only if both fit in this share of the metadata interval.
FIT_SHARE = 0.9


class FullCollections:
    def __init__(self) -> None:
        self.last = time.monotonic()
        self.wait = FULL_COLLECTION_INTERVAL
        self.per_object = FULL_COLLECTION_SECONDS_PER_OBJECT
        self.found = 0  # unreachable objects the last one found
        self.seconds = 0.0  # and how long it took
        self.count = 0  # full collections run


full_collections = FullCollections()


class YoungCollections:
    def __init__(self) -> None:
        self.count = 0  # collections of what was not frozen yet (settle_gc after a failure)
        self.found = 0  # unreachable objects they found, in all
        self.failures = 0  # the process's failures seen (console.lifecycle) at the last settle_gc


young = YoungCollections()

# How often the C heap's free pages go back to the system (lifecycle.return_free_memory; it walks the
# heap: about 4 ms over 350 MB of fragmented blocks). Every cycle and pass (at most once a second):
# every 10 s the watcher's process held 11 MB more at its peak at 300,000 partitions (bench/simulate.py).
TRIM_INTERVAL = 1.0
_last_trim = [0.0]


def settle_gc(cycle_seconds: float | None = None) -> None:
    """After each metadata cycle (`cycle_seconds`: how long it took) or sampling pass (None): what
    survived it (the snapshot, the evaluation's state) is frozen too, so the collector's passes only
    ever walk what the next cycle and sample allocate, not the millions of objects a large
    cluster's state holds (at 300,000 partitions those walks took a quarter of a core, in pauses of
    seconds). Objects frozen are still freed when their last reference goes; only garbage in
    reference cycles waits for the full collection run here.

    That collection walks every object: 0.25 s at 300,000 partitions after a minute, 0.76 to 1.21 s
    after ten (the same 900,000 objects or so, spread over more of the heap), and it found 10
    objects to free. Run every ten minutes, it made the slowest slot of a ten-minute bench (1.48 s, the cycle
    and the collection). So it runs only after a cycle that leaves room for it in the interval, as
    long as the last one per object walked would take (FIT_SHARE), or once overdue by its whole wait
    again; and it runs less often while it finds next to nothing (FullCollections.wait)."""
    now = time.monotonic()
    overdue = now - full_collections.last - full_collections.wait
    full = False
    if overdue >= 0:
        expected = full_collections.per_object * gc.get_freeze_count()
        fits = cycle_seconds is None or cycle_seconds + expected <= FIT_SHARE * settings.WATCHER_METADATA_INTERVAL
        if fits or overdue >= full_collections.wait:
            collect_all(now)
            full = True
    failures = failures_seen()
    if not full and failures != young.failures:
        # After a cycle or pass in which something failed, what is not frozen yet (what it allocated
        # and kept) is walked once before it is: the cyclic garbage a failure leaves is freed now,
        # not frozen with the rest until the next full collection. redis-py's connect keeps the
        # error it raises in a local of a frame in that error's traceback, and that frame holds its
        # callers' frames (the cycle's, the save's) with their snapshot and content: with Redis down
        # at 300,000 partitions the watcher's process grew by 13 MB a second. Not after every cycle:
        # at 300,000 partitions that walk took 0.12 s (bench/simulate.py, docs/benchmarks.md).
        young.found += gc.collect()
        young.count += 1
    young.failures = failures
    gc.freeze()
    if now - _last_trim[0] >= TRIM_INTERVAL:
        _last_trim[0] = now
        return_free_memory()


def collect_all(started: float) -> None:
    """The full collection: every object, frozen or not; the next one's wait set by what it found."""
    walked = max(1, gc.get_freeze_count())
    gc.unfreeze()
    found = gc.collect()
    seconds = time.monotonic() - started
    done = full_collections
    done.last, done.found, done.seconds, done.per_object = started, found, seconds, seconds / walked
    done.wait = min(FULL_COLLECTION_LONGEST, 2 * done.wait) if found < GARBAGE_FEW else FULL_COLLECTION_INTERVAL
    done.count += 1
    log.info("full collection: %d objects unreachable of %d, %.3f s; the next in %.0f s", found, walked, seconds, done.wait)


def run_offsets(watcher: ClusterWatcher, stop: threading.Event, active: threading.Event) -> None:
    if watcher.remote is not None:
        # The passes run in the sampling process (it paces itself and takes the nudges): take what it sends.
        while not stop.is_set():
            if active.is_set():
                try:
                    watcher.sample_offsets(wait=1.0)
                    watcher.refresh_configs()
                except Exception:
                    log.exception("offset sampling for %s failed", watcher.cluster)
                    stop.wait(1.0)
            else:
                watcher.pause_sampling()
                stop.wait(0.5)
        watcher.close()
        return
    while not stop.is_set():
        started = time.monotonic()
        if active.is_set():
            try:
                watcher.sample_offsets()
                watcher.refresh_configs()
            except Exception:
                log.exception("offset sampling for %s failed", watcher.cluster)
        delay = max(0.1, settings.WATCHER_OFFSETS_INTERVAL - (time.monotonic() - started))
        if active.is_set():  # a change made through the console wakes the sampler at once
            store.wait_for_nudge(watcher.cluster, "samples", delay)
        else:
            stop.wait(delay)


def cycle_delay(elapsed: float, metadata_moved: bool) -> float:
    """The rest before the next metadata cycle, from the last one's time: WATCHER_METADATA_INTERVAL
    from its start, or WATCHER_BUSY_INTERVAL after a cycle whose metadata moved (leaders, ISR,
    topics: more moves tend to follow, and each waited up to a whole interval before a cycle saw
    it). A quiet cluster costs what it did. On a large cluster a cycle can outlast the interval: it
    rests WATCHER_CYCLE_REST of the cycle at least (a tenth), so the watcher never takes a whole core
    from the brokers and the web. That share was a quarter while a cycle rebuilt every topic; a
    cycle's work now follows the changes it takes in, so a longer rest saves next to no CPU (the
    next cycle takes in the changes it let wait, and is longer) and only makes every change wait:
    at 300,000 partitions with 1% changing a second, over five runs each on a 2-core machine, a
    quarter gave cycle p50s of 0.80-1.72 s and pushes of 1.5-3.1 s, a tenth 0.57-1.21 s and
    1.0-2.2 s, for 0.60 -> 0.65 of a core (docs/benchmarks.md, twenty-seventh stop)."""
    interval = settings.WATCHER_METADATA_INTERVAL
    if metadata_moved:
        interval = min(interval, settings.WATCHER_BUSY_INTERVAL)
    return max(0.05, settings.WATCHER_CYCLE_REST * elapsed, interval - elapsed)


def run_cluster(cluster: str, stop: threading.Event, lease_ttl: float = 10.0) -> None:
    # Under `manage.py watch` the supervising process's name: a watcher it restarts takes its lease back at once.
    owner = os.environ.get("WATCHER_OWNER") or f"{socket.gethostname()}:{os.getpid()}"
    watcher = ClusterWatcher(cluster, owner, remote=settings.WATCHER_SAMPLER_PROCESS, events_thread=True)
    watcher.load_previous()
    active = tuned = False
    sampling = threading.Event()
    threading.Thread(target=run_offsets, args=(watcher, stop, sampling), name=f"offsets-{cluster}", daemon=True).start()
    while not stop.is_set():
        started = time.monotonic()
        try:
            leased = store.acquire_lease(cluster, owner, lease_ttl)
        except Exception:  # noqa: BLE001 - Redis down: keep watching, nobody else can take over
            leased = True
        if leased:
            if not active:
                log.info("watching cluster %s as %s", cluster, owner)
                watcher.load_previous()
                active = True
                sampling.set()
            try:
                watcher.cycle()
                if not tuned:
                    tune_gc()
                    tuned = True
                settle_gc(time.monotonic() - started)
            except Exception:
                log.exception("watcher cycle for %s failed", cluster)
        elif active:
            log.info("another watcher holds the lease of %s; standing by", cluster)
            active = False
            sampling.clear()
        delay = cycle_delay(time.monotonic() - started, active and watcher.metadata_moved)
        if active:  # a change made through the console (store.note_change) wakes the watcher at once
            store.wait_for_nudge(cluster, "metadata", delay)
        else:
            stop.wait(delay)


def run(stop: threading.Event) -> None:
    threads = [
        threading.Thread(target=run_cluster, args=(c.name, stop), name=f"watch-{c.name}", daemon=True)
        for c in gateway.cluster_configs()
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
