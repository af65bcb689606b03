"""The fault matrix: every function of the console answers correctly within 10 s of the cluster
settling after each event of a cluster's life, without restarting any console process.

Events: cold start (web and watcher up before the brokers, one broker registering late), SIGKILL
and restart of a broker, SIGKILL of the active controller, a preferred-leader election that moves
leaders, a topic deleted and re-created with the same name (by Kafka's own tool).
Functions: overview, topics list, topic detail, browse newest / by offset / by time, produce, the
groups list (every group `kafka-consumer-groups --list` shows), group lag (equal to `--describe`),
an offset reset dry run. Kafka's own tools are the oracle. A failure names the event and function.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from tests.conftest import Stack, unique, wait_for
from tests.integration.oracle import api_layout, quorum_status, topic_layout
from tests.support import TEST_VAR

pytestmark = pytest.mark.cluster
API = "/api/v1/clusters/local"
PARTITIONS = 6
GROUPS = 9  # enough that every broker coordinates some of them
MESSAGE_KEPT = 3000  # characters of a failed check's message kept (the overview's says the watcher's state and log)
SETTLED_WITHIN = 10.0  # seconds a function may take to answer correctly once the cluster has settled


class World:
    """The topic, its messages and the groups the matrix checks after every event."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.topic = unique("matrix")
        self.groups = [f"{self.topic}-g{i}" for i in range(GROUPS)]
        self.first_ts = 0

    def create_topic(self) -> None:
        self.stack.cluster.tool("kafka-topics", "--create", "--topic", self.topic, "--partitions", str(PARTITIONS),
                                "--replication-factor", "3", "--config", "min.insync.replicas=2")
        wait_for(lambda: self.layout_ok(), 60, what="the matrix topic fully replicated")

    def fill(self, per_partition: int = 20) -> None:
        producer = Producer({"bootstrap.servers": self.stack.cluster.bootstrap, "acks": "all", "enable.idempotence": True})
        self.first_ts = int(time.time() * 1000)
        for p in range(PARTITIONS):
            for i in range(per_partition):
                producer.produce(self.topic, value=f"v{i}".encode(), key=f"k{p}-{i}".encode(), partition=p)
        assert producer.flush(60) == 0
        for i, group in enumerate(self.groups):
            consumer = Consumer({"bootstrap.servers": self.stack.cluster.bootstrap, "group.id": group, "client.id": group,
                                 "auto.offset.reset": "earliest", "enable.auto.commit": False})
            consumer.subscribe([self.topic])
            want, got, deadline = 10 + i, 0, time.monotonic() + 30
            while got < want and time.monotonic() < deadline:
                got += sum(1 for m in consumer.consume(num_messages=want - got, timeout=1) if m.error() is None)
            consumer.commit(asynchronous=False)
            consumer.close()

    def tool(self, name: str, *args: str) -> str:
        return self.stack.cluster.tool(name, *args)

    def layout_ok(self) -> bool:
        layout = topic_layout(self.tool("kafka-topics", "--describe", "--topic", self.topic))
        return len(layout) == PARTITIONS and all(len(p["isr"]) == 3 and p["leader"] is not None for p in layout.values())

    def broker_ids(self) -> list[int]:
        """The brokers Kafka's own tool reaches (the session's cluster may have gained a 4th node)."""
        out = self.tool("kafka-broker-api-versions")
        return sorted(int(m) for m in re.findall(r"\(id: (\d+)", out))

    def settled(self) -> bool:
        """Every broker registered (nodes 1-3 at least), the quorum has a leader, the topic has full ISRs."""
        status = quorum_status(self.tool("kafka-metadata-quorum", "describe", "--status"))
        return status["leader_id"] >= 0 and {1, 2, 3} <= set(self.broker_ids()) and self.layout_ok()


def get(stack: Stack, path: str, **params: Any) -> Any:
    r = stack.api("operator").get(stack.base_url + API + path, params=params or None, timeout=15)
    assert r.status_code == 200, f"{path}: {r.status_code} {r.text[:300]}"
    return r.json()


def check_overview(w: World) -> None:
    body = get(w.stack, "/")
    leader = quorum_status(w.tool("kafka-metadata-quorum", "describe", "--status"))["leader_id"]
    up = sorted(b["id"] for b in body["brokers"] if b["up"])
    assert body["status"]["reachable"] and up == w.broker_ids(), (up, w.broker_ids(), body["status"], watcher_stats(w))
    assert body["quorum"]["leader_id"] == leader, (body["quorum"]["leader_id"], leader)


def watcher_stats(w: World) -> dict[str, Any]:
    """What the watcher says of its last cycles (said with a failure: a stale view or a slow watcher)."""
    r = w.stack.api("operator").get(w.stack.base_url + "/healthz", timeout=15)
    log = TEST_VAR / "logs" / "watcher.log"
    tail = [line for line in log.read_text(errors="replace").splitlines() if line[:2] == "20"][-8:] if log.exists() else []
    return {"healthz": r.text[:600], "now": time.time(), "watcher log": tail}


def check_topics_list(w: World) -> None:
    rows = get(w.stack, "/topics/", q=w.topic)["results"]
    assert [(r["name"], r["partitions"]) for r in rows] == [(w.topic, PARTITIONS)], rows


def check_topic_detail(w: World) -> None:
    expected = topic_layout(w.tool("kafka-topics", "--describe", "--topic", w.topic))
    ours = api_layout(get(w.stack, f"/topics/{w.topic}/partitions/")["partitions"])
    assert ours == expected, (ours, expected)


def end_offsets(w: World) -> dict[int, int]:
    out = w.tool("kafka-get-offsets", "--topic", w.topic, "--time", "-1")
    return {int(line.split(":")[1]): int(line.split(":")[2]) for line in out.split() if line.count(":") == 2}


def check_browse_newest(w: World) -> None:
    ends = end_offsets(w)
    assert sorted(ends) == list(range(PARTITIONS)), ends
    for p, end in ends.items():  # every partition, so every leader is asked
        body = get(w.stack, f"/topics/{w.topic}/messages/", start="newest", partitions=str(p), limit=3)
        records = body["records"]
        assert [(r["partition"], r["offset"]) for r in records] == [(p, o) for o in range(end - 1, end - 4, -1)], \
            (records, body["progress"])


def check_browse_offset(w: World) -> None:
    records = get(w.stack, f"/topics/{w.topic}/messages/", start="offset", partitions="3", offset=5, limit=3)["records"]
    assert [(r["partition"], r["offset"], r["key"]) for r in records] == [(3, 5, "k3-5"), (3, 6, "k3-6"), (3, 7, "k3-7")]


def check_browse_time(w: World) -> None:
    records = get(w.stack, f"/topics/{w.topic}/messages/", start="timestamp", timestamp=w.first_ts, partitions="1", limit=1)["records"]
    assert records and records[0]["partition"] == 1 and records[0]["offset"] == 0, records


def check_produce(w: World) -> None:
    r = w.stack.api("operator").post(w.stack.base_url + API + f"/topics/{w.topic}/messages/",
                                     json={"value": "matrix", "key": "matrix", "partition": 5}, timeout=20)
    assert r.status_code == 201, f"{r.status_code} {r.text[:300]}"
    assert r.json()["partition"] == 5


def check_groups_list(w: World) -> None:
    kafka_says = {g for g in w.tool("kafka-consumer-groups", "--list").split() if g.startswith(w.topic)}
    assert kafka_says == set(w.groups), sorted(kafka_says)
    ours = {g["group"] for g in get(w.stack, "/consumer-groups/", q=w.topic, per_page=100)["results"]}
    assert ours == kafka_says, f"missing {sorted(kafka_says - ours)}"


def check_group_lag(w: World) -> None:
    group = w.groups[4]
    rows = [line.split() for line in w.tool("kafka-consumer-groups", "--describe", "--group", group).splitlines()]
    expected = {(r[1], int(r[2])): (None if r[3] == "-" else int(r[3]), int(r[4]), None if r[5] == "-" else int(r[5]))
                for r in rows if len(r) >= 6 and r[0] == group}
    detail = get(w.stack, f"/consumer-groups/{group}/")
    ours = {(p["topic"], p["partition"]): (p["committed"], p["end_offset"], p["lag"]) for p in detail["partitions"]}
    assert ours == expected, (ours, expected)


def check_reset_dry_run(w: World) -> None:
    group = w.groups[2]
    r = w.stack.api("operator").post(w.stack.base_url + API + f"/consumer-groups/{group}/offsets",
                                     json={"to": "earliest", "topics": [w.topic], "dry_run": True}, timeout=20)
    assert r.status_code == 200, f"{r.status_code} {r.text[:300]}"
    assert sorted((o["partition"], o["new"]) for o in r.json()["offsets"]) == [(p, 0) for p in range(PARTITIONS)]


FUNCTIONS: dict[str, Callable[[World], None]] = {
    "overview": check_overview,
    "topics list": check_topics_list,
    "topic detail": check_topic_detail,
    "browse newest": check_browse_newest,
    "browse by offset": check_browse_offset,
    "browse by time": check_browse_time,
    "produce": check_produce,
    "groups list": check_groups_list,
    "group lag": check_group_lag,
    "offset reset dry run": check_reset_dry_run,
}


def check_all(w: World, event: str) -> None:
    wait_for(w.settled, 120, interval=1, what=f"the cluster to settle after: {event}")
    failures = []
    for name, check in FUNCTIONS.items():
        deadline = time.monotonic() + SETTLED_WITHIN
        while True:
            try:
                check(w)
                break
            except (AssertionError, Exception) as exc:  # noqa: BLE001 - reported with the event and function
                if time.monotonic() > deadline:
                    failures.append(f"after {event}: {name}: {str(exc)[:MESSAGE_KEPT]}")
                    break
                time.sleep(0.5)
    assert not failures, "\n".join(failures)


@pytest.fixture(scope="module")
def world(stack: Stack) -> Iterator[World]:
    w = World(stack)
    w.create_topic()
    w.fill()
    check_all(w, "setup")
    yield w


def controller(w: World) -> int:
    return int(quorum_status(w.tool("kafka-metadata-quorum", "describe", "--status"))["leader_id"])


def test_cold_start_with_the_console_up_before_the_brokers_and_one_broker_late(world: World) -> None:
    stack = world.stack
    for node in (1, 2, 3):
        stack.cluster.kill(node)
    for name in ("web", "watcher", "worker", "beat"):
        stack.restart_process(name)
    wait_for(lambda: stack.get("/healthz").status_code in (200, 503), 30, what="the console to answer with no cluster")
    overview = stack.get(API + "/")
    assert overview.status_code in (200, 503)  # the last known state, or the one "no snapshot yet" answer
    with ThreadPoolExecutor(2) as pool:  # together: one voter alone cannot form a quorum and gives up
        list(pool.map(stack.cluster.start, (1, 2)))
    wait_for(lambda: quorum_status(world.tool("kafka-metadata-quorum", "describe", "--status"))["leader_id"] >= 0, 90,
             interval=1, what="a quorum of two nodes")
    time.sleep(8)  # the console meets a 2-broker cluster first, as `make run` does
    stack.cluster.start(3)
    check_all(world, "cold start (node 3 late)")


def test_sigkill_and_restart_of_a_broker(world: World) -> None:
    victim = next(b for b in (3, 2, 1) if b != controller(world))
    world.stack.cluster.kill(victim)
    time.sleep(8)
    world.stack.cluster.start(victim)
    check_all(world, f"SIGKILL and restart of broker {victim}")


def test_sigkill_of_the_active_controller(world: World) -> None:
    victim = controller(world)
    world.stack.cluster.kill(victim)
    wait_for(lambda: controller(world) not in (victim, -1), 60, interval=1, what="a new active controller")
    world.stack.cluster.start(victim)
    check_all(world, f"SIGKILL of the active controller {victim}")


def test_preferred_leader_election_that_moves_leaders(world: World) -> None:
    victim = next(b for b in (1, 2, 3) if b != controller(world))
    world.stack.cluster.kill(victim)
    time.sleep(8)
    world.stack.cluster.start(victim)
    wait_for(world.layout_ok, 90, interval=1, what="full ISRs again")
    before = topic_layout(world.tool("kafka-topics", "--describe", "--topic", world.topic))
    world.tool("kafka-leader-election", "--election-type", "PREFERRED", "--all-topic-partitions")
    after = topic_layout(world.tool("kafka-topics", "--describe", "--topic", world.topic))
    assert all(p["leader"] == p["replicas"][0] for p in after.values())
    assert before != after or all(p["leader"] == p["replicas"][0] for p in before.values())
    check_all(world, "a preferred-leader election")


def test_topic_deleted_and_recreated_with_the_same_name(world: World) -> None:
    world.tool("kafka-topics", "--delete", "--topic", world.topic)
    wait_for(lambda: world.topic not in world.tool("kafka-topics", "--list").split(), 60, what="the topic gone")
    time.sleep(2)
    world.create_topic()
    world.fill()
    check_all(world, "topic deleted and re-created")
