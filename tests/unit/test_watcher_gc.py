"""The watcher's collector after each cycle (console/watcher/runner.py settle_gc)."""

from __future__ import annotations

import time

import pytest
from django.test import override_settings

from console.watcher import runner


def test_the_full_collection_waits_for_a_cycle_that_left_half_the_interval_at_most_one_interval_more(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(runner.gc, "unfreeze", lambda: calls.append("unfreeze"))

    def collect(*generation: int) -> int:
        calls.append("collect")
        return 0

    monkeypatch.setattr(runner.gc, "collect", collect)
    monkeypatch.setattr(runner.gc, "freeze", lambda: calls.append("freeze"))
    monkeypatch.setattr(runner, "return_free_memory", lambda: None)
    monkeypatch.setattr(runner, "_last_full", [time.monotonic() - runner.FULL_COLLECTION_INTERVAL - 1])
    with override_settings(WATCHER_METADATA_INTERVAL=1.0):
        runner.settle_gc(0.9)  # due, but after a cycle that took most of the interval: not yet
        assert calls == ["freeze"]
        runner.settle_gc(0.3)
        assert calls == ["freeze", "unfreeze", "collect", "freeze"]
        calls.clear()
        runner.settle_gc(0.1)  # (done: not again before FULL_COLLECTION_INTERVAL)
        assert calls == ["freeze"]
        calls.clear()
        runner._last_full[0] = time.monotonic() - 2 * runner.FULL_COLLECTION_INTERVAL - 1
        runner.settle_gc(5.0)  # overdue by a whole interval more: even after a long cycle
        assert calls == ["unfreeze", "collect", "freeze"]
        calls.clear()
        runner._last_full[0] = time.monotonic() - runner.FULL_COLLECTION_INTERVAL - 1
        runner.settle_gc()  # (the sampling process's passes: no cycle to wait for)
        assert calls == ["unfreeze", "collect", "freeze"]
