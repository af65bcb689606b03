"""Replica lag on a real cluster: one follower's broker SIGSTOPped while a producer writes to an RF 3
topic. Its lag (bytes behind the leader) grows on the API and the topic page (Playwright, light and
dark) from its last answer, then it leaves the ISR (kafka-topics --describe, the oracle); after
SIGCONT it catches up (lag 0) and rejoins the ISR.

The local cluster fences a silent broker after broker.session.timeout.ms (6 s), which drops it from
every ISR before replica.lag.time.max.ms (30 s): the ISR shrink seen here is the fence's.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
import redis

from tests.conftest import OUTPUT, PASSWORD, Stack, unique, wait_for
from tests.integration.oracle import topic_layout
from tests.support import REDIS_PORT, TEST_VAR, suite_cluster, time_budget

pytestmark = [pytest.mark.cluster, pytest.mark.browser]


def lag_of(stack: Stack, topic: str, broker: int) -> dict[str, Any]:
    rows = stack.get(f"/api/v1/clusters/local/topics/{topic}/partitions/").json()["partitions"][0]["replica_lag"]
    return next(r for r in rows if r["broker"] == broker)


def isr_by_oracle(stack: Stack, topic: str) -> list[int]:
    # (a short request timeout: a stopped broker still accepts connections, and the tool's default
    # would wait 30 s on it before asking another)
    config = TEST_VAR / "replica-lag-tool.properties"
    config.write_text("request.timeout.ms=3000\ndefault.api.timeout.ms=30000\n")
    out = stack.cluster.tool("kafka-topics", "--describe", "--topic", topic, "--command-config", str(config))
    return topic_layout(out)[0]["isr"]


@pytest.fixture
def writing(stack: Stack) -> Iterator[tuple[str, threading.Event]]:
    """An RF 3 topic of one partition, and a producer (acks=1: the leader alone) writing 2 KB records
    to it every 50 ms until the test ends."""
    from confluent_kafka import Producer

    topic = unique("replica-lag")
    stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "3")
    stop = threading.Event()
    producer = Producer({"bootstrap.servers": stack.cluster.bootstrap, "acks": 1, "linger.ms": 5})

    def write() -> None:
        while not stop.is_set():
            producer.produce(topic, b"x" * 2048)
            producer.poll(0)
            stop.wait(0.05)
        producer.flush(10)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    yield topic, stop
    stop.set()
    thread.join(15)


def screenshot_topic(browser: Any, stack: Stack, topic: str, victim: int, scheme: str) -> None:
    context = browser.new_context(viewport={"width": 1360, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    page.goto(stack.base_url + "/login/")
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/clusters/local/")
    page.goto(f"{stack.base_url}/clusters/local/topics/{topic}/")
    cell = page.locator(f"#partitions-table td.replica-lag [data-broker='{victim}']")
    wait_for(lambda: int(cell.get_attribute("data-bytes-behind") or 0) > 0, 20, interval=0.5,
             what="the topic page showing the stopped follower behind")
    assert "not answering since" in page.locator("#partitions-table td.replica-lag").inner_text()
    page.screenshot(path=str(OUTPUT / f"replica-lag-topic-{scheme}.png"), full_page=True)
    page.goto(f"{stack.base_url}/clusters/local/brokers/{victim}/")
    assert page.locator(f"#broker-lag-table tr[data-topic='{topic}']").count() == 1
    page.screenshot(path=str(OUTPUT / f"replica-lag-broker-{scheme}.png"), full_page=True)
    context.close()


def test_a_stopped_followers_lag_grows_then_it_leaves_the_isr_and_after_sigcont_catches_up(
        stack: Stack, browser: Any, writing: tuple[str, threading.Event]) -> None:
    topic, _stop = writing
    wait_for(lambda: len(isr_by_oracle(stack, topic)) == 3, 30, interval=1, what="the topic fully in sync")
    layout = stack.get(f"/api/v1/clusters/local/topics/{topic}/partitions/").json()["partitions"][0]
    quorum_leader = stack.get("/api/v1/clusters/local/").json()["quorum"]["leader_id"]
    victim = next(b for b in layout["replicas"] if b not in (layout["leader"], quorum_leader))  # (the metadata leader keeps running)
    wait_for(lambda: lag_of(stack, topic, victim)["bytes_behind"] is not None, 30, interval=0.5, what="the replicas' sizes read")
    pid = suite_cluster().start(victim)  # (start answers a running node's pid)
    stopped_at = time.time()
    os.kill(pid, signal.SIGSTOP)
    try:
        # (a follower of a busy topic is often a little behind as read: the stopped one is also marked silent)
        trail: list[Any] = []

        def silent_lag() -> dict[str, Any] | None:
            r = lag_of(stack, topic, victim)
            stats = json.loads(redis.Redis(port=REDIS_PORT).get("console:watcher:stats:local") or b"{}")
            trail.append((round(time.time() - stopped_at, 1), r["bytes_behind"], r["not_answering_since"],
                          stats.get("sampling_p50_seconds")))
            return r if r["bytes_behind"] and r["not_answering_since"] else None

        # (the sampling passes wait out the stopped broker's timeouts until Kafka fences it, and the
        # sizes are read once its clients let go of it: about a minute here, over two on a loaded host)
        try:
            first = wait_for(silent_lag, time_budget(120), interval=0.5, what="the stopped follower's lag on the API, marked not answering")
        except AssertionError as exc:
            raise AssertionError(f"{exc}: (seconds after the stop, bytes behind, not answering since, sampling p50) "
                                 f"{trail[::4]}") from None
        assert first["not_answering_since"] <= stopped_at
        seen: list[tuple[Any, Any]] = []

        def grown_lag() -> dict[str, Any] | None:
            r = lag_of(stack, topic, victim)
            seen.append((r["bytes_behind"], r["not_answering_since"]))
            return r if r["bytes_behind"] > first["bytes_behind"] else None

        try:
            grown = wait_for(grown_lag, time_budget(30), interval=0.5, what="its lag growing")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; first {first}, then {seen[-10:]}") from None
        wait_for(lambda: victim not in isr_by_oracle(stack, topic), time_budget(40), interval=1, what="kafka-topics showing it out of the ISR")
        # In that order: its lag has grown since its last answer, which came before the ISR dropped it.
        shrinks = wait_for(lambda: stack.get("/api/v1/clusters/local/events/",
                                             params={"topic": topic, "kind": "isr_shrink"}).json()["events"], 20,
                           what="the isr_shrink event")
        shrunk_at = min(datetime.fromisoformat(e["at"]).timestamp() for e in shrinks)
        assert grown["not_answering_since"] < shrunk_at
        assert not lag_of(stack, topic, victim)["in_isr"]
        broker_page = stack.get(f"/api/v1/clusters/local/brokers/{victim}/replica-lag/").json()
        assert broker_page["replicas"][0]["bytes_behind"] >= grown["bytes_behind"]
        for scheme in ("light", "dark"):
            screenshot_topic(browser, stack, topic, victim, scheme)
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_for(lambda: victim in isr_by_oracle(stack, topic), 60, interval=1, what="kafka-topics showing it back in the ISR")
    wait_for(lambda: (r := lag_of(stack, topic, victim))["bytes_behind"] is not None and r["bytes_behind"] < 64 * 1024
             and r["not_answering_since"] is None and r["in_isr"], 40, interval=0.5, what="its lag back to (near) 0")
