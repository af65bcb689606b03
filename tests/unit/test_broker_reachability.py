"""A broker whose port refuses the console's connections: the probe (gateway.reachability), the
watcher's tracking of it (watcher.reachability), the snapshot's `reachable`, its events and its
stored form."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from copy import deepcopy
from typing import Any

import orjson
import pytest

from console.gateway.reachability import ACCEPTED, REFUSED, TIMED_OUT, UNREACHED, UNRESOLVED, probe
from console.gateway.types import Broker
from console.snapshots.model import BrokerState, Snapshot
from console.snapshots.part_cache import content_parts
from console.watcher import reachability
from console.watcher.diff import CRITICAL, INFO, diff
from console.watcher.reachability import SILENT_PROBES, BrokerReachability, Prober

from ._build import snapshot


@pytest.fixture
def listening() -> Iterator[list[tuple[str, int]]]:
    """Three local ports that accept connections."""
    socks = []
    for _ in range(3):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        socks.append(s)
    yield [("127.0.0.1", s.getsockname()[1]) for s in socks]
    for s in socks:
        s.close()


def closed_port() -> tuple[str, int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return "127.0.0.1", s.getsockname()[1]


# The probe ---------------------------------------------------------------------------------------


def test_a_probe_tells_a_listening_port_from_a_refusing_one_and_a_name_that_does_not_resolve(listening: list[Any]) -> None:
    refusing = closed_port()
    found = probe([*listening, refusing, ("no-such-broker.invalid", 9092)], timeout=2.0)
    assert found == {**dict.fromkeys(listening, ACCEPTED), refusing: REFUSED, ("no-such-broker.invalid", 9092): UNRESOLVED}


def test_a_probe_of_a_name_refuses_only_when_every_address_of_it_refuses() -> None:
    # "localhost" is ::1 and 127.0.0.1 here: a port closed on both is refused, not timed out.
    port = closed_port()[1]
    assert probe([("localhost", port)], timeout=2.0) == {("localhost", port): REFUSED}


def test_a_probe_of_a_hundred_brokers_takes_one_round_not_a_hundred(listening: list[Any]) -> None:
    addresses = [closed_port() for _ in range(97)] + listening
    started = time.monotonic()
    found = probe(addresses, timeout=2.0)
    assert time.monotonic() - started < 1.0
    assert sum(v == REFUSED for v in found.values()) == len(set(addresses)) - 3
    assert all(found[a] == ACCEPTED for a in listening)


def test_a_probe_of_no_broker_answers_nothing() -> None:
    assert probe([]) == {}


# The watcher's tracking -----------------------------------------------------------------------------


class Ports:
    """What probing each address answers (ACCEPTED unless set), as gateway.probe_brokers would."""

    def __init__(self) -> None:
        self.answers: dict[tuple[str, int], str] = {}
        self.asked: list[frozenset[tuple[str, int]]] = []

    def __call__(self, addresses: Any) -> dict[tuple[str, int], str]:
        self.asked.append(frozenset(addresses))
        return {a: self.answers.get(a, ACCEPTED) for a in addresses}


BROKERS = (Broker(1, "h1", 9092, None), Broker(2, "h2", 9094, None), Broker(3, "h3", 9096, None))


def cycle(tracker: BrokerReachability, brokers: tuple[Broker, ...] = BROKERS) -> frozenset[int]:
    tracker.start()
    return tracker.take(brokers, wait=2.0)


def test_a_refusing_broker_is_unreachable_at_the_first_probe_and_reachable_again_at_the_first_accept() -> None:
    ports = Ports()
    tracker = BrokerReachability(ports)
    assert cycle(tracker) == frozenset()  # (the first cycle learns the addresses: nothing probed yet)
    assert ports.asked == []
    assert cycle(tracker) == frozenset()
    assert ports.asked == [frozenset({("h1", 9092), ("h2", 9094), ("h3", 9096)})]
    ports.answers[("h2", 9094)] = REFUSED
    assert cycle(tracker) == {2}
    assert cycle(tracker) == {2}
    del ports.answers[("h2", 9094)]
    assert cycle(tracker) == frozenset()


@pytest.mark.parametrize("silence", [TIMED_OUT, UNREACHED])
def test_a_broker_that_does_not_answer_is_unreachable_only_after_probes_in_a_row(silence: str) -> None:
    ports = Ports()
    tracker = BrokerReachability(ports)
    cycle(tracker)
    ports.answers[("h3", 9096)] = silence
    for _ in range(SILENT_PROBES - 1):
        assert cycle(tracker) == frozenset()  # one probe lost on a slow network marks nothing
    assert cycle(tracker) == {3}
    ports.answers.clear()
    assert cycle(tracker) == frozenset()
    ports.answers[("h3", 9096)] = silence
    assert cycle(tracker) == frozenset()  # (counted afresh after an answer)


def test_a_name_that_does_not_resolve_keeps_what_was_known() -> None:
    ports = Ports()
    tracker = BrokerReachability(ports)
    cycle(tracker)
    ports.answers[("h1", 9092)] = REFUSED
    assert cycle(tracker) == {1}
    ports.answers[("h1", 9092)] = UNRESOLVED
    assert cycle(tracker) == {1}


def test_a_broker_that_left_the_metadata_or_moved_to_another_address_starts_afresh() -> None:
    ports = Ports()
    tracker = BrokerReachability(ports)
    cycle(tracker)
    ports.answers[("h2", 9094)] = REFUSED
    assert cycle(tracker) == {2}
    assert cycle(tracker, BROKERS[:1] + BROKERS[2:]) == frozenset()  # fenced: Kafka lists it no more
    assert 2 not in tracker.take(BROKERS, wait=0.0)  # back: not unreachable until probed again
    moved = (BROKERS[0], Broker(2, "h2", 9098, None), BROKERS[2])
    cycle(tracker, moved)
    assert cycle(tracker, moved) == frozenset()  # its new port accepts


def test_a_probe_that_has_not_answered_in_time_leaves_the_last_answers() -> None:
    import threading

    release = threading.Event()
    answers = {("h1", 9092): REFUSED}

    def slow(addresses: Any) -> dict[tuple[str, int], str]:
        release.wait(10)
        return {a: answers.get(a, ACCEPTED) for a in addresses}

    tracker = BrokerReachability(slow)
    cycle(tracker)
    release.set()
    assert cycle(tracker) == {1}
    release.clear()
    answers.clear()
    tracker.start()
    assert tracker.take(BROKERS, wait=0.01) == {1}  # not come yet: as it was
    release.set()
    assert tracker.take(BROKERS, wait=2.0) == frozenset()


def test_a_probe_that_failed_is_no_answer_and_the_next_one_is_made(caplog: Any) -> None:
    calls: list[int] = []

    def flaky(addresses: Any) -> dict[tuple[str, int], str]:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("a bug")
        return dict.fromkeys(addresses, REFUSED)

    prober = Prober(flaky)
    assert prober.start([("h1", 9092)])
    assert prober.take(2.0) is None
    assert prober.start([("h1", 9092)])  # (not left out for ever)
    assert prober.take(2.0) == {("h1", 9092): REFUSED}
    assert "probing the brokers' ports failed" in caplog.text


def test_a_prober_asks_one_probe_at_a_time_and_its_idle_thread_ends_then_starts_again(monkeypatch: Any) -> None:
    import threading

    monkeypatch.setattr(reachability, "PROBER_IDLE", 0.2)
    release = threading.Event()

    def slow(addresses: Any) -> dict[tuple[str, int], str]:
        release.wait(10)
        return dict.fromkeys(addresses, ACCEPTED)

    prober = Prober(slow)
    assert prober.start([("h1", 9092)])
    assert not prober.start([("h1", 9092)])  # one out already
    release.set()
    assert prober.take(2.0) == {("h1", 9092): ACCEPTED}
    thread = prober._thread
    assert thread is not None
    thread.join(5)
    assert not thread.is_alive() and prober._thread is None
    assert prober.start([("h2", 9094)])
    assert prober.take(2.0) == {("h2", 9094): ACCEPTED}


# The watcher's poll ---------------------------------------------------------------------------------


def test_a_poll_marks_a_listed_broker_whose_port_refuses_unreachable_then_reachable_again(settings: Any) -> None:
    from console.watcher.loop import ClusterWatcher
    from tests.unit.test_watcher_poll import FakeGateway

    w = ClusterWatcher("local", "test")
    gw = FakeGateway()
    w.gateway = gw  # type: ignore[assignment]

    def step(now: float) -> Snapshot:
        w.previous = w.poll(now)
        return w.previous

    for now in (100.0, 101.0, 102.0):
        step(now)
    assert w.unchanged
    gw.ports[("h2", 9094)] = REFUSED
    snap = step(103.0)
    assert not w.unchanged  # (a reachability that changed is a new snapshot, even with the same metadata)
    assert {b.id: (b.up, b.reachable) for b in snap.brokers.values()} == {1: (True, True), 2: (True, False)}
    assert step(104.0).brokers[2].reachable is False and w.unchanged
    gw.ports.clear()
    snap = step(105.0)
    assert not w.unchanged and snap.brokers[2].reachable is True


# Events ---------------------------------------------------------------------------------------------


def later(old: Snapshot) -> Snapshot:
    new = deepcopy(old)
    new.taken_at = (old.taken_at or 0) + 1
    return new


def test_a_broker_refusing_the_console_makes_one_critical_event_distinct_from_down() -> None:
    old = snapshot()
    new = later(old)
    new.brokers[2].reachable = False
    (change,) = diff(old, new)
    assert (change.kind, change.severity, change.broker) == ("broker_unreachable", CRITICAL, 2)
    assert "kafka-2.example:9092" in change.message and "not fenced" in change.message
    assert diff(new, later(new)) == []  # still unreachable: nothing new


def test_a_broker_accepting_again_makes_an_info_event() -> None:
    old = snapshot()
    old.brokers[2].reachable = False
    new = later(old)
    new.brokers[2].reachable = True
    (change,) = diff(old, new)
    assert (change.kind, change.severity, change.broker) == ("broker_reachable", INFO, 2)


def test_an_unreachable_broker_then_fenced_makes_a_broker_down_event_and_no_reachable_one() -> None:
    old = snapshot()
    old.brokers[2].reachable = False
    new = later(old)
    new.brokers[2] = BrokerState(2, "kafka-2.example", 9092, None, up=False)  # (a broker down is not probed: True)
    assert [c.kind for c in diff(old, new)] == ["broker_down"]
    back = later(new)
    back.brokers[2].up = True
    assert [c.kind for c in diff(new, back)] == ["broker_up"]


# Rows, counts and the stored form ------------------------------------------------------------------------


def test_broker_rows_carry_reachable_and_counts_the_unreachable_brokers_that_are_up() -> None:
    snap = snapshot()
    snap.brokers[2].reachable = False
    snap.brokers[3].up = False
    assert {r["id"]: (r["up"], r["reachable"]) for r in snap.broker_rows()} == {1: (True, True), 2: (True, False), 3: (False, True)}
    assert snap.counts()["brokers_unreachable"] == 1


def test_reachable_survives_the_stored_parts_and_the_full_json() -> None:
    snap = snapshot()
    snap.brokers[2].reachable = False
    header, parts = content_parts(snap)
    read = Snapshot.from_parts(header, {})
    assert {b.id: b.reachable for b in read.brokers.values()} == {1: True, 2: False, 3: True}
    assert Snapshot.from_json(snap.to_json()).brokers[2].reachable is False


def test_a_snapshot_stored_before_reachable_existed_reads_every_broker_as_reachable() -> None:
    header, _ = content_parts(snapshot())
    data = orjson.loads(header)
    for b in data["brokers"].values():
        del b["reachable"]
    read = Snapshot.from_parts(orjson.dumps(data), {})
    assert all(b.reachable for b in read.brokers.values()) and len(read.brokers) == 3
