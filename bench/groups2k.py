"""Issue 4 scale benchmark: 2,000 consumer groups with 10 partitions each.

`.venv/bin/python -m bench.groups2k` starts the test stack, creates 20 topics of 10 partitions with
some messages, commits offsets for 2,000 classic groups (100 per topic, no live members: committed
offsets are what the lag refresh reads), adds live groups of Kafka 4's other kinds (20 new-protocol
consumer groups and 10 share groups, one member each), then records the watcher's group refresh (time, groups, committed
partitions, Kafka requests bound) and the server time of the groups list, a group's detail, a
topic's consumers and /metrics. Appends the figures to docs/benchmarks.md.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime
from typing import Any

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.run import login_session, server_time, setup_django
from tests.support import BOOTSTRAP, ROOT, running_cluster, running_redis, running_stack, wait_for

GROUPS = int(os.environ.get("BENCH_GROUPS", "2000"))
TOPICS = 20
NEW_PROTOCOL = int(os.environ.get("BENCH_NEW_PROTOCOL_GROUPS", "20"))
SHARE = int(os.environ.get("BENCH_SHARE_GROUPS", "10"))


def live_members(stop: threading.Event) -> list[threading.Thread]:
    """One member in each of NEW_PROTOCOL KIP-848 groups and SHARE share groups, polling until stopped."""

    def run(kind: str, i: int) -> None:
        conf = {"bootstrap.servers": BOOTSTRAP, "group.id": f"lag.{kind}{i:02d}", "log_level": 2}
        client: Any
        if kind == "share":
            client = ShareConsumer(conf)
        else:
            client = Consumer({**conf, "group.protocol": "consumer", "auto.offset.reset": "earliest"})
        client.subscribe([f"lag.t{i % TOPICS:02d}"])
        while not stop.is_set():
            client.poll(0.5)
        client.close()

    threads = [threading.Thread(target=run, args=("new", i), daemon=True) for i in range(NEW_PROTOCOL)]
    threads += [threading.Thread(target=run, args=("share", i), daemon=True) for i in range(SHARE)]
    for t in threads:
        t.start()
    return threads


def setup_groups() -> float:
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    topics = [f"lag.t{i:02d}" for i in range(TOPICS)]
    for f in admin.create_topics([NewTopic(t, 10, 1) for t in topics]).values():
        f.result()
    producer = Producer({"bootstrap.servers": BOOTSTRAP, "linger.ms": 20})
    for t in topics:
        for p in range(10):
            for _ in range(100):
                producer.produce(t, value=b"x" * 100, partition=p)
    producer.flush(60)
    started = time.monotonic()
    for g in range(GROUPS):
        topic = topics[g % TOPICS]
        offsets = [TopicPartition(topic, p, (g * 7 + p) % 100) for p in range(10)]
        futures = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(f"lag.g{g:04d}", offsets)])
        for f in futures.values():
            f.result()
    return time.monotonic() - started


def main() -> None:
    setup_django()
    from console.snapshots import store

    r: dict[str, Any] = {}
    with running_redis(), running_cluster(heap="768m") as cluster, running_stack(cluster) as stack:
        r["setup_s"] = round(setup_groups(), 1)
        print(f"offsets committed for {GROUPS} groups in {r['setup_s']} s", flush=True)
        stop = threading.Event()
        members = live_members(stop)
        def listed() -> bool:
            count = stack.get("/api/v1/clusters/local/consumer-groups/").json()["count"]
            print(f"{time.strftime('%H:%M:%S')} groups listed: {count}", flush=True)
            seen.append(count)
            return len(seen) > 3 and seen[-1] == seen[-4] and count > 0  # settled

        seen: list[int] = []
        wait_for(listed, 240, interval=5, what="the group count to settle")
        r["listed"] = seen[-1]
        r["kafka_listed"] = len(cluster.tool("kafka-consumer-groups", "--list").split())
        time.sleep(15)
        samples = []
        for _ in range(10):
            stats = store.load_stats("local") or {}
            samples.append(stats)
            time.sleep(1.5)
        r["stats"] = samples[-1]
        r["fetch"] = sorted(float(str(s.get("groups_fetch_seconds", 0))) for s in samples)
        r["evaluate"] = sorted(float(str(s.get("groups_evaluate_seconds", 0))) for s in samples)
        session = login_session(stack.base_url)
        r["list"] = server_time(session, stack.base_url + "/clusters/local/groups/", 30)
        r["list_sorted"] = server_time(session, stack.base_url + "/clusters/local/groups/?sort=total_lag&desc=1", 30)
        r["api_list"] = server_time(session, stack.base_url + "/api/v1/clusters/local/consumer-groups/?q=g01", 30)
        r["detail"] = server_time(session, stack.base_url + "/clusters/local/groups/lag.g0421/", 30)
        r["api_detail"] = server_time(session, stack.base_url + "/api/v1/clusters/local/consumer-groups/lag.g0421/", 30)
        r["topic_consumers"] = server_time(session, stack.base_url + "/api/v1/clusters/local/topics/lag.t01/", 30)
        r["metrics"] = server_time(session, stack.base_url + "/metrics", 10)
        r["kinds"] = {kind: stack.get("/api/v1/clusters/local/consumer-groups/", params={"type": kind}).json()["count"]
                      for kind in ("classic", "consumer", "share")}
        r["requests"] = sorted(int(str(s.get("group_requests", 0))) for s in samples)
        stop.set()
        for t in members:
            t.join(5)
    report(r)


def report(r: dict[str, Any]) -> None:
    s = r["stats"]
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"\n## Consumer groups at scale (issue 4), {when}\n",
        f"Command: `.venv/bin/python -m bench.groups2k`. The test stack (3 KRaft nodes, 768 MB heaps) on this 2-core machine; "
        f"{s.get('groups')} groups with {s.get('group_partitions')} committed partitions (10 each, on 20 topics of 10 "
        f"partitions), {s.get('coordinators')} coordinators; offsets committed in {r['setup_s']} s. Groups listed by the "
        f"console: {r['listed']} ({r['kinds']['classic']} classic, {r['kinds']['consumer']} new-protocol consumer groups, "
        f"{r['kinds']['share']} share groups); by `kafka-consumer-groups --list`: {r['kafka_listed']} (it leaves out share "
        "groups).\n",
        f"- Full lag refresh (ListGroups, DescribeGroups, ConsumerGroupDescribe, ShareGroupDescribe, OffsetFetch and "
        f"DescribeShareGroupOffsets for every group): median "
        f"{r['fetch'][len(r['fetch']) // 2]:.2f} s, max {r['fetch'][-1]:.2f} s over 10 samples; evaluating lag status, time "
        f"lag and rebalances for all of them: median {r['evaluate'][len(r['evaluate']) // 2]:.2f} s. Budget: 2 s.",
        f"- Kafka requests per refresh, counted: median {r['requests'][len(r['requests']) // 2]}, max {r['requests'][-1]}; "
        f"the bound is {s.get('group_requests_bound')} (one ListGroups per broker, one batched FindCoordinator, then per "
        "coordinator one describe per kind of group, one OffsetFetch and one DescribeShareGroupOffsets), the same for 20 "
        "or 2,000 groups.\n",
        "| request | median | p95 | max | Kafka calls | budget |",
        "|---|---|---|---|---|---|",
    ]
    for key, label, budget in (("list", "groups list, first page", 300), ("list_sorted", "groups list sorted by lag", 300),
                               ("api_list", "API groups list, search", 300), ("detail", "group detail page", 200),
                               ("api_detail", "API group detail", 200), ("topic_consumers", "a topic's consumers (API topic detail)", 300),
                               ("metrics", "/metrics (every group and partition)", None)):
        x = r[key]
        lines.append(f"| {label} | {x['median_ms']:.1f} ms | {x['p95_ms']:.1f} ms | {x['max_ms']:.1f} ms | "
                     f"{', '.join(map(str, x['kafka_calls']))} | {'<= ' + str(budget) + ' ms' if budget else '–'} |")
    text = "\n".join(lines) + "\n"
    print(text)
    with (ROOT / "docs" / "benchmarks.md").open("a") as f:
        f.write(text)


if __name__ == "__main__":
    main()
