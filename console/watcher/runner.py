"""The watcher's runner: one thread per cluster holding a Redis lease (one active watcher per
cluster, others stand by), each running the metadata cycle, with a second thread sampling offsets
and groups; both woken at once by a change made through the console.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time

from django.conf import settings

from console import gateway
from console.snapshots import changes, store
from console.watcher import registry
from console.watcher.loop import ClusterWatcher
from console.watcher.memory import settle_gc, tune_gc

log = logging.getLogger(__name__)


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
            changes.wait_for_nudge(watcher.cluster, "samples", delay)
        else:
            stop.wait(delay)


def cycle_delay(elapsed: float, metadata_moved: bool) -> float:
    """The rest before the next metadata cycle: WATCHER_METADATA_INTERVAL from the last one's
    start, or WATCHER_BUSY_INTERVAL after a cycle whose metadata moved (more moves tend to follow).
    A cycle that outlasts the interval still rests WATCHER_CYCLE_REST of its own time, so the
    watcher never takes a whole core from the brokers and the web."""
    interval = settings.WATCHER_METADATA_INTERVAL
    if metadata_moved:
        interval = min(interval, settings.WATCHER_BUSY_INTERVAL)
    return max(0.05, settings.WATCHER_CYCLE_REST * elapsed, interval - elapsed)


def run_cluster(cluster: str, stop: threading.Event, lease_ttl: float = 10.0) -> None:
    # Under `manage.py watch` the supervising process's name: a watcher it restarts takes its lease back at once.
    owner = settings.WATCHER_OWNER or f"{socket.gethostname()}:{os.getpid()}"
    watcher = ClusterWatcher(cluster, owner, remote=settings.WATCHER_SAMPLER_PROCESS, events_thread=True)
    watcher.load_previous()
    active = tuned = False
    sampling = threading.Event()
    threading.Thread(target=run_offsets, args=(watcher, stop, sampling), name=f"offsets-{cluster}", daemon=True).start()
    for name, side in registry.side_watches().items():  # (what the apps watch beside the cluster: Kafka Connect)
        threading.Thread(target=side, args=(cluster, stop, sampling), name=f"{name}-{cluster}", daemon=True).start()
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
        if active:  # a change made through the console (changes.note_change) wakes the watcher at once
            changes.wait_for_nudge(cluster, "metadata", delay)
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
