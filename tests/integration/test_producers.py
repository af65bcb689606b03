"""A topic's producers on the test cluster, checked with Kafka's own `kafka-transactions describe-producers`
for every partition: an idempotent producer writes to each partition, a transactional one commits a
transaction over two of them and another leaves one open on the third. The console's API and page
(through Django's test client, in this process) list each partition's producers as the tool does; the
page in light and dark (screenshots under var/screenshots/), reached from the topic page."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from django.contrib.auth.models import User
from django.test import Client

from tests.integration.test_transactions_browser import SCREENSHOTS, browser  # noqa: F401 - `browser` is a fixture
from tests.support import Cluster, Stack, unique

pytestmark = [pytest.mark.cluster]
PASSWORD = "producers-browser-password"


def tool_producers(cluster: Cluster, topic: str, partition: int) -> dict[int, dict[str, str]]:
    out = cluster.tool("kafka-transactions", "describe-producers", "--topic", topic, "--partition", str(partition))
    lines = out.strip().splitlines()
    header = re.split(r"\s{2,}|\t", lines[0].strip())
    rows = [dict(zip(header, re.split(r"\s{2,}|\t", line.strip()), strict=False)) for line in lines[1:]]
    return {int(r["ProducerId"]): r for r in rows}


def as_tool_shows(p: dict[str, Any]) -> dict[str, str]:
    start = p["current_txn_start_offset"]
    return {"ProducerId": str(p["producer_id"]), "ProducerEpoch": str(p["producer_epoch"]),
            "LatestCoordinatorEpoch": str(p["coordinator_epoch"]), "LastSequence": str(p["last_sequence"]),
            "LastTimestamp": str(p["last_timestamp"] if p["last_timestamp"] is not None else -1),
            "CurrentTransactionStartOffset": "None" if start is None else str(start)}


@pytest.fixture(scope="module")
def topic(kafka_cluster: Cluster, redis_server: str) -> Iterator[str]:
    """Three partitions: an idempotent producer on each, a committed transaction on 0 and 1, an open one on 2."""
    name = unique("producers")
    kafka_cluster.tool("kafka-topics", "--create", "--topic", name, "--partitions", "3", "--replication-factor", "3")
    plain = Producer({"bootstrap.servers": kafka_cluster.bootstrap, "enable.idempotence": True})
    committed = Producer({"bootstrap.servers": kafka_cluster.bootstrap, "transactional.id": unique("committed")})
    left_open = Producer({"bootstrap.servers": kafka_cluster.bootstrap, "transactional.id": unique("open")})
    try:
        for p in range(3):
            plain.produce(name, value=b"idempotent", partition=p)
        assert plain.flush(30) == 0
        committed.init_transactions(30)
        committed.begin_transaction()
        for p in (0, 1):
            committed.produce(name, value=b"committed", partition=p)
        committed.commit_transaction(30)
        left_open.init_transactions(30)
        left_open.begin_transaction()
        left_open.produce(name, value=b"open", partition=2)
        assert left_open.flush(30) == 0
        yield name
    finally:
        left_open.abort_transaction(30)
        kafka_cluster.tool("kafka-topics", "--delete", "--topic", name)


@pytest.mark.django_db
def test_each_partitions_producers_equal_kafka_transactions_describe_producers(kafka_cluster: Cluster, topic: str) -> None:
    client = Client()
    client.force_login(User.objects.create_user("producers-viewer", password="pw-viewer-123"))
    r = client.get(f"/api/v1/clusters/local/topics/{topic}/producers/")
    assert r.status_code == 200, r.content
    body = r.json()
    assert [p["partition"] for p in body["partitions"]] == [0, 1, 2]
    assert (body["producers"], body["in_transaction"]) == (6, 1)
    for part in body["partitions"]:
        oracle = tool_producers(kafka_cluster, topic, part["partition"])
        assert {p["producer_id"]: as_tool_shows(p) for p in part["producers"]} == oracle, part
    page = client.get(f"/clusters/local/topics/{topic}/producers/").content.decode()
    assert page.count("data-producer-id=") == 6 and "<b>1</b> with an open transaction" in page


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_producers_page_in_light_and_dark(browser: Any, live_server: Any, stack: Stack, topic: str) -> None:  # noqa: F811
    User.objects.create_user("producers-browser", password=PASSWORD)
    for scheme in ("light", "dark"):
        context = browser.new_context(viewport={"width": 1360, "height": 900}, color_scheme=scheme)
        page = context.new_page()
        page.goto(live_server.url + "/login/")
        page.fill("input[name=username]", "producers-browser")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_load_state()
        page.goto(f"{live_server.url}/clusters/local/topics/{topic}/")
        page.click("a:text('Producers')")
        page.wait_for_load_state()
        assert page.locator("#producers-table tbody tr").count() == 6
        assert page.locator("#producers-summary").inner_text().startswith("6 producers on 3 partitions, 1 with an open transaction")
        page.screenshot(path=str(SCREENSHOTS / f"producers-{scheme}.png"), full_page=True)
        context.close()
