"""The gateway's metadata call at scale, without Kafka (issue 11): what `ClusterGateway.metadata()` costs
and keeps when librdkafka answers for 300,000 partitions.

`.venv/bin/python -m bench.metadata_compare [--topics 10000] [--partitions-per-topic 30] [--calls 5]`
hands the real gateway a stand-in admin client whose `list_topics` answers are made beforehand, new
objects at each call as librdkafka's are (leaders, replicas and ISR over 100 brokers), and times the
first call (every Topic built) and the next ones (the same answer: each topic compared with the Topic
built last time and handed back as the same object). It prints one JSON line with the times and the
memory the gateway keeps between calls (tracemalloc, measured apart from the timing).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import tracemalloc
from types import SimpleNamespace
from typing import Any


def answer(topics: int, per_topic: int) -> Any:
    """One list_topics answer of `topics` topics of `per_topic` partitions, as new objects."""

    def part(t: int, p: int) -> Any:
        ids = [1 + (t + p + k) % 100 for k in range(3)]
        return SimpleNamespace(id=p, leader=ids[0], replicas=list(ids), isrs=list(ids), error=None)

    made = {f"topic-{t:05d}": SimpleNamespace(error=None, partitions={p: part(t, p) for p in range(per_topic)})
            for t in range(topics)}
    brokers = {b: SimpleNamespace(id=b, host=f"broker-{b}", port=9092, rack=None) for b in range(1, 101)}
    return SimpleNamespace(cluster_id="bench", brokers=brokers, topics=made)


def gateway_over(answers: list[Any]) -> Any:
    from console.gateway.client import ClusterGateway
    from console.gateway.config import ClusterConfig

    gw = ClusterGateway(ClusterConfig(name="bench", bootstrap_servers="127.0.0.1:9"), timeout=1.0)
    pending = iter(answers)
    admin = SimpleNamespace(list_topics=lambda timeout: next(pending))
    setattr(gw, "_admin_client", lambda: admin)  # noqa: B010 - the stand-in for librdkafka's client
    return gw


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--partitions-per-topic", type=int, default=30)
    parser.add_argument("--calls", type=int, default=5)
    args = parser.parse_args()
    from bench.run import setup_django

    setup_django()
    calls = max(2, args.calls)
    answers = [answer(args.topics, args.partitions_per_topic) for _ in range(calls)]
    gw = gateway_over(answers)
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        gw.metadata()
        times.append(time.perf_counter() - started)
    # What the gateway keeps between calls, apart: tracemalloc slows the calls down.
    gw = gateway_over(answers[:1])
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    result = gw.metadata()
    kept = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    print(json.dumps({
        "topics": args.topics,
        "partitions": args.topics * args.partitions_per_topic,
        "first_call_seconds": round(times[0], 3),
        "unchanged_call_p50_seconds": round(statistics.median(times[1:]), 3),
        "kept_mb": round(kept / 2**20, 1),  # (the Topics handed back, which the watcher holds anyway, and the cache of them)
        "topics_returned": len(result.topics),
    }))


if __name__ == "__main__":
    main()
