"""Scans over a large topic end when asked: Stop and a closed page within a second (websocket, the
real ASGI app), and HTTP scans at their time budget, resuming exactly where they stopped."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from confluent_kafka import Producer
from django.contrib.auth.models import User
from django.test import Client

from tests.conftest import Stack, unique, wait_for
from tests.support import Cluster, time_budget

# The socket tests run first (pytest-django puts transactional tests first), before any test has
# started the session's Redis through the stack: they ask for it themselves.
pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("redis_server")]

TOTAL = 500_000
PARTITIONS = 3
# Matches nothing: every message is read, and with target=any each becomes a record for the regex
# (no byte-level pre-filter), so a full scan takes several seconds.
NOTHING = {"start": "oldest", "regex": "^never-matches-[0-9]+x$", "target": "any", "limit": "50"}


def value(i: int) -> bytes:
    return b"m%07d|" % i + b"x" * 60


@pytest.fixture(scope="module")
def large_topic(kafka_cluster: Cluster) -> str:
    """TOTAL small messages; message i is in partition i % 3 and its value starts with m<i, 7 digits>|."""
    topic = unique("large")
    kafka_cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", str(PARTITIONS),
                       "--replication-factor", "1", "--config", "retention.ms=-1")
    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap, "acks": "1", "linger.ms": 50,
                         "batch.size": 1_000_000, "compression.type": "lz4", "queue.buffering.max.messages": 1_000_000})
    for i in range(TOTAL):
        producer.produce(topic, value=value(i), partition=i % PARTITIONS)
        if i % 50_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    return topic


@database_sync_to_async
def session_cookie() -> str:
    user = User.objects.create_user(f"scan-{time.monotonic_ns()}", password="x")
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


async def open_socket(topic: str) -> WebsocketCommunicator:
    """A message browser socket through the whole ASGI app: origin check, session login, routing."""
    from console.asgi import application

    headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1"), (b"cookie", (await session_cookie()).encode())]
    comm = WebsocketCommunicator(application, f"/ws/clusters/local/topics/{topic}/messages/", headers=headers)
    connected, code = await comm.connect()
    assert connected, code
    return comm


async def first_progress(comm: WebsocketCommunicator) -> dict[str, Any]:
    while True:
        msg = await comm.receive_json_from(timeout=10)
        assert msg["type"] == "progress", msg
        if msg["scanned"] > 0:
            return msg


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_stop_ends_a_scan_within_a_second_and_says_it_was_stopped(large_topic: str) -> None:
    comm = await open_socket(large_topic)
    await comm.send_json_to({"action": "scan", "id": 1, "params": NOTHING})
    started = time.monotonic()
    await first_progress(comm)  # reading has begun
    await asyncio.sleep(max(0.0, 0.5 - (time.monotonic() - started)))
    asked = time.monotonic()
    await comm.send_json_to({"action": "stop"})
    while True:
        msg = await comm.receive_json_from(timeout=5)
        if msg["type"] == "result":
            break
        assert msg["type"] == "progress" and msg["id"] == 1
    took = time.monotonic() - asked
    assert msg["id"] == 1 and msg["stopped"] is True and msg["count"] == 0
    assert 0 < msg["scanned"] < TOTAL
    assert "as asked" in msg["reason"]
    assert took < time_budget(1.0), f"the scan ended {took:.2f} s after Stop"
    # The socket is free for the next scan at once.
    await comm.send_json_to({"action": "scan", "id": 2, "params": {"start": "newest", "limit": "5"}})
    while (msg := await comm.receive_json_from(timeout=10))["type"] != "result":
        pass
    assert msg["id"] == 2 and msg["count"] == 5 and msg["stopped"] is False
    await comm.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_closing_the_page_mid_scan_frees_the_worker_within_a_second(large_topic: str, monkeypatch: Any) -> None:
    from topics_app import browse

    ended: list[float] = []
    real = browse.run_scan

    def recording(*args: Any, **kwargs: Any) -> Any:
        try:
            return real(*args, **kwargs)
        finally:
            ended.append(time.monotonic())  # in the worker thread, as it is given back

    monkeypatch.setattr(browse, "run_scan", recording)
    comm = await open_socket(large_topic)
    await comm.send_json_to({"action": "scan", "id": 1, "params": NOTHING})
    await first_progress(comm)
    await asyncio.sleep(0.5)
    closed = time.monotonic()
    await comm.disconnect()
    for _ in range(100):
        if ended:
            break
        await asyncio.sleep(0.05)
    assert ended, "the scan's thread still runs 5 s after the page closed"
    assert ended[0] - closed < time_budget(1.0), f"the scan's thread ran {ended[0] - closed:.2f} s after the page closed"


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_new_scan_replaces_a_running_one(large_topic: str) -> None:
    comm = await open_socket(large_topic)
    await comm.send_json_to({"action": "scan", "id": 1, "params": NOTHING})
    await first_progress(comm)
    asked = time.monotonic()
    await comm.send_json_to({"action": "scan", "id": 2, "params": {"start": "newest", "limit": "3"}})
    results = {}
    while 2 not in results:
        msg = await comm.receive_json_from(timeout=5)
        if msg["type"] == "result":
            results[msg["id"]] = msg
    assert time.monotonic() - asked < time_budget(1.5)
    assert results[1]["stopped"] is True
    assert results[2]["count"] == 3 and results[2]["stopped"] is False
    await comm.disconnect()


def test_http_scan_stops_at_its_time_budget_and_resumes_with_no_gap_and_no_duplicate(stack: Stack, large_topic: str) -> None:
    wait_for(lambda: stack.get(f"/api/v1/clusters/local/topics/{large_topic}/").status_code == 200, 15, what="topic in snapshot")
    url = f"/api/v1/clusters/local/topics/{large_topic}/messages/"
    every_thousandth = {"start": "oldest", "regex": r"^m\d{4}000\|", "target": "any", "limit": "1000", "time_budget_ms": "300"}
    seen: list[int] = []
    answers = []
    positions = None
    for _ in range(200):
        params = every_thousandth if positions is None else {**every_thousandth, "positions": positions}
        started = time.monotonic()
        r = stack.get(url, params=params, timeout=30)
        elapsed = time.monotonic() - started
        assert r.status_code == 200, r.text
        body = r.json()
        answers.append((body["budget_exhausted"], body["progress"]["scanned"], elapsed))
        seen += [int(row["value"][1:8]) for row in body["records"]]
        if not body["budget_exhausted"]:
            break
        assert "0.3 s" in body["progress"]["reason"] and body["direction"] == "forward"
        assert body["progress"]["scanned"] > 0
        assert elapsed < time_budget(3.0), answers  # 0.3 s of reading, plus connecting and the watermarks
        positions = body["next_positions"]
    assert answers[0][0] is True, "the first request should have hit its 0.3 s budget"
    assert len(answers) > 2, answers
    assert sum(scanned for _, scanned, _ in answers) == TOTAL  # every message read exactly once
    assert sorted(seen) == list(range(0, TOTAL, 1000))
    assert len(seen) == len(set(seen))


def test_time_budget_cannot_exceed_the_setting(stack: Stack, large_topic: str) -> None:
    r = stack.get(f"/api/v1/clusters/local/topics/{large_topic}/messages/", params={"time_budget_ms": "3600000"})
    assert r.status_code == 400 and "'time_budget_ms'" in r.json()["detail"]
