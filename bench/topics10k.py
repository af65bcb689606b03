"""Issue 3 scale benchmark: 10,000 topics / 30,000 partitions on the local test cluster.

`.venv/bin/python -m bench.topics10k` starts the test stack (own Redis, 3 KRaft nodes, web, watcher),
creates the topics (replication factor 1, 3 partitions each, in batches), waits until the watcher's
snapshot holds them all, then measures server time (Server-Timing header) of the topics list (first
page, a substring search, a regex search, a sort by size) and of a topic's detail page and API, and
the watcher's cycle. Appends the figures to docs/benchmarks.md.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from bench.run import login_session, server_time, setup_django
from tests.support import BOOTSTRAP, ROOT, running_cluster, running_redis, running_stack, wait_for

TOPICS = int(os.environ.get("BENCH_TOPICS", "10000"))
PARTITIONS = 3


def create_topics(n: int) -> float:
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    started = time.monotonic()
    names = [f"bench.t{i:05d}" for i in range(n)]
    for start in range(0, n, 200):
        batch = [NewTopic(name, num_partitions=PARTITIONS, replication_factor=1) for name in names[start:start + 200]]
        for future in admin.create_topics(batch, operation_timeout=60, request_timeout=60).values():
            future.result()
    return time.monotonic() - started


def main() -> None:
    setup_django()
    from console.snapshots import store

    results: dict[str, Any] = {}
    with running_redis(), running_cluster(heap="1g") as cluster, running_stack(cluster) as stack:
        results["create_s"] = round(create_topics(TOPICS), 1)
        wait_for(lambda: stack.get("/api/v1/clusters/local/").json()["counts"]["topics"] >= TOPICS, 300, interval=2,
                 what="all topics in the snapshot")
        time.sleep(10)  # let offsets, sizes and configs settle
        counts = stack.get("/api/v1/clusters/local/").json()["counts"]
        results["scale"] = counts
        session = login_session(stack.base_url)
        base = stack.base_url + "/clusters/local/topics/"
        results["list_first_page"] = server_time(session, base, 30)
        results["list_search"] = server_time(session, base + "?q=t0421", 30)
        results["list_regex"] = server_time(session, base + "?q=%5Ebench%5C.t0%5B0-4%5D.*7%24&regex=1", 30)
        results["list_sort_size"] = server_time(session, base + "?sort=size&desc=1", 30)
        results["api_list"] = server_time(session, stack.base_url + "/api/v1/clusters/local/topics/?q=t09", 30)
        results["detail_page"] = server_time(session, base + "bench.t04242/", 30)
        results["detail_api"] = server_time(session, stack.base_url + "/api/v1/clusters/local/topics/bench.t04242/", 30)
        results["overview"] = server_time(session, stack.base_url + "/clusters/local/", 30)
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": BOOTSTRAP})
        for i in range(3000):
            producer.produce("bench.t00001", value=(f'{{"n": {i}, "pad": "' + "x" * 900 + '"}').encode())
        producer.flush(30)
        results["messages_first_page"] = server_time(
            session, stack.base_url + "/api/v1/clusters/local/topics/bench.t00001/messages/?start=newest&limit=50", 30)
        results["messages_page_html"] = server_time(
            session, base + "bench.t00001/messages/?run=1&start=newest&limit=50", 30)
        stats = store.load_stats("local")
        results["watcher"] = stats
    report(results)


def report(r: dict[str, Any]) -> None:
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"\n## Topics at scale (issue 3), {when}\n",
        "Command: `.venv/bin/python -m bench.topics10k`. The test stack with 3 KRaft nodes (1 GB heaps) on this 2-core "
        f"machine; {r['scale']['topics']} topics, {r['scale']['partitions']} partitions (replication factor 1), created in "
        f"{r['create_s']} s. Server time from the Server-Timing header; n=30 each, after one warm-up request per page.\n",
        "| request | median | p95 | max | Kafka calls | budget |",
        "|---|---|---|---|---|---|",
    ]
    budgets = {"detail_page": 200, "detail_api": 200, "overview": 150}
    labels = {
        "list_first_page": "topics list, first page", "list_search": "topics list, substring search",
        "list_regex": "topics list, regex search", "list_sort_size": "topics list, sorted by size",
        "api_list": "API topics list, search", "detail_page": "topic detail page (configs from Kafka)",
        "detail_api": "API topic detail", "overview": "cluster overview",
        "messages_first_page": "API messages, newest 50 (3,000 x 1 KB)", "messages_page_html": "messages page, newest 50",
    }
    for key, label in labels.items():
        x = r[key]
        lines.append(f"| {label} | {x['median_ms']:.1f} ms | {x['p95_ms']:.1f} ms | {x['max_ms']:.1f} ms | "
                     f"{', '.join(map(str, x['kafka_calls']))} | <= {budgets.get(key, 300)} ms |")
    w = r["watcher"] or {}
    lines.append(f"\nWatcher at this scale ({w.get('partitions')} partitions): metadata cycle median {w.get('cycle_p50_seconds')} s, "
                 f"max {w.get('cycle_max_seconds')} s over the last 60 cycles; Kafka requests in the last cycle "
                 f"{w.get('requests_last_cycle')}; max RSS {w.get('max_rss_mb')} MB.\n")
    text = "\n".join(lines)
    print(text)
    with (ROOT / "docs" / "benchmarks.md").open("a") as f:
        f.write(text)


if __name__ == "__main__":
    main()
