"""What one end-offsets call holds at once on a real cluster, per partition (issue 11).

`.venv/bin/python -m bench.offsets_memory [--partitions N]` starts the test cluster (own ports, see
tests/support.py), creates one topic of N partitions (replication factor 1) and measures, with
tracemalloc, the peak of Python memory above the call's start, divided by N, for:
  - AdminClient.list_offsets as its documentation shows it (a future per partition), and
  - the gateway's ClusterGateway.list_offsets (requests of OFFSETS_CHUNK partitions, one future each);
and, for comparison, the watcher's metadata read (ClusterGateway.metadata, librdkafka's list_topics)
of an unchanged cluster, whose answer is one Python object per partition.
The sampling process makes two such calls per pass over every partition; the simulated cluster
(bench/simulate.py) answers them from its model and cannot show this cost. Prints one JSON line
and, with --append, adds it to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from tests.support import ROOT, running_cluster, wait_for


def peak_per_partition(call: Callable[[], dict[Any, int]], partitions: int) -> tuple[float, float]:
    """(peak bytes per partition, seconds) of one call."""
    import time

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        started = time.perf_counter()
        answer = call()
        seconds = time.perf_counter() - started
        assert len(answer) == partitions, len(answer)
        return (tracemalloc.get_traced_memory()[1] - before) / partitions, seconds
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--partitions", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--append", action="store_true")
    args = parser.parse_args()

    from bench.run import setup_django

    setup_django()
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    from console.gateway.client import ClusterGateway
    from console.gateway.config import ClusterConfig
    from console.gateway.offsets import OFFSETS_CHUNK

    n = args.partitions
    with running_cluster() as cluster:
        topic = "offsets-memory"
        cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", str(n), "--replication-factor", "1")
        gw = ClusterGateway(ClusterConfig(name="bench", bootstrap_servers=cluster.bootstrap), timeout=30.0)
        asked = [(topic, p) for p in range(n)]
        wait_for(lambda: len(gw.list_offsets(asked, "latest")) == n, 120, interval=2, what="every partition's offset")
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})

        def public() -> dict[Any, int]:
            futures = admin.list_offsets({TopicPartition(t, p): OffsetSpec.latest() for t, p in asked}, request_timeout=30)
            return {(tp.topic, tp.partition): f.result(31).offset for tp, f in futures.items()}

        public()
        runs: dict[str, list[tuple[float, float]]] = {"public": [], "gateway": [], "metadata": []}
        gw.metadata()  # (the Topics built: later calls compare the answer with them)

        def metadata() -> dict[Any, int]:
            topic_of = {t.name: t for t in gw.metadata().topics}
            return {(topic, p.partition): 0 for p in topic_of[topic].partitions}

        for _ in range(args.rounds):
            runs["public"].append(peak_per_partition(public, n))
            runs["gateway"].append(peak_per_partition(lambda: gw.list_offsets(asked, "latest"), n))
            runs["metadata"].append(peak_per_partition(metadata, n))
        gw.close()
    result = {
        "partitions": n,
        "offsets_chunk": OFFSETS_CHUNK,
        "public_peak_bytes_per_partition": round(statistics.median(b for b, _s in runs["public"])),
        "gateway_peak_bytes_per_partition": round(statistics.median(b for b, _s in runs["gateway"])),
        "public_seconds": round(statistics.median(s for _b, s in runs["public"]), 3),
        "gateway_seconds": round(statistics.median(s for _b, s in runs["gateway"]), 3),
        "metadata_peak_bytes_per_partition": round(statistics.median(b for b, _s in runs["metadata"])),
        "metadata_seconds": round(statistics.median(s for _b, s in runs["metadata"]), 3),
    }
    for which in ("public", "gateway", "metadata"):  # what the sampling process's two calls a pass would hold at 300,000
        result[f"{which}_mb_at_300000"] = round(result[f"{which}_peak_bytes_per_partition"] * 300_000 / 1e6, 1)
    print(json.dumps(result), flush=True)
    if args.append:
        when = datetime.now(tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
        with open(ROOT / "docs" / "benchmarks.md", "a") as f:
            f.write(f"\n## End offsets call on a real cluster (issue 11), {when}\n\n"
                    f"Command: `.venv/bin/python -m bench.offsets_memory --partitions {n} --append` (the test cluster, "
                    f"one topic of {n:,} partitions, replication factor 1; tracemalloc peak above the call's start, "
                    f"median of {args.rounds} rounds).\n\n"
                    "| partitions | call | peak per partition | at 300,000 partitions | seconds |\n|---|---|---|---|---|\n"
                    f"| {n:,} | AdminClient.list_offsets (a future per partition) | {result['public_peak_bytes_per_partition']:,} B | "
                    f"{result['public_mb_at_300000']:,} MB | {result['public_seconds']} |\n"
                    f"| {n:,} | ClusterGateway.list_offsets (requests of {OFFSETS_CHUNK:,}, a future each) | "
                    f"{result['gateway_peak_bytes_per_partition']:,} B | {result['gateway_mb_at_300000']:,} MB | "
                    f"{result['gateway_seconds']} |\n"
                    f"| {n:,} | ClusterGateway.metadata, nothing changed (librdkafka's list_topics) | "
                    f"{result['metadata_peak_bytes_per_partition']:,} B | {result['metadata_mb_at_300000']:,} MB | "
                    f"{result['metadata_seconds']} |\n")


if __name__ == "__main__":
    main()
