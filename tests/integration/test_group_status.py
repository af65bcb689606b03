"""Lag status (Burrow's rules, ALGORITHMS.md 2) reached by real consumers on the test cluster, and the
group page's lag chart following the lag live.

The test stack samples offsets every second and each sample is one window entry; the window holds
10 entries and is only evaluated once full, so a status shows about 10-12 s after its cause.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from tests.conftest import OUTPUT, Stack, unique, wait_for

pytestmark = pytest.mark.cluster
API = "/api/v1/clusters/local/consumer-groups/"


def new_topic(stack: Stack, prefix: str) -> str:
    name = unique(prefix)
    stack.cluster.tool("kafka-topics", "--create", "--topic", name, "--partitions", "1", "--replication-factor", "1")
    return name


class SteadyProducer:
    """Writes `batch` messages every `period` seconds until closed: about 100 messages a second."""

    def __init__(self, stack: Stack, topic: str, batch: int = 10, period: float = 0.1) -> None:
        self.bootstrap = stack.cluster.bootstrap
        self.topic, self.batch, self.period = topic, batch, period
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5})  # gone with the thread
        while not self.stop.is_set():
            for _ in range(self.batch):
                producer.produce(self.topic, value=b"tick")
            producer.poll(0)
            self.stop.wait(self.period)
        producer.flush(10)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(15)


class SlowConsumer:
    """A group member that reads `per_commit` messages every `period` seconds and commits each time:
    it keeps committing, always moving forward, but far slower than SteadyProducer writes, so the
    lag grows between any two samples. close() leaves the group (no commit on the way out)."""

    def __init__(self, stack: Stack, group: str, topic: str, per_commit: int = 2, period: float = 0.3) -> None:
        self.consumer = Consumer({"bootstrap.servers": stack.cluster.bootstrap, "group.id": group,
                                  "client.id": f"{group}-slow", "auto.offset.reset": "earliest",
                                  "enable.auto.commit": False})
        self.consumer.subscribe([topic])
        self.per_commit, self.period = per_commit, period
        self.commits = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                started = time.monotonic()
                messages = [m for m in self.consumer.consume(num_messages=self.per_commit, timeout=self.period)
                            if m.error() is None]
                if messages:
                    self.consumer.commit(asynchronous=False)
                    self.commits += 1
                self.stop.wait(max(0.0, self.period - (time.monotonic() - started)))
        finally:
            self.consumer.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(15)
        assert not self.thread.is_alive(), "the consumer did not leave the group"


def detail(stack: Stack, group: str) -> dict[str, Any] | None:
    r = stack.get(API + group + "/")
    return r.json() if r.status_code == 200 else None


def statuses(d: dict[str, Any] | None) -> tuple[str | None, list[str | None]]:
    """(group status, partition statuses) of an API answer."""
    if d is None:
        return None, []
    return d["status"], [p["status"] for p in d["partitions"]]


def wait_for_status(stack: Stack, group: str, group_status: str, partition_status: str, timeout: float) -> dict[str, Any]:
    """Poll the REST API until the group reports `group_status` and its one partition `partition_status`
    in the same answer; on timeout the failure lists every distinct status seen, in order."""
    seen: list[tuple[float, str | None, list[str | None]]] = []
    started = time.monotonic()

    def reached() -> dict[str, Any] | None:
        d = detail(stack, group)
        g, ps = statuses(d)
        if not seen or (seen[-1][1], seen[-1][2]) != (g, ps):
            seen.append((round(time.monotonic() - started, 1), g, ps))
        return d if g == group_status and ps == [partition_status] else None

    try:
        result: dict[str, Any] = wait_for(reached, timeout, interval=0.3,
                                          what=f"group {group} in {group_status} with its partition in {partition_status}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; (seconds, group status, partition statuses) seen: {seen}") from None
    return result


def lagging_group(stack: Stack, prefix: str) -> tuple[str, str, SteadyProducer, SlowConsumer]:
    """A group that commits steadily but falls further behind at every sample, seen in WARN."""
    topic = new_topic(stack, f"{prefix}-topic")
    group = unique(prefix)
    producer = SteadyProducer(stack, topic)
    consumer = SlowConsumer(stack, group, topic)
    try:
        wait_for_status(stack, group, "WARN", "WARN", 45)
    except BaseException:
        consumer.close()
        producer.close()
        raise
    return group, topic, producer, consumer


def test_a_consumer_slower_than_its_producer_is_warn(stack: Stack) -> None:
    group, _, producer, consumer = lagging_group(stack, "st-warn")
    try:
        # Still WARN a few refreshes later, and the lag really grew while it committed.
        first = detail(stack, group)
        assert first is not None
        time.sleep(3)
        later = detail(stack, group)
        assert statuses(later) == ("WARN", ["WARN"])
        assert later is not None and later["total_lag"] > first["total_lag"] > 0
        assert later["partitions"][0]["committed"] > first["partitions"][0]["committed"], "the consumer must keep committing"
        assert consumer.commits >= 20
    finally:
        consumer.close()
        producer.close()


def test_a_group_that_stops_committing_while_behind_is_stop(stack: Stack) -> None:
    group, _, producer, consumer = lagging_group(stack, "st-stop")
    try:
        consumer.close()  # from here nothing commits; the producer goes on
        wait_for_status(stack, group, "ERR", "STOP", 40)
    finally:
        producer.close()


def test_offsets_moved_back_and_left_there_is_rewind(stack: Stack) -> None:
    group, topic, producer, consumer = lagging_group(stack, "st-rewind")  # window full, committed offset moving forward
    try:
        consumer.close()
        before = detail(stack, group)
        assert before is not None
        committed = before["partitions"][0]["committed"]
        assert committed > 10

        def reset() -> bool:  # the coordinator may take a moment to see the group empty
            r = stack.api("operator").post(stack.base_url + API + group + "/offsets",
                                           json={"to": "offset", "offset": 0, "topics": [topic], "dry_run": False,
                                                 "confirm": group}, timeout=20)
            assert r.status_code in (200, 400), r.text
            return r.status_code == 200 and r.json()["offsets"][0]["new"] == 0

        wait_for(reset, 15, interval=0.5, what="the offset reset to 0 accepted")
        # The rewound entry stays in the 10-entry window for about 9 samples; STOP (evaluated first)
        # cannot fire before as long: the window spans at least ~8 s before the reset's commit.
        d = wait_for_status(stack, group, "ERR", "REWIND", 12)
        assert d["partitions"][0]["committed"] == 0
    finally:
        producer.close()


@pytest.mark.browser
def test_lag_chart_follows_new_messages_without_reload(stack: Stack, logged_in_page: Any) -> None:
    topic = new_topic(stack, "st-chart-topic")
    group = unique("st-chart")
    def produce(n: int) -> None:
        producer = Producer({"bootstrap.servers": stack.cluster.bootstrap})
        for i in range(n):
            producer.produce(topic, value=f"m{i}".encode())
        assert producer.flush(20) == 0

    produce(50)
    consumer = Consumer({"bootstrap.servers": stack.cluster.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "enable.partition.eof": False})
    consumer.subscribe([topic])
    got, deadline = 0, time.monotonic() + 30
    while got < 20 and time.monotonic() < deadline:
        got += sum(1 for m in consumer.consume(num_messages=20 - got, timeout=1) if m.error() is None)
    consumer.commit(asynchronous=False)
    consumer.close()
    assert got == 20
    wait_for(lambda: (detail(stack, group) or {}).get("total_lag") == 30, 30, what="the group with lag 30 in the API")

    page = logged_in_page
    page.goto(stack.base_url + f"/clusters/local/groups/{group}/")
    page.wait_for_selector("#live-state:text('live')")
    page.wait_for_selector("#lag-chart .main-svg", timeout=15_000)
    chart = """() => {
        const el = document.getElementById('lag-chart');
        if (!el || !el.data || !el.data.length) return null;
        const y = el.data[0].y;
        return {points: y.length, last: y[y.length - 1]};
    }"""
    # Polled from here: wait_for_function compiles its predicate with eval, which the page's CSP forbids.
    wait_for(lambda: (page.evaluate(chart) or {}).get("last") == 30, 15, what="the chart at lag 30")
    before = page.evaluate(chart)
    page.evaluate("window.__noReload = true")

    produce(200)  # lag 30 -> 230
    # (how fast is bench.browser_push's to say; here that it follows at all, on a host the suite loads)
    wait_for(lambda: (lambda c: bool(c) and c["last"] == 230 and c["points"] > before["points"])(page.evaluate(chart)), 30,
             what="the chart at lag 230 with more points")
    after = page.evaluate(chart)
    assert page.evaluate("window.__noReload") is True, "the page reloaded instead of updating live"
    assert after["points"] > before["points"] and after["last"] == 230, (before, after)
    page.wait_for_selector("#group-partitions td.text-warn:text('230')")
    page.locator("#lag-chart").scroll_into_view_if_needed()
    OUTPUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUTPUT / "group-lag-chart-live.png"), full_page=True)
