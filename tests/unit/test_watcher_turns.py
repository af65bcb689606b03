"""The watcher's metadata cycle first: its sampling thread takes a pass in by steps and gives way
to a cycle between them (console/watcher/turns.py)."""

from __future__ import annotations

import threading
import time

import pytest

from console.watcher import turns
from console.watcher.turns import CycleFirst


def _merging(first_turn: CycleFirst, order: list[str], started: threading.Event, steps: int = 2) -> threading.Thread:
    def run() -> None:
        with first_turn.merge():
            for i in range(1, steps + 1):
                order.append(f"step {i}")
                started.set()
                time.sleep(0.2)  # (a cycle asks for its turn meanwhile)
                order.append(f"step {i} done")
                first_turn.give_way()

    t = threading.Thread(target=run)
    t.start()
    return t


def test_a_cycle_asking_while_a_step_runs_runs_after_that_step_and_before_the_next() -> None:
    first_turn, started = CycleFirst(), threading.Event()
    order: list[str] = []
    t = _merging(first_turn, order, started)
    started.wait(5)
    with first_turn.cycle():
        order.append("cycle")
    t.join(5)
    assert order == ["step 1", "step 1 done", "cycle", "step 2", "step 2 done"]


def test_a_merge_waits_for_the_cycle_running() -> None:
    first_turn, started = CycleFirst(), threading.Event()
    order: list[str] = []
    with first_turn.cycle():
        t = _merging(first_turn, order, started, steps=1)
        time.sleep(0.2)
        order.append("cycle")
    t.join(5)
    assert order == ["cycle", "step 1", "step 1 done"]


def test_with_no_cycle_waiting_a_merge_goes_on_at_once_and_cycles_follow_each_other() -> None:
    first_turn = CycleFirst()
    with first_turn.merge():
        began = time.monotonic()
        for _ in range(1000):
            first_turn.give_way()
        assert time.monotonic() - began < 0.5
    for _ in range(3):
        with first_turn.cycle():
            pass


def test_a_side_that_never_gives_way_is_waited_for_only_so_long(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(turns, "WAIT_MAX_S", 0.2)
    first_turn = CycleFirst()
    with first_turn.merge():  # (a merge stuck in one step)
        began = time.monotonic()
        with first_turn.cycle():
            waited = time.monotonic() - began
    assert 0.15 < waited < 2.0
