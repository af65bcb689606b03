"""console.watcher.publisher: the thread that writes a watcher's events (Publisher with `background`).

The event store and the Channels layer are stand-ins: what is checked is the writer's order, its
batching, its keeping of refused rows, and its flush and close."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from console import realtime
from console.snapshots.model import Snapshot
from console.watcher import publisher as publisher_module
from console.watcher import registry
from console.watcher.diff import Change
from console.watcher.publisher import Publisher


class Store:
    """Saves rows in memory, numbering them; can hold a save back, or refuse it."""

    def __init__(self) -> None:
        self.saves: list[list[str]] = []  # each save's messages
        self.threads: list[str] = []
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()
        self.refuse = 0
        self.ids = 0

    def save(self, rows: list[Any]) -> list[dict[str, Any]]:
        self.entered.set()
        assert self.gate.wait(10)
        self.threads.append(threading.current_thread().name)
        if self.refuse:
            self.refuse -= 1
            raise RuntimeError("database is down")
        self.saves.append([r.message for r in rows])
        out = []
        for r in rows:
            self.ids += 1
            out.append({"id": self.ids, "message": r.message})
        return out


class Layer:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        self.sent.append(message)


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> tuple[Store, Layer]:
    saved, layer = Store(), Layer()
    monkeypatch.setattr(registry, "_events", saved)
    monkeypatch.setattr(realtime, "get_channel_layer", lambda: layer)
    return saved, layer


def changes(*messages: str) -> list[Change]:
    return [Change("leader_change", "warning", m, topic="t", partition=0) for m in messages]


SNAP = Snapshot(cluster="w", checked_at=1_800_000_000.0, reachable=True)


def writing(saved: Store, *first: str) -> Publisher:
    """A publisher with its writer thread, held inside the save of `first` (the database is slow)."""
    p = Publisher("w", background=True)
    saved.gate.clear()
    p.record_later(SNAP, changes(*first))  # returns at once
    assert saved.entered.wait(5)
    return p


def test_a_cycle_hands_its_events_over_and_the_writer_saves_then_announces_them_in_order(store: tuple[Store, Layer]) -> None:
    saved, layer = store
    p = writing(saved, "a", "b")
    assert not p.flush(0.2)  # still writing
    assert layer.sent == []
    saved.gate.set()
    assert p.flush(5)
    assert saved.saves == [["a", "b"]] and saved.threads == ["events-w"]
    assert [m["type"] for m in layer.sent] == ["events.added"]
    assert [e["message"] for e in layer.sent[0]["events"]] == ["a", "b"]
    p.close()


def test_events_that_piled_up_while_the_writer_wrote_go_in_one_save_in_their_order(store: tuple[Store, Layer]) -> None:
    saved, _layer = store
    p = writing(saved, "1")
    p.record_later(SNAP, changes("2", "3"))
    p.record_later(SNAP, [])  # (nothing to write: nothing handed over)
    p.record_later(SNAP, changes("4"))
    saved.gate.set()
    assert p.flush(5)
    assert saved.saves == [["1"], ["2", "3", "4"]]
    p.close()


def test_events_the_database_refuses_are_written_first_with_the_next(store: tuple[Store, Layer]) -> None:
    saved, layer = store
    p = Publisher("w", background=True)
    saved.refuse = 1
    p.record_later(SNAP, changes("lost?"))
    assert p.flush(5)
    assert saved.saves == [] and layer.sent == []
    p.record_later(SNAP, changes("next"))
    assert p.flush(5)
    assert saved.saves == [["lost?", "next"]]
    p.close()


def test_close_writes_what_the_writer_still_holds_and_ends_it(store: tuple[Store, Layer]) -> None:
    saved, _layer = store
    p = writing(saved, "x")
    p.record_later(SNAP, changes("y"))
    threading.Timer(0.2, saved.gate.set).start()
    p.close()
    assert saved.saves == [["x"], ["y"]]
    assert not any(t.name == "events-w" for t in threading.enumerate())
    assert p.writer_cpu_seconds >= 0.0
    # A cycle that ends after the close (a stop racing it) writes its events itself.
    late = threading.Thread(target=p.record_later, args=(SNAP, changes("late")), name="last-cycle")
    late.start()
    late.join(10)
    assert saved.saves == [["x"], ["y"], ["late"]] and saved.threads[-1] == "last-cycle"


def test_without_the_writer_a_cycles_events_are_written_in_the_cycle(store: tuple[Store, Layer]) -> None:
    saved, layer = store
    p = Publisher("w")
    # (in a thread of its own, as a watcher's cycle runs: the suite's main thread may hold
    # Playwright's event loop, where a broadcast cannot be made synchronously)
    cycle = threading.Thread(target=p.record_later, args=(SNAP, changes("now")), name="cycle")
    cycle.start()
    cycle.join(10)
    assert saved.saves == [["now"]] and saved.threads == ["cycle"]
    assert [m["type"] for m in layer.sent] == ["events.added"]
    assert p.flush(0.01)
    p.close()


def test_the_writer_thread_runs_below_the_cycles_priority(store: tuple[Store, Layer]) -> None:
    """Linux keeps a nice value per thread: the events thread's is WRITER_NICENESS above the
    process's, so on a busy host the metadata cycle goes first (as with the sampling process)."""
    import os

    saved, _layer = store
    p = writing(saved, "a")
    writer = p._writer
    assert writer is not None and writer.native_id is not None
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    assert os.getpriority(os.PRIO_PROCESS, writer.native_id) == min(19, mine + publisher_module.WRITER_NICENESS)
    assert os.getpriority(os.PRIO_PROCESS, 0) == mine  # (this thread's is unchanged)
    saved.gate.set()
    assert p.flush(5)
    p.close()


def test_the_events_kept_for_the_next_update_are_the_newest_it_carries(store: tuple[Store, Layer],
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """While Redis refuses saves no update goes out: the events saved meanwhile (the sampling
    process's) wait for the next one. Only the newest PENDING_KEPT wait, what an update carries,
    not every event of the outage (all are in the database, the events page shows them)."""
    _saved, layer = store
    monkeypatch.setattr(publisher_module.store, "save", lambda *args: None)
    p = Publisher("w")
    for start in range(0, 1000, 100):  # (ten passes' events during an outage)
        p.queue([{"id": i} for i in range(start, start + 100)])
    update = threading.Thread(target=p.publish, args=(SNAP, None, [], True, None), name="cycle")
    update.start()
    update.join(10)
    sent = [m for m in layer.sent if m["type"] == "cluster.update"]
    assert [e["id"] for e in sent[-1]["events"]] == list(range(1000 - publisher_module.PENDING_KEPT, 1000))
    update = threading.Thread(target=p.publish, args=(SNAP, None, [], True, None), name="cycle")
    update.start()
    update.join(10)
    assert [m for m in layer.sent if m["type"] == "cluster.update"][-1]["events"] == []  # (sent: not again)
    p.close()
