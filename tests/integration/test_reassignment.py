"""Reassignment jobs on the real cluster: decommission under load, cancel, a worker killed mid-job.

The oracles are Kafka's own tools: kafka-topics --describe for replica sets and ISR,
kafka-reassign-partitions --verify with the exported plan, kafka-configs for throttles; and every
message the producer saw acknowledged is read back (count and checksum per partition).
"""

from __future__ import annotations

import json
import re
import threading
import zlib
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.conftest import OUTPUT, Stack, unique, wait_for
from tests.integration.oracle import topic_layout
from tests.support import TEST_VAR

pytestmark = [pytest.mark.cluster]

API = "/api/v1/clusters/local/reassignments/"
THROTTLE_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate",
                 "leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


def brokers_up(stack: Stack) -> set[int]:
    return {b["id"] for b in stack.get("/api/v1/clusters/local/brokers/").json()["brokers"] if b["up"]}


@pytest.fixture(scope="module")
def four_nodes(stack: Stack) -> Stack:
    if 4 not in brokers_up(stack):
        stack.cluster.run("add")
    wait_for(lambda: {1, 2, 3, 4} <= brokers_up(stack), 60, what="four brokers up")
    return stack


def post(stack: Stack, path: str, body: dict, user: str = "operator") -> Any:
    return stack.api(user).post(stack.base_url + path, json=body, timeout=60)


def job(stack: Stack, job_id: int) -> dict:
    return stack.get(f"{API}{job_id}/").json()


def wait_job(stack: Stack, job_id: int, states: set[str], timeout: float) -> dict:
    return wait_for(lambda: (j := job(stack, job_id))["state"] in states and j, timeout, interval=1,
                    what=f"job {job_id} to reach {sorted(states)}")


def throttle_configs(stack: Stack, topics: list[str], brokers: list[int]) -> list[str]:
    """Every throttle config kafka-configs shows on these brokers and topics (dynamic ones only)."""
    found = []
    for b in brokers:
        out = stack.cluster.tool("kafka-configs", "--describe", "--entity-type", "brokers", "--entity-name", str(b))
        found += [f"broker {b}: {line.strip()}" for line in out.splitlines() if "throttled" in line]
    for t in topics:
        out = stack.cluster.tool("kafka-configs", "--describe", "--entity-type", "topics", "--entity-name", t)
        found += [f"topic {t}: {line.strip()}" for line in out.splitlines() if "throttled" in line]
    return found


def create_topic(stack: Stack, name: str, assignment: str) -> None:
    stack.cluster.tool("kafka-topics", "--create", "--topic", name, "--replica-assignment", assignment,
                       "--config", "min.insync.replicas=2")
    # In the watcher's snapshot (plans are made from it), not only answered from Kafka by the detail route.
    wait_for(lambda: any(t["name"] == name for t in stack.get("/api/v1/clusters/local/topics/", params={"q": name}).json()["results"]),
             20, what=f"{name} in the console's snapshot")


def fill(stack: Stack, topic: str, partitions: int, per_partition_bytes: int) -> None:
    producer = Producer({"bootstrap.servers": stack.cluster.bootstrap, "acks": "all", "linger.ms": 20, "compression.type": "none"})
    value = bytes(range(256)) * 40  # 10 KiB, incompressible enough for the log size to track it
    for p in range(partitions):
        for _ in range(per_partition_bytes // len(value)):
            producer.produce(topic, value=value, partition=p)
            producer.poll(0)
    assert producer.flush(60) == 0


class AckedProducer:
    """Writes with acks=all and idempotence until stopped; remembers every acknowledged message."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5})
        self.topic, self.partitions = topic, partitions
        self.acked: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def on_delivery(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acked[msg.partition()].append(msg.value())
        else:
            self.errors.append(str(err))

    def run(self) -> None:
        n = 0
        while not self.stop.is_set():
            for p in range(self.partitions):
                self.producer.produce(self.topic, value=f"m-{n}-{p}".encode() * 20, partition=p, on_delivery=self.on_delivery)
            n += 1
            self.producer.poll(0.01)
        self.producer.flush(60)

    def __enter__(self) -> AckedProducer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        self.thread.join(90)


def read_back(bootstrap: str, topic: str, partitions: int) -> dict[int, list[bytes]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("verify"), "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    at_end: set[int] = set()
    deadline = 120
    import time

    started = time.monotonic()
    while len(at_end) < partitions and time.monotonic() - started < deadline:
        msg = consumer.poll(1.0)
        if msg is None:
            continue
        err, partition = msg.error(), msg.partition() or 0
        if err is not None:
            if err.code() == -191:  # _PARTITION_EOF
                at_end.add(partition)
            continue
        out[partition].append(msg.value() or b"")
    consumer.close()
    return out


def checksum(values: list[bytes]) -> tuple[int, int]:
    c = 0
    for v in values:
        c = zlib.crc32(v, c)
    return len(values), c


def test_decommission_under_load_moves_everything_off_the_broker_and_loses_nothing(four_nodes: Stack, logged_in_page: Any) -> None:
    stack = four_nodes
    topic = unique("decom")
    create_topic(stack, topic, "1:2:3,2:3:1,3:1:2,1:3:4,3:4:2,4:1:2")
    fill(stack, topic, 6, 1_000_000)
    wait_for(lambda: sum(p["size"] or 0 for p in stack.get(f"/api/v1/clusters/local/topics/{topic}/partitions/").json()["partitions"]) > 0,
             40, what="log sizes in the snapshot")

    r = post(stack, API, {"kind": "decommission", "brokers": [3]})
    assert r.status_code == 201, r.text
    plan = r.json()
    assert plan["state"] == "planned"
    assert all(3 not in p["replicas"] for p in plan["plan"]["partitions"])
    # The replicas on broker 3 must move; a few more may, to keep racks and balance (budget: 1.2x).
    assert plan["totals"]["required_replicas"] <= plan["totals"]["replicas_to_move"] <= 1.2 * plan["totals"]["required_replicas"]
    plan_file = TEST_VAR / f"reassignment-{plan['id']}.json"
    plan_file.write_text(json.dumps(plan["plan"]))  # the page's export is the same JSON (tests/web/test_reassignment_jobs.py)

    # A viewer may not execute it; a second job may not start while this one runs.
    assert post(stack, f"{API}{plan['id']}/", {"action": "execute"}, user="viewer").status_code == 403
    other = post(stack, API, {"kind": "rebalance"}).json()

    with AckedProducer(stack.cluster.bootstrap, topic, 6) as producer:
        r = post(stack, f"{API}{plan['id']}/", {"action": "execute", "max_moves_per_broker": 25,
                                                "throttle_bytes_per_second": 20_000_000})
        assert r.status_code == 202, r.text
        second = post(stack, f"{API}{other['id']}/", {"action": "execute"})
        assert second.status_code == 409 and "one job runs at a time" in second.json()["detail"], second.text
        running = wait_job(stack, plan["id"], {"running", "completed"}, 60)
        if running["state"] == "running":
            assert running["throttles"]["brokers"], "throttles recorded before they are set"
        done = wait_job(stack, plan["id"], {"completed", "failed", "cancelled"}, 600)
    assert done["state"] == "completed", done
    assert producer.errors == [], producer.errors[:3]
    assert sum(len(v) for v in producer.acked.values()) > 100

    # Kafka's own tools agree: nothing on broker 3, ISRs complete, the plan verified, no throttle left.
    rows = re.findall(r"Topic:\s*(\S+)\s+Partition:\s*(\d+)\s+Leader:\s*\S+\s+Replicas:\s*([\d,]*)\s+Isr:\s*([\d,]*)",
                      stack.cluster.tool("kafka-topics", "--describe"))
    assert len(rows) >= 6
    on_3 = [f"{t}-{p}" for t, p, replicas, _ in rows if "3" in replicas.split(",")]
    assert on_3 == [], f"replicas still on broker 3: {on_3[:5]}"
    lagging = [f"{t}-{p}" for t, p, replicas, isr in rows if sorted(replicas.split(",")) != sorted(isr.split(","))]
    assert lagging == [], f"ISR incomplete: {lagging[:5]}"
    verify = stack.cluster.tool("kafka-reassign-partitions", "--verify", "--reassignment-json-file", str(plan_file))
    assert "is completed" in verify and "still in progress" not in verify, verify
    assert throttle_configs(stack, [topic], [1, 2, 3, 4]) == []
    assert done["verification"]["ok"] is True, done["verification"]
    assert done["progress"]["partitions_done"] == done["progress"]["partitions_total"]

    # Every acknowledged message is there, in order: count and checksum per partition.
    back = read_back(stack.cluster.bootstrap, topic, 6)
    for p in range(6):
        written = [v for v in back[p] if v.startswith(b"m-")]
        assert checksum(written) == checksum(producer.acked[p]), f"partition {p}"

    # The balance watch sees broker 3 empty now, raises one event and links to the plan that fills it again.
    def balance_event() -> dict | None:
        rows = stack.get("/api/v1/clusters/local/events/", params={"kind": "balance", "limit": 50}).json()["events"]
        return next((e for e in rows if 3 in e["details"]["brokers"] and e["details"]["problem"] == "new_broker"), None)

    event = wait_for(balance_event, 40, what="a balance event for the empty broker 3")
    assert event["details"]["offer"] == {"kind": "add_brokers", "brokers": event["details"]["brokers"]}
    page = logged_in_page
    page.goto(f"{stack.base_url}/clusters/local/events/?kind=balance")
    page.click(f'tr[data-event="{event["id"]}"] a.offer')
    page.wait_for_selector("#plan-preview #plan-chart .main-svg")
    assert "3" in page.input_value("input[name=brokers]")
    page.screenshot(path=str(OUTPUT / "balance-offer-plan.png"), full_page=True)

    audit = stack.get("/api/v1/audit/", params={"limit": 200}).json()
    actions = [(e["action"], e["target"], e["outcome"]) for e in audit.get("entries", audit.get("results", []))]
    assert ("reassignment_execute", f"job {plan['id']}", "ok") in actions
    assert ("reassignment_completed", f"job {plan['id']}", "ok") in actions


def test_cancel_midway_puts_the_replicas_back_and_removes_the_throttles(four_nodes: Stack, logged_in_page: Any) -> None:
    stack = four_nodes
    topic = unique("cancel")
    create_topic(stack, topic, "1:2,2:1,1:2,2:1")
    fill(stack, topic, 4, 2_000_000)
    before = topic_layout(stack.cluster.tool("kafka-topics", "--describe", "--topic", topic))
    target = {"version": 1, "partitions": [{"topic": topic, "partition": p, "replicas": [4, 3] if p % 2 else [3, 4]} for p in range(4)]}
    r = post(stack, API, {"kind": "import", "plan": target})
    assert r.status_code == 201, r.text
    job_id = r.json()["id"]

    page = logged_in_page
    page.goto(f"{stack.base_url}/clusters/local/reassignments/{job_id}/")
    page.wait_for_selector("#plan-chart .main-svg")  # the plan chart rendered
    page.screenshot(path=str(OUTPUT / "reassignment-plan.png"), full_page=True)
    page.evaluate("window.__noReload = true")

    # 100 KB/s into each of the two new brokers: 16 MB to copy takes 80 s, long enough to look at the
    # job in the middle (on a loaded machine the page and its screenshots take a while) and cancel it.
    r = post(stack, f"{API}{job_id}/", {"action": "execute", "throttle_bytes_per_second": 100_000})
    assert r.status_code == 202, r.text
    wait_for(lambda: job(stack, job_id)["progress"].get("bytes_copied", 0) > 0, 60, what="bytes copied")
    mid = job(stack, job_id)
    assert throttle_configs(stack, [topic], [4]) != [], f"the throttle is set while the job runs: {mid}"
    assert mid["state"] == "running" and mid["progress"]["partitions_done"] < 4, mid["progress"]
    first = page.inner_text("#job-bytes")
    wait_for(lambda: page.inner_text("#job-bytes") != first, 30, what="the job page's progress to advance")
    assert page.evaluate("window.__noReload") is True, "the page reloaded"
    page.screenshot(path=str(OUTPUT / "reassignment-progress.png"), full_page=True)
    page.emulate_media(color_scheme="dark")
    page.screenshot(path=str(OUTPUT / "reassignment-progress-dark.png"), full_page=True)
    page.emulate_media(color_scheme="light")
    assert job(stack, job_id)["state"] == "running", "the job ended before it could be cancelled (copying too fast?)"

    r = post(stack, f"{API}{job_id}/", {"action": "cancel"})
    assert r.status_code in (200, 202), r.text
    done = wait_job(stack, job_id, {"cancelled", "failed"}, 300)
    assert done["state"] == "cancelled", done
    after = topic_layout(stack.cluster.tool("kafka-topics", "--describe", "--topic", topic))
    assert {p: sorted(v["replicas"]) for p, v in after.items()} == {p: sorted(v["replicas"]) for p, v in before.items()}
    assert throttle_configs(stack, [topic], [1, 2, 3, 4]) == []
    assert done["verification"]["ok"] is True, done["verification"]


def test_a_job_survives_its_worker_being_killed(four_nodes: Stack) -> None:
    stack = four_nodes
    topic = unique("takeover")
    create_topic(stack, topic, "1:2,2:1,1:2")
    fill(stack, topic, 3, 1_500_000)
    # Brokers 1 and 4 share rack r1: each new pair spans two racks, or the import is refused.
    moves = {0: [4, 2], 1: [2, 4], 2: [4, 3]}
    target = {"version": 1, "partitions": [{"topic": topic, "partition": p, "replicas": r} for p, r in moves.items()]}
    r = post(stack, API, {"kind": "import", "plan": target})
    assert r.status_code == 201, r.text
    job_id = r.json()["id"]
    r = post(stack, f"{API}{job_id}/", {"action": "execute", "throttle_bytes_per_second": 300_000, "max_moves_per_broker": 1})
    assert r.status_code == 202, r.text
    wait_for(lambda: job(stack, job_id)["progress"].get("bytes_copied", 0) > 0, 60, what="the move under way")

    stack.procs["worker"].kill()  # SIGKILL: no cleanup, no release of the lease
    stack.procs["worker"].wait(10)
    stack.start_process("worker")
    done = wait_job(stack, job_id, {"completed", "failed", "cancelled"}, 300)
    assert done["state"] == "completed", done
    assert done["verification"]["ok"] is True, done["verification"]
    layout = topic_layout(stack.cluster.tool("kafka-topics", "--describe", "--topic", topic))
    assert {p: v["replicas"] for p, v in layout.items()} == moves
    assert throttle_configs(stack, [topic], [1, 2, 4]) == []
