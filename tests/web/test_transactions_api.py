"""The transactions API and page in-process, on a stand-in gateway: the hanging rule (open past its
timeout, or an LSO held with records behind it past TRANSACTION_HANGING_SECONDS), hanging ones first,
sentences for bad input, roles, odd ids as text. The real cluster: tests/integration/test_transactions.py."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

import pytest
from django.test import Client

from console import gateway, snapshots
from console.converters import encode_name
from console.gateway.transactions import ActiveProducer, Transaction
from console.models import AuditEntry
from console.snapshots.model import Snapshot
from transactions_app import listing

ODD = "txn/<b>odd</b> 数据"
NOW_MS = int(time.time() * 1000)  # (last timestamps only: ages are taken from the time each test starts)


class FakeKafka:
    def __init__(self) -> None:
        now = int(time.time() * 1000)
        self.aborted: list[str] = []
        self.listed = 0
        self.txns = [
            Transaction("a-quiet", "Ongoing", 7, 0, 60_000, now - 1_000, 1, (("orders", 0),)),
            Transaction("b-closed", "CompleteCommit", 8, 1, 60_000, -1, 1, ()),
            Transaction(ODD, "Ongoing", 9, 2, 60_000, now - 30_000, 2, (("orders", 1),)),
            Transaction("c-timed-out", "Ongoing", 10, 0, 10_000, now - 20_000, 3, (("orders", 2),)),
            Transaction("d-deleted-topic", "Ongoing", 11, 0, 60_000, now - 1_000, 3, (("gone", 0),)),
        ]

    def transactions(self) -> list[Transaction]:
        self.listed += 1
        return self.txns

    def transaction(self, tid: str) -> Transaction | None:
        return next((t for t in self.txns if t.transactional_id == tid), None)

    def _held(self, tp: tuple[str, int]) -> bool:  # (an aborted transaction holds its partitions no longer)
        return not any(tp in t.partitions for t in self.txns if t.transactional_id in self.aborted)

    def topics_exist(self, topics: Any) -> dict[str, bool]:
        return {t: t == "orders" for t in topics}

    def stable_offsets(self, partitions: Any) -> dict[tuple[str, int], int]:
        held = {("orders", 0): 5, ("orders", 1): 40, ("orders", 2): 90}
        return {tp: lso if self._held(tp) else self.list_offsets(partitions, "latest")[tp] for tp, lso in held.items()}

    def list_offsets(self, partitions: Any, which: str) -> dict[tuple[str, int], int]:
        return {("orders", 0): 9, ("orders", 1): 70, ("orders", 2): 90}

    def producers(self, partitions: Any) -> dict[tuple[str, int], list[ActiveProducer]]:
        found = {("orders", 0): [ActiveProducer(7, 0, 3, NOW_MS, 0, 5)], ("orders", 1): [ActiveProducer(9, 2, 4, NOW_MS, 0, 40)],
                 ("orders", 2): [ActiveProducer(10, 0, 1, NOW_MS, 0, -1)]}
        return {tp: [p if self._held(tp) else replace(p, txn_start_offset=-1) for p in ps] for tp, ps in found.items()}

    def abort_transaction(self, tid: str) -> list[tuple[str, int]]:
        self.aborted.append(tid)
        return [tp for t in self.txns if t.transactional_id == tid for tp in t.partitions]


@pytest.fixture
def kafka(monkeypatch: pytest.MonkeyPatch, snapshot: Snapshot, settings: Any) -> FakeKafka:
    settings.TRANSACTION_HANGING_SECONDS = 10
    fake = FakeKafka()
    monkeypatch.setattr(gateway, "for_cluster", lambda name: (gateway.cluster_config(name), fake)[1])
    snapshots.redis_client().delete(listing.key("local"), listing.amended_key("local"))  # (no watcher's listing)
    return fake


def abort(client: Client, tid: str, body: Any) -> Any:
    return client.post(f"/api/v1/clusters/local/transactions/{encode_name(tid)}/abort/", json.dumps(body),
                       content_type="application/json")


def test_hanging_ones_first_by_their_lso_or_their_timeout_then_open_then_closed(client_as: Any, kafka: FakeKafka) -> None:
    rows = client_as("viewer").get("/api/v1/clusters/local/transactions/").json()["transactions"]
    assert [(r["transactional_id"], r["hanging"]) for r in rows] == [
        ("c-timed-out", True), (ODD, True), ("a-quiet", False), ("d-deleted-topic", False), ("b-closed", False)]
    by_id = {r["transactional_id"]: r for r in rows}
    assert "longer than its timeout" in by_id["c-timed-out"]["hanging_reason"]
    assert "last stable offset" in by_id[ODD]["hanging_reason"]
    assert by_id[ODD]["partitions"] == [{"topic": "orders", "partition": 1, "lso": 40, "high_watermark": 70, "stuck": True,
                                         "txn_start_offset": 40, "producers": [
                                             {"producer_id": 9, "producer_epoch": 2, "last_sequence": 4, "last_timestamp": NOW_MS,
                                              "coordinator_epoch": 0, "current_txn_start_offset": 40}]}]
    assert by_id["a-quiet"]["partitions"][0]["stuck"] and not by_id["a-quiet"]["hanging"]  # (held 1 s: not yet)
    assert by_id["b-closed"]["partitions"] == [] and by_id["b-closed"]["start_ms"] is None
    assert by_id["d-deleted-topic"]["partitions"] == [{"topic": "gone", "partition": 0, "stuck": False}]  # (not asked)


@pytest.mark.parametrize(("tid", "body", "status", "sentence"), [
    (ODD, {"confirm": "something else"}, 400, f"Type the transactional id '{ODD}' in `confirm`"),
    (ODD, {}, 400, "confirm"),
    (ODD, {"confirm": 5}, 400, "confirm"),
    ("no-such-id", {"confirm": "no-such-id"}, 404, "Transactional id 'no-such-id' is not known"),
    ("a-quiet", {"confirm": "a-quiet"}, 400, "is not hanging"),
    ("b-closed", {"confirm": "b-closed"}, 400, "has no open transaction (state CompleteCommit)"),
])
def test_an_abort_refused_says_why_and_aborts_nothing(client_as: Any, kafka: FakeKafka, db: None, tid: str, body: Any,
                                                      status: int, sentence: str) -> None:
    r = abort(client_as("admin"), tid, body)
    assert r.status_code == status and sentence in json.dumps(r.json(), ensure_ascii=False), r.content
    assert kafka.aborted == []


def test_an_abort_is_for_admins_and_audited(client_as: Any, kafka: FakeKafka, db: None) -> None:
    assert abort(client_as("operator"), ODD, {"confirm": ODD}).status_code == 403
    r = abort(client_as("admin"), ODD, {"confirm": ODD})
    assert r.status_code == 200 and r.json()["aborted"] == [{"topic": "orders", "partition": 1}], r.content
    assert kafka.aborted == [ODD]
    entry = AuditEntry.objects.get(action="transaction_abort", target=ODD)
    assert entry.outcome == "ok" and entry.details["partitions"] == ["orders:1"]


def test_the_page_shows_odd_ids_as_text_and_the_abort_only_to_admins(client_as: Any, kafka: FakeKafka) -> None:
    page = client_as("viewer").get("/clusters/local/transactions/").content.decode()
    assert "txn/&lt;b&gt;odd&lt;/b&gt; 数据" in page and "<b>odd</b>" not in page
    assert "2 hanging transactions" in page and 'name="confirm"' not in page
    assert client_as("admin").get("/clusters/local/transactions/").content.decode().count('name="confirm"') == 2


def test_ten_thousand_ids_draw_one_page_of_rows_hanging_first_and_a_filter_finds_the_rest(client_as: Any, kafka: FakeKafka) -> None:
    from transactions_app.views import PAGE_ROWS

    kafka.txns = kafka.txns + [Transaction(f"app-{i:05d}", "CompleteCommit", 100 + i, 0, 60_000, -1, 1, ()) for i in range(10_000)]
    page = client_as("viewer").get("/clusters/local/transactions/").content.decode()
    assert page.count("data-transactional-id=") == PAGE_ROWS and "10005 of 10005 transactional ids" in page
    assert page.index('data-transactional-id="c-timed-out"') < page.index('data-transactional-id="app-00000"')
    found = client_as("viewer").get("/clusters/local/transactions/?q=app-09999").content.decode()
    assert found.count("data-transactional-id=") == 1 and "1 of 10005" in found


def test_a_hanging_transaction_names_the_groups_stopped_at_its_lso(client_as: Any, kafka: FakeKafka, with_group: Snapshot) -> None:
    # team/service committed 5 on orders-0 (the watcher's snapshot): the LSO a transaction holds there
    kafka.txns[0] = Transaction("a-quiet", "Ongoing", 7, 0, 60_000, int(time.time() * 1000) - 30_000, 1, (("orders", 0),))
    rows = {r["transactional_id"]: r for r in client_as("viewer").get("/api/v1/clusters/local/transactions/").json()["transactions"]}
    assert rows["a-quiet"]["hanging"] and rows["a-quiet"]["blocked_groups"] == ["team/service"]
    assert rows[ODD]["blocked_groups"] == []  # (orders-1: no group committed at its LSO 40)
