"""The last stable offset beside the high watermark on the topic and group pages and API, from the
partitions open transactions hold at the watcher's last look (transactions_app/stable.py); LSO = HW
elsewhere. A group committed at the LSO a transaction holds is flagged blocked by it, with its readable
lag (LSO - committed) beside its lag (HW - committed). The real cluster: tests/integration/test_transactions_lso.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from console import gateway, snapshots
from console.converters import encode_name
from console.gateway.transactions import ActiveProducer, Transaction
from console.snapshots.model import Snapshot
from consumers_app import views as group_views
from topics_app import views as topic_views
from transactions_app import stable, watch

ODD = "txn/<b>odd</b> 'q' 数据"
GROUP = "team/service"  # (tests/web/conftest.py's with_group: committed 5 on orders-0, whose end offset is 10)
GROUP_API, GROUP_PAGE = f"/api/v1/clusters/local/consumer-groups/{encode_name(GROUP)}/", f"/clusters/local/groups/{encode_name(GROUP)}/"


@pytest.fixture
def held(redis_server: str) -> Iterator[None]:
    """orders-0 held at LSO 5 by ODD's (hanging) transaction, with records up to 10 behind it."""
    snapshots.redis_client().delete(stable.key("local"))
    stable.save("local", [{"transactional_id": ODD, "hanging": True, "partitions": [
        {"topic": "orders", "partition": 0, "lso": 5, "high_watermark": 10, "txn_start_offset": 5}]}])
    yield
    snapshots.redis_client().delete(stable.key("local"))


@pytest.fixture
def nothing_held(redis_server: str) -> Iterator[None]:
    snapshots.redis_client().delete(stable.key("local"))
    yield


def test_the_topic_api_gives_each_partitions_lso_beside_its_high_watermark(client_as: Any, snapshot: Snapshot, held: None) -> None:
    for path in ("/api/v1/clusters/local/topics/orders/", "/api/v1/clusters/local/topics/orders/partitions/"):
        parts = client_as("viewer").get(path).json()["partitions"]
        assert [(p["end_offset"], p["last_stable_offset"], p["held_by"]) for p in parts] == [
            (10, 5, ODD), (20, 20, None), (None, None, None), (5, 5, None)], path


def test_the_topic_page_shows_the_lso_column_and_the_holder_as_text(client_as: Any, snapshot: Snapshot, held: None) -> None:
    html = client_as("viewer").get("/clusters/local/topics/orders/").content.decode()
    assert 'title="Last stable offset' in html and 'id="lso-note"' in html
    assert "txn/&lt;b&gt;odd&lt;/b&gt; &#x27;q&#x27; 数据" in html and "<b>odd</b>" not in html
    # the live fragment (pushed on each snapshot) draws it too
    fragment = topic_views.detail_fragment(snapshots.live("local"), {"topic": "orders"})["live-topic"]
    assert '<td class="num mono lso text-warn" title="Held by the open transaction of' in fragment


def test_the_group_api_gives_lso_readable_lag_and_the_transaction_blocking_it(client_as: Any, with_group: Snapshot,
                                                                             held: None) -> None:
    r = client_as("viewer").get(GROUP_API)
    assert r.status_code == 200, r.content
    body = r.json()
    (p,) = body["partitions"]
    assert (p["committed"], p["last_stable_offset"], p["end_offset"], p["lag"], p["lag_readable"], p["blocked_by"]) == (
        5, 5, 10, 5, 0, ODD)
    assert body["lag_readable"] == 0 and body["total_lag"] == 5
    assert body["blocked_by"] == [{"topic": "orders", "partition": 0, "transactional_id": ODD, "hanging": True,
                                   "last_stable_offset": 5, "high_watermark": 10}]


def test_the_group_page_says_what_the_two_lags_mean_and_names_the_blocking_transaction_as_text(
        client_as: Any, with_group: Snapshot, held: None) -> None:
    html = client_as("viewer").get(GROUP_PAGE).content.decode()
    assert "readable lag only up to the LSO, what a read_committed consumer can read" in html
    assert html.count('class="notice warn blocked-by"') == 1 and "(hanging)" in html
    assert "txn/&lt;b&gt;odd&lt;/b&gt; &#x27;q&#x27; 数据" in html and "<b>odd</b>" not in html
    assert ">blocked</span>" in html
    fragment = group_views.detail_fragment(snapshots.live("local"), {"group": GROUP})["live-group"]
    assert 'class="notice warn blocked-by"' in fragment


def test_a_group_past_the_lso_or_on_a_partition_no_transaction_holds_is_not_blocked(client_as: Any, with_group: Snapshot,
                                                                                  nothing_held: None) -> None:
    body = client_as("viewer").get(GROUP_API).json()
    (p,) = body["partitions"]
    assert (p["last_stable_offset"], p["lag_readable"], p["blocked_by"], body["blocked_by"]) == (10, 5, None, [])
    # held at 3, below the committed 5: the group read past it (read_uncommitted), nothing left it can read
    stable.save("local", [{"transactional_id": "other", "hanging": False, "partitions": [
        {"topic": "orders", "partition": 0, "lso": 3, "high_watermark": 10, "txn_start_offset": 3}]}])
    body = client_as("viewer").get(GROUP_API).json()
    assert (body["partitions"][0]["lag_readable"], body["blocked_by"]) == (0, [])
    html = client_as("viewer").get(GROUP_PAGE).content.decode()
    assert "blocked-by" not in html


class FakeKafka:
    """One open transaction on orders-0 (LSO 5, HW 10) and its abort."""

    def transactions(self) -> list[Transaction]:
        return [Transaction(ODD, "Ongoing", 9, 0, 60_000, int(time.time() * 1000) - 1_000_000, 1, (("orders", 0),))]

    def transaction(self, tid: str) -> Transaction | None:
        return next((t for t in self.transactions() if t.transactional_id == tid), None)

    def topics_exist(self, topics: Any) -> dict[str, bool]:
        return dict.fromkeys(topics, True)

    def stable_offsets(self, partitions: Any) -> dict[tuple[str, int], int]:
        return {("orders", 0): 5}

    def list_offsets(self, partitions: Any, which: str) -> dict[tuple[str, int], int]:
        return {("orders", 0): 10}

    def producers(self, partitions: Any) -> dict[tuple[str, int], list[ActiveProducer]]:
        return {("orders", 0): [ActiveProducer(9, 0, 3, 0, 0, 5)]}

    def abort_transaction(self, tid: str) -> list[tuple[str, int]]:
        return [("orders", 0)]


def test_the_watchers_look_keeps_the_held_partitions_and_an_abort_frees_them_at_once(
        client_as: Any, with_group: Snapshot, nothing_held: None, monkeypatch: pytest.MonkeyPatch, db: None) -> None:
    monkeypatch.setattr(gateway, "for_cluster", lambda name: FakeKafka())
    monkeypatch.setattr(watch.registry, "events", lambda: type("Events", (), {"save": staticmethod(lambda rows: [])})())
    watch.look("local", {})
    assert stable.held("local") == {("orders", 0): stable.Held(5, ODD, True)}
    assert client_as("viewer").get(GROUP_API).json()["blocked_by"][0]["transactional_id"] == ODD

    r = client_as("admin").post(f"/api/v1/clusters/local/transactions/{encode_name(ODD)}/abort/", {"confirm": ODD},
                                content_type="application/json")
    assert r.status_code == 200, r.content
    assert stable.held("local") == {}
    body = client_as("viewer").get(GROUP_API).json()
    assert (body["partitions"][0]["last_stable_offset"], body["blocked_by"]) == (10, [])


def test_the_header_links_the_transactions_page_active_on_it(client_as: Any, snapshot: Snapshot, nothing_held: None,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    html = client_as("viewer").get("/clusters/local/topics/").content.decode()
    assert '<a href="/clusters/local/transactions/" class="">Transactions</a>' in html
    monkeypatch.setattr(gateway, "for_cluster", lambda name: FakeKafka())
    html = client_as("viewer").get("/clusters/local/transactions/").content.decode()
    assert '<a href="/clusters/local/transactions/" class="active">Transactions</a>' in html
