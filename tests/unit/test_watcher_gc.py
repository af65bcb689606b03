"""The watcher's collector after each cycle (console/watcher/memory.py settle_gc)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import pytest
from django.test import override_settings

from console.watcher import memory, runner


@dataclass
class Collector:
    """The interpreter's collector as the tests set it: its calls recorded, `frozen` objects, of
    which the next full collection finds `found` unreachable."""

    calls: list[str] = field(default_factory=list)
    frozen: int = 500_000
    found: int = 0


@pytest.fixture
def collector(monkeypatch: pytest.MonkeyPatch) -> Collector:
    seen = Collector()
    monkeypatch.setattr(memory.gc, "unfreeze", lambda: seen.calls.append("unfreeze"))

    def collect(*generation: int) -> int:
        seen.calls.append("collect")
        return seen.found

    monkeypatch.setattr(memory.gc, "collect", collect)
    monkeypatch.setattr(memory.gc, "freeze", lambda: seen.calls.append("freeze"))
    monkeypatch.setattr(memory.gc, "get_freeze_count", lambda: seen.frozen)
    monkeypatch.setattr(memory, "return_free_memory", lambda: None)
    monkeypatch.setattr(memory, "full_collections", memory.FullCollections())
    young = memory.YoungCollections()
    young.failures = memory.failures_seen()  # (the failures earlier tests made: none since, for this one)
    monkeypatch.setattr(memory, "young", young)
    return seen


def _due(by: float = 1.0) -> None:
    """The last full collection as long ago as its wait, and `by` seconds more."""
    memory.full_collections.last = time.monotonic() - memory.full_collections.wait - by


def test_the_full_collection_runs_after_a_cycle_that_leaves_room_for_it_or_once_overdue_by_its_wait_again(
        collector: Collector) -> None:
    calls = collector.calls
    full = ["unfreeze", "collect", "freeze"]
    with override_settings(WATCHER_METADATA_INTERVAL=1.0):
        _due()
        # 500,000 objects at 1.5 us each: 0.75 s expected; with a 0.5 s cycle, more than 0.9 of the interval
        memory.settle_gc(0.5)
        assert calls == ["freeze"]
        calls.clear()
        memory.settle_gc(0.1)
        assert calls == full
        calls.clear()
        memory.settle_gc(0.1)  # (done: not again before its wait)
        assert calls == ["freeze"]
        calls.clear()
        _due(by=memory.full_collections.wait)  # overdue by its whole wait again: even after a long cycle
        memory.settle_gc(5.0)
        assert calls == full
        calls.clear()
        _due()
        memory.settle_gc()  # (the sampling process's passes: no cycle to leave room)
        assert calls == full


def test_what_a_full_collection_took_per_object_decides_whether_the_next_fits(
        collector: Collector, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = collector.calls
    clock = [1000.0]
    monkeypatch.setattr(memory.time, "monotonic", lambda: clock[0])

    def slow_collect(*generation: int) -> int:  # 0.2 s for 500,000 objects: 0.4 us each
        calls.append("collect")
        clock[0] += 0.2
        return 0

    monkeypatch.setattr(memory.gc, "collect", slow_collect)
    with override_settings(WATCHER_METADATA_INTERVAL=1.0):
        _due()
        memory.settle_gc()
        assert memory.full_collections.seconds == pytest.approx(0.2)
        assert memory.full_collections.per_object == pytest.approx(0.4e-6)
        calls.clear()
        _due()
        collector.frozen = 1_000_000  # 0.4 s expected now: after a 0.6 s cycle it does not fit
        memory.settle_gc(0.6)
        assert calls == ["freeze"]
        memory.settle_gc(0.45)
        assert calls == ["freeze", "unfreeze", "collect", "freeze"]


def test_the_wait_doubles_while_a_full_collection_finds_next_to_nothing_and_comes_back_when_it_finds_garbage(
        collector: Collector) -> None:
    waits = []
    for found in (0, 10, memory.GARBAGE_FEW - 1, memory.GARBAGE_FEW, 0):
        collector.found = found
        _due()
        memory.settle_gc()
        waits.append(memory.full_collections.wait)
    first = memory.FULL_COLLECTION_INTERVAL
    assert waits == [2 * first, 4 * first, 8 * first, first, 2 * first]
    for _ in range(10):
        _due()
        memory.settle_gc()
    assert memory.full_collections.wait == memory.FULL_COLLECTION_LONGEST
    assert memory.full_collections.count == 15


def test_the_next_cycle_comes_sooner_after_one_whose_metadata_moved_and_never_takes_the_whole_core() -> None:
    with override_settings(WATCHER_METADATA_INTERVAL=1.0, WATCHER_BUSY_INTERVAL=0.5):
        assert runner.cycle_delay(0.1, False) == pytest.approx(0.9)
        assert runner.cycle_delay(0.1, True) == pytest.approx(0.4)
        assert runner.cycle_delay(0.48, True) == pytest.approx(0.05)  # (never less)
        # (a tenth of a cycle that outlasted the interval at least: WATCHER_CYCLE_REST)
        assert runner.cycle_delay(2.0, True) == pytest.approx(0.2) == runner.cycle_delay(2.0, False)
        assert runner.cycle_delay(0.9, False) == pytest.approx(0.1)
    with override_settings(WATCHER_METADATA_INTERVAL=1.0, WATCHER_BUSY_INTERVAL=0.5, WATCHER_CYCLE_REST=0.25):
        assert runner.cycle_delay(2.0, True) == pytest.approx(0.5) == runner.cycle_delay(2.0, False)
    with override_settings(WATCHER_METADATA_INTERVAL=0.3, WATCHER_BUSY_INTERVAL=0.5):  # (never slower than the interval)
        assert runner.cycle_delay(0.1, True) == pytest.approx(0.2) == runner.cycle_delay(0.1, False)


def test_after_a_failure_what_is_not_frozen_yet_is_collected_once_before_it_is(collector: Collector) -> None:
    """A cycle or pass in which something failed (a GatewayError or StoreUnavailable made, a Redis
    call whose failure is only logged) is followed by a collection of what is not frozen yet; the
    others are not (at 300,000 partitions that walk took 0.12 s a cycle); a full collection due
    then does both."""
    from console.gateway.errors import ClusterUnavailable
    from console.lifecycle import failure_seen
    from console.snapshots.store import StoreUnavailable

    calls = collector.calls
    memory.settle_gc(0.1)
    assert calls == ["freeze"]
    for fail in (lambda: ClusterUnavailable("the cluster is down"), lambda: StoreUnavailable("Redis is unreachable"), failure_seen):
        calls.clear()
        fail()
        memory.settle_gc(0.1)
        assert calls == ["collect", "freeze"]
        calls.clear()
        memory.settle_gc(0.1)  # (nothing failed since)
        assert calls == ["freeze"]
    calls.clear()
    failure_seen()
    _due()
    memory.settle_gc()
    assert calls == ["unfreeze", "collect", "freeze"]


def test_what_a_failed_redis_call_leaves_in_a_reference_cycle_is_freed_after_its_cycle_not_frozen(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """redis-py's connect keeps the error it raises in a local of a frame of that error's own
    traceback: a reference cycle, which holds its callers' frames and what they hold (a cycle's
    snapshot, the content it was saving). After a cycle in which that happened, settle_gc collects
    what is not frozen yet before it freezes it, so that is freed then and not kept until the next
    full collection (ten minutes or more apart): with Redis down, each cycle's snapshot was kept,
    and the watcher's process grew by 13 MB a second at 300,000 partitions."""
    import gc
    import socket
    import weakref

    import redis

    from console.snapshots.store import StoreUnavailable

    monkeypatch.setattr(memory, "return_free_memory", lambda: None)
    monkeypatch.setattr(memory, "full_collections", memory.FullCollections())  # (one just done: none due)
    with socket.socket() as s:  # (a port nothing listens on)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    down = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=1)

    class Content:
        pass

    def save(content: Content) -> None:  # (as console.snapshots.store's saves do)
        try:
            down.set("console:snapshot", b"{}")
        except redis.RedisError as exc:
            raise StoreUnavailable(f"Redis is unreachable ({exc})") from exc

    content = Content()
    held = weakref.ref(content)
    found = memory.young.found
    gc.collect()
    gc.disable()
    gc.freeze()  # (as after the last cycle)
    try:
        try:
            save(content)
        except StoreUnavailable:
            pass
        else:
            pytest.fail("a Redis that is not there took a write")
        del content
        assert held() is not None, "redis-py leaves no reference cycle any more: this test's premise is gone"
        memory.settle_gc(0.1)
        assert held() is None
        assert memory.young.found > found
    finally:
        gc.unfreeze()
        gc.enable()
