"""The collector and the C heap in a watcher's processes (the watcher's and its sampling
process's): what survives a cycle or a pass is frozen out of the collector's sight, full
collections run only when they fit, and free heap pages go back to the system.
"""

from __future__ import annotations

import gc
import logging
import time

from django.conf import settings

from console.lifecycle import failures_seen, return_free_memory

log = logging.getLogger(__name__)


def tune_gc() -> None:
    """Once the first snapshot is built: what exists then (settings, clients, the snapshot) is
    frozen, and young objects are collected less often, because a sampling pass allocates many
    short-lived objects and the default thresholds walked the whole heap again and again."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)


# The full collection (settle_gc): due this long after the last one at first; each one that finds
# fewer than GARBAGE_FEW objects to free doubles the wait (up to FULL_COLLECTION_LONGEST), one that
# finds more brings it back to FULL_COLLECTION_INTERVAL. Cyclic garbage frozen waits that long.
FULL_COLLECTION_INTERVAL = 600.0
FULL_COLLECTION_LONGEST = 6 * 3600.0
GARBAGE_FEW = 1000
# What a full collection is expected to take per object it walks, until one was measured (a little
# above the slowest seen, so that the first one is not run where it does not fit).
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

# How often the C heap's free pages go back to the system (lifecycle.return_free_memory walks the
# heap, so not more than once a second; less often let the process's peak grow).
TRIM_INTERVAL = 1.0
_last_trim = [0.0]


def settle_gc(cycle_seconds: float | None = None) -> None:
    """After each metadata cycle (`cycle_seconds`: how long it took) or sampling pass (None): what
    survived it is frozen, so the collector only ever walks what the next cycle allocates, never
    the large cluster state that outlives it. Frozen objects are still freed when their last
    reference goes; only garbage in reference cycles waits for the full collection run here.

    That collection walks every object, which on a large cluster takes long enough to delay a
    cycle: so it runs only after a cycle that leaves room for it in the interval (FIT_SHARE, at the
    last measured cost per object), or once overdue by its whole wait again, and less often while
    it finds next to nothing (FullCollections.wait)."""
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
        # After a cycle or pass in which something failed, what is not frozen yet is walked once
        # before it is: a failure's traceback holds the frames of its callers (the cycle's, the
        # save's) in a reference cycle, and frozen with the rest, a failure a cycle (Redis down)
        # kept every snapshot alive until the next full collection. Not after every cycle: the
        # walk costs a cycle a noticeable share of its time.
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
