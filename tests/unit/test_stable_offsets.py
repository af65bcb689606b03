"""The last stable offsets kept from the watcher's look at the transactions (transactions_app/stable.py):
which transaction holds a partition's LSO, and an LSO never shown above the high watermark."""

from __future__ import annotations

import pytest

from consumers_app import readable
from transactions_app import stable


def test_an_lso_read_before_a_newer_high_watermark_is_never_shown_above_it() -> None:
    assert stable.stable_offset(stable.Held(12, "t", False), 10) == 10
    assert stable.stable_offset(None, 10) == 10 and stable.stable_offset(stable.Held(3, None, False), None) is None


def test_only_the_transaction_beginning_at_the_lso_holds_it() -> None:
    rows = [{"transactional_id": "later", "hanging": False, "partitions": [
                {"topic": "t", "partition": 0, "lso": 4, "high_watermark": 9, "txn_start_offset": 6}]},
            {"transactional_id": "first", "hanging": True, "partitions": [
                {"topic": "t", "partition": 0, "lso": 4, "high_watermark": 9, "txn_start_offset": 4},
                {"topic": "t", "partition": 1, "lso": 7, "high_watermark": 7, "txn_start_offset": 7},
                {"topic": "gone", "partition": 0}]}]
    assert stable.held_partitions(rows) == {("t", 0): stable.Held(4, "first", True), ("t", 1): stable.Held(7, None, False)}


def test_a_group_at_the_held_lso_is_blocked_and_reads_nothing_more(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stable, "held", lambda cluster: {("t", 0): stable.Held(4, "tx", False), ("t", 1): stable.Held(7, "ty", True)})
    rows = [{"topic": "t", "partition": 0, "committed": 4, "end_offset": 9},  # at the LSO: blocked
            {"topic": "t", "partition": 1, "committed": 2, "end_offset": 9},  # before it: 5 readable still
            {"topic": "t", "partition": 2, "committed": 1, "end_offset": 3},  # no transaction: LSO = HW
            {"topic": "t", "partition": 3, "committed": None, "end_offset": None}]
    blocked = readable.add_stable_offsets("c", rows)
    assert [(r["last_stable_offset"], r["lag_readable"], r["blocked_by"]) for r in rows] == [
        (4, 0, "tx"), (7, 5, None), (3, 2, None), (None, None, None)]
    assert blocked == [{"topic": "t", "partition": 0, "transactional_id": "tx", "hanging": False, "last_stable_offset": 4,
                        "high_watermark": 9}]
