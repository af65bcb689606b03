"""A page's read of the snapshot asks Redis once: the stamp and the changes it waits for come in one
round trip (console/snapshots/loader.py `load_with`), and a change noted still holds the read."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis.connection

from console import snapshots
from console.snapshots import changes


@pytest.fixture
def round_trips(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    sent = [0]
    original = redis.connection.AbstractConnection.send_packed_command

    def counted(self: Any, command: Any, check_health: bool = True) -> None:
        sent[0] += 1
        original(self, command, check_health)

    monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command", counted)
    return sent


def test_a_pages_snapshot_read_is_one_round_trip_to_redis(snapshot: object, round_trips: list[int]) -> None:
    snapshots.live("local")  # (the version parsed once)
    round_trips[0] = 0

    live = snapshots.live("local")

    assert live.snapshot is not None and live.store_error is None
    assert round_trips[0] == 1


def test_a_read_still_waits_for_a_change_noted_until_the_wait_ends(snapshot: object, settings: Any) -> None:
    settings.READ_YOUR_WRITES_WAIT = 0.3
    changes.note_change("local", {"topic:not-there-yet": 3})

    assert snapshots.noted("local", "topic:not-there-yet") == 3
    started = time.monotonic()
    live = snapshots.live("local")  # (the snapshot never shows it: the read gives up after the wait)
    assert time.monotonic() - started >= 0.2
    assert live.snapshot is not None and "not-there-yet" not in live.snapshot.topics
