"""The watcher with and without writing analytics samples (issue 10): its cycle must stay within 10%.

`.venv/bin/python -m bench.samples_overhead [--topics 2000] [--groups 200] [--seconds 90]` starts the test
cluster and Redis (own ports), creates the topics (3 partitions, RF 1) and groups with committed offsets,
then runs `manage.py watch` twice for --seconds each, with ANALYTICS_SAMPLES=0 and =1, and reads the
watcher's own stats from Redis: metadata cycle p50 and max, the sampling thread's p50 (offsets, sizes,
groups and the samples it writes), CPU seconds, and what writing the samples cost. Appends to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from datetime import UTC, datetime
from typing import Any

from tests.support import BOOTSTRAP, ROOT, running_cluster, running_redis, stack_env


def watch(seconds: int, samples: bool) -> dict[str, Any]:
    from console.snapshots import store

    store.client().flushall()
    proc = subprocess.Popen([sys.executable, "manage.py", "watch"], cwd=ROOT, env=stack_env(ANALYTICS_SAMPLES="1" if samples else "0"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(seconds)
        stats = store.load_stats("local") or {}
    finally:
        proc.terminate()
        proc.wait(30)
    return stats


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topics", type=int, default=2000)
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--seconds", type=int, default=90)
    parser.add_argument("--no-append", action="store_true")
    args = parser.parse_args()
    from bench.run import setup_django

    setup_django()
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    with running_redis(), running_cluster(heap="768m"):
        admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
        names = [f"bench.s{i:05d}" for i in range(args.topics)]
        for start in range(0, len(names), 200):
            futures = admin.create_topics([NewTopic(n, 3, 1) for n in names[start:start + 200]], operation_timeout=60)
            for future in futures.values():
                future.result()
        for g in range(args.groups):
            t = names[g % len(names)]
            consumer = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": f"bench.g{g:04d}", "enable.auto.commit": False})
            for attempt in range(30):  # a fresh cluster makes __consumer_offsets and elects coordinators first
                try:
                    consumer.commit(offsets=[TopicPartition(t, p, 0) for p in range(3)], asynchronous=False)
                    break
                except Exception:  # noqa: BLE001 - retried, then raised
                    if attempt == 29:
                        raise
                    time.sleep(1)
            consumer.close()
        time.sleep(20)  # the brokers' metadata catches up with the controller
        off = watch(args.seconds, False)
        on = watch(args.seconds, True)
    print({"off": off, "on": on})

    def cell(stats: dict[str, Any], key: str) -> str:
        v = stats.get(key)
        return "–" if v is None else f"{v}"

    ratio = (on["sampling_p50_seconds"] or 0) / (off["sampling_p50_seconds"] or 1)
    cycle_ratio = (on["cycle_p50_seconds"] or 0) / (off["cycle_p50_seconds"] or 1)
    text = "\n".join([
        f"\n## Watcher with analytics samples on and off (issue 10), {datetime.now(UTC):%Y-%m-%d %H:%M} UTC\n",
        f"Command: `.venv/bin/python -m bench.samples_overhead --topics {args.topics} --groups {args.groups} --seconds {args.seconds}` "
        f"(test cluster, {args.topics:,} topics x 3 partitions, {args.groups} groups with committed offsets; `manage.py watch` "
        f"alone for {args.seconds} s per run, stats from the watcher itself).\n",
        "| samples | metadata cycle p50 | max | sampling thread p50 | CPU seconds | sample records written | time building and queueing them |",
        "|---|---|---|---|---|---|---|",
        f"| off | {cell(off, 'cycle_p50_seconds')} s | {cell(off, 'cycle_max_seconds')} s | {cell(off, 'sampling_p50_seconds')} s | {cell(off, 'cpu_seconds_total')} | – | – |",
        f"| on | {cell(on, 'cycle_p50_seconds')} s | {cell(on, 'cycle_max_seconds')} s | {cell(on, 'sampling_p50_seconds')} s | {cell(on, 'cpu_seconds_total')} | "
        f"{cell(on, 'samples_records_total')} | {cell(on, 'samples_seconds_total')} s |",
        "",
        f"On / off: metadata cycle p50 x{cycle_ratio:.2f}, sampling p50 x{ratio:.2f} (budget: within 10%).",
        "",
    ])
    print(text)
    if not args.no_append:
        with open(ROOT / "docs" / "benchmarks.md", "a") as out:
            out.write(text)


if __name__ == "__main__":
    main()
