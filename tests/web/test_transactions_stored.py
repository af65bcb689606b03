"""The transactions page and API read the watcher's stored listing (transactions_app/listing.py) and ask
Kafka only when none is stored; the listing's age is shown; an abort through the console shows in the
next answer before the watcher looks again; a topic's producers page and API. No Kafka: the gateway
is a stand-in (tests/web/test_transactions_api.py's FakeKafka)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.test import Client

from console import gateway, snapshots
from console.converters import encode_name
from console.gateway.errors import ClusterUnavailable, NotFound
from console.gateway.transactions import ActiveProducer
from console.snapshots.model import Snapshot
from tests.web.test_transactions_api import NOW_MS, ODD, FakeKafka
from transactions_app import listing, watch

ODD_TOPIC = "orders/<script>'q' 数据"


class TopicsKafka(FakeKafka):
    """FakeKafka with topic metadata: only the snapshot's `orders` exists; any other call, unanswered."""

    def __getattr__(self, name: str) -> Any:
        raise ClusterUnavailable("Cluster 'local' is not reachable (no Kafka in this test).")

    def topic_metadata(self, name: str) -> Any:
        raise NotFound(f"Topic '{name}' does not exist on cluster 'local'.")


@pytest.fixture
def kafka(monkeypatch: pytest.MonkeyPatch, snapshot: Snapshot, settings: Any) -> Iterator[TopicsKafka]:
    settings.TRANSACTION_HANGING_SECONDS = 10
    fake = TopicsKafka()
    monkeypatch.setattr(gateway, "for_cluster", lambda name: (gateway.cluster_config(name), fake)[1])
    monkeypatch.setattr(watch.registry, "events", lambda: type("Events", (), {"save": staticmethod(lambda rows: [])})())
    client = snapshots.redis_client()  # (kept: a test may put Redis out of reach)
    client.delete(listing.key("local"), listing.amended_key("local"))
    yield fake
    client.delete(listing.key("local"), listing.amended_key("local"))


def api(client: Client) -> dict[str, Any]:
    r = client.get("/api/v1/clusters/local/transactions/")
    assert r.status_code == 200, r.content
    body: dict[str, Any] = r.json()
    return body


def test_the_page_and_the_api_read_the_watchers_look_and_ask_kafka_nothing(client_as: Any, kafka: TopicsKafka) -> None:
    watch.look("local", {})
    assert kafka.listed == 1
    asked = api(client_as("viewer"))
    page = client_as("viewer").get("/clusters/local/transactions/").content.decode()
    assert kafka.listed == 1  # (neither asked Kafka)
    assert asked["source"] == "watcher" and asked["poll_interval"] == 15 and time.time() - asked["as_of"] < 5
    assert [(t["transactional_id"], t["hanging"]) for t in asked["transactions"]] == [
        ("c-timed-out", True), (ODD, True), ("a-quiet", False), ("d-deleted-topic", False), ("b-closed", False)]
    closed = asked["transactions"][4]  # (stored as a JSON line, sent as stored)
    assert closed == {"transactional_id": "b-closed", "state": "CompleteCommit", "producer_id": 8, "producer_epoch": 1,
                      "timeout_ms": 60_000, "start_ms": None, "age_seconds": None, "coordinator": 1, "partitions": [],
                      "hanging": False, "hanging_reason": None, "blocked_groups": []}
    assert asked["transactions"][1]["partitions"][0]["lso"] == 40
    assert "2 hanging transactions" in page and "txn/&lt;b&gt;odd&lt;/b&gt; 数据" in page
    assert 's ago): the watcher looks every 15 s.' in page


def test_the_age_of_the_listing_and_the_watchers_interval_are_shown(client_as: Any, kafka: TopicsKafka, settings: Any) -> None:
    as_of = time.time() - 42
    settings.TRANSACTION_POLL_INTERVAL = 2  # (the watcher's, stored with its look)
    listing.save("local", [], as_of)
    settings.TRANSACTION_POLL_INTERVAL = 15
    asked = api(client_as("viewer"))
    assert asked["as_of"] == pytest.approx(as_of) and asked["poll_interval"] == 2
    page = client_as("viewer").get("/clusters/local/transactions/").content.decode()
    assert "(42 s ago): the watcher looks every 2 s." in page or "(43 s ago): the watcher looks every 2 s." in page
    assert "No transactional ids on this cluster." in page and kafka.listed == 0
    assert 0 < snapshots.redis_client().ttl(listing.key("local")) <= listing.keep_seconds()  # (gone when the watcher stops)


def test_without_a_stored_listing_kafka_is_asked_as_before(client_as: Any, kafka: TopicsKafka) -> None:
    asked = api(client_as("viewer"))
    assert asked["source"] == "kafka" and len(asked["transactions"]) == 5 and kafka.listed == 1
    page = client_as("viewer").get("/clusters/local/transactions/").content.decode()
    assert "no listing of the watcher is stored" in page and kafka.listed == 2


@pytest.mark.parametrize("fault", ["redis down", "damaged entry"])
def test_a_redis_fault_falls_back_to_kafka_never_a_500(client_as: Any, kafka: TopicsKafka, monkeypatch: pytest.MonkeyPatch,
                                                       fault: str) -> None:
    watch.look("local", {})
    if fault == "damaged entry":
        snapshots.redis_client().hset(listing.key("local"), "head", b"{not json")
    else:
        def down() -> Any:
            raise redis.ConnectionError("Error 111 connecting to localhost:6379. Connection refused.")

        monkeypatch.setattr(listing.snapshots, "redis_client", down)
    asked = api(client_as("viewer"))
    assert asked["source"] == "kafka" and asked["transactions"][0]["transactional_id"] == "c-timed-out"


def test_an_abort_shows_in_the_next_answers_before_the_watcher_looks_again(client_as: Any, kafka: TopicsKafka, db: None) -> None:
    watch.look("local", {})
    admin = client_as("admin")
    r = admin.post("/clusters/local/transactions/", {"transactional_id": ODD, "confirm": ODD})
    assert r.status_code == 302, r.content
    assert kafka.aborted == [ODD] and kafka.listed == 1  # (the abort read the one id, not the list)
    asked = api(client_as("viewer"))
    assert asked["source"] == "watcher" and kafka.listed == 1
    rows = {t["transactional_id"]: t for t in asked["transactions"]}
    assert not rows[ODD]["hanging"] and rows[ODD]["partitions"][0]["lso"] == rows[ODD]["partitions"][0]["high_watermark"] == 70
    assert [t["transactional_id"] for t in asked["transactions"]][:2] == ["c-timed-out", "a-quiet"]  # (re-sorted)
    page = admin.get("/clusters/local/transactions/").content.decode()
    assert "<b>1 hanging transaction</b>" in page and page.count('name="confirm"') == 1
    # a look that started after the abort is believed again
    watch.look("local", {})
    assert listing.stored("local") is not None and kafka.listed == 2


def test_an_abort_refused_leaves_the_stored_listing_alone(client_as: Any, kafka: TopicsKafka, db: None) -> None:
    watch.look("local", {})
    r = client_as("admin").post(f"/api/v1/clusters/local/transactions/{encode_name('a-quiet')}/abort/",
                                json.dumps({"confirm": "a-quiet"}), content_type="application/json")
    assert r.status_code == 400 and "is not hanging" in r.json()["detail"]
    assert snapshots.redis_client().hgetall(listing.amended_key("local")) == {}


# A topic's producers -----------------------------------------------------------------------------------


def test_the_producers_of_each_partition_of_a_topic(client_as: Any, kafka: TopicsKafka) -> None:
    kafka.txns = []  # (nothing aborted: orders-1 keeps its open transaction's start offset)
    body = client_as("viewer").get("/api/v1/clusters/local/topics/orders/producers/").json()
    assert body["topic"] == "orders" and body["producers"] == 3 and body["in_transaction"] == 2
    assert [p["partition"] for p in body["partitions"]] == [0, 1, 2, 3] and body["partitions"][3]["producers"] == []
    assert body["partitions"][1]["producers"] == [{"producer_id": 9, "producer_epoch": 2, "last_sequence": 4,
                                                   "last_timestamp": NOW_MS, "coordinator_epoch": 0, "current_txn_start_offset": 40}]
    assert body["partitions"][2]["producers"][0]["current_txn_start_offset"] is None
    page = client_as("viewer").get("/clusters/local/topics/orders/producers/").content.decode()
    assert page.count("data-producer-id=") == 3 and "<b>3 producers</b> on 4 partitions" in page
    one = client_as("viewer").get("/clusters/local/topics/orders/producers/?partition=1").content.decode()
    assert one.count("data-producer-id=") == 1 and 'data-producer-id="9"' in one
    topic_page = client_as("viewer").get("/clusters/local/topics/orders/").content.decode()
    assert 'href="/clusters/local/topics/orders/producers/"' in topic_page


@pytest.mark.parametrize(("path", "status", "sentence"), [
    (f"topics/{encode_name(ODD_TOPIC)}/producers/", 404, "does not exist on cluster 'local'"),
    ("topics/no-such-topic/producers/", 404, "Topic 'no-such-topic' does not exist"),
])
def test_an_unknown_topic_is_a_404_sentence(client_as: Any, kafka: TopicsKafka, path: str, status: int, sentence: str) -> None:
    r = client_as("viewer").get("/api/v1/clusters/local/" + path)
    assert r.status_code == status and sentence in r.json()["detail"], r.content
    page = client_as("viewer").get("/clusters/local/" + path)
    assert page.status_code == status and "<script>" not in page.content.decode()


@pytest.mark.parametrize("partition", ["7", "-1", "x", "<script>"])
def test_a_partition_the_topic_lacks_is_a_400_sentence(client_as: Any, kafka: TopicsKafka, partition: str) -> None:
    r = client_as("viewer").get("/clusters/local/topics/orders/producers/", {"partition": partition})
    assert r.status_code == 400 and "has no partition" in r.content.decode() and "<script>" not in r.content.decode()


def test_a_leader_that_does_not_answer_is_a_sentence(client_as: Any, kafka: TopicsKafka, monkeypatch: pytest.MonkeyPatch) -> None:
    def fails(partitions: Any) -> dict[tuple[str, int], list[ActiveProducer]]:
        raise ClusterUnavailable("Cluster 'local' is not reachable.")

    monkeypatch.setattr(kafka, "producers", fails)
    r = client_as("viewer").get("/api/v1/clusters/local/topics/orders/producers/")
    assert r.status_code == 503 and "not reachable" in r.json()["detail"]


def test_a_partition_whose_leader_did_not_answer_is_named_and_the_others_shown(client_as: Any, kafka: TopicsKafka,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    kafka.txns = []
    answered = kafka.producers([])
    monkeypatch.setattr(kafka, "producers", lambda partitions: {**answered, ("orders", 2): None})
    body = client_as("viewer").get("/api/v1/clusters/local/topics/orders/producers/").json()
    assert body["unanswered"] == [2] and [p["answered"] for p in body["partitions"]] == [True, True, False, True]
    assert body["producers"] == 2 and body["partitions"][2]["producers"] == []
    page = client_as("viewer").get("/clusters/local/topics/orders/producers/").content.decode()
    assert page.count("data-producer-id=") == 2
    assert "The leader of partition 2 did not answer" in page and 'id="producers-unanswered"' in page
    whole = client_as("viewer").get("/clusters/local/topics/orders/producers/?partition=0").content.decode()
    assert 'id="producers-unanswered"' in whole  # (the warning stands whichever partition is shown)


def test_the_producers_page_draws_at_most_producer_rows(client_as: Any, kafka: TopicsKafka, monkeypatch: pytest.MonkeyPatch) -> None:
    from transactions_app import views

    monkeypatch.setattr(views, "PRODUCER_ROWS", 2)
    page = client_as("viewer").get("/clusters/local/topics/orders/producers/").content.decode()
    assert page.count("data-producer-id=") == 2 and "The first 2 of 3 rows" in page
