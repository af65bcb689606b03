"""After a leader move, the first browse call succeeds within its deadline (issue 8).

`.venv/bin/python -m bench.leadermove [--rounds N]` starts the test cluster (own ports, see
tests/support.py), creates a 6-partition RF3 topic, warms a long-lived gateway (as the web process
holds one) and then, each round, moves every partition's leader (rotate the replica lists with
kafka-reassign-partitions, then a preferred-leader election) and times the first calls made
through that same gateway afterwards: the newest messages of every partition (a browse) and the
end offsets. It reports how many of them failed, the added latency against calls before the
move, and how many client renewals and retries the gateway needed. Appends to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from datetime import UTC, datetime
from typing import Any

from tests.integration.oracle import topic_layout
from tests.support import ROOT, running_cluster, wait_for

PARTITIONS = 6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    from bench.run import setup_django

    setup_django()
    from confluent_kafka import Producer

    from console import gateway
    from console.gateway.messages import scan, scan_spec

    topic = "bench.leadermove"
    r: dict[str, Any] = {"rounds": []}
    with running_cluster() as cluster:
        cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", str(PARTITIONS), "--replication-factor", "3")
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
        for i in range(600):
            producer.produce(topic, value=f"m{i}".encode(), partition=i % PARTITIONS)
        producer.flush(30)
        gw = gateway.for_bootstrap(cluster.bootstrap, timeout=10.0)

        def browse() -> tuple[float, bool, str]:
            started = time.monotonic()
            try:
                spec = scan_spec.ScanSpec(topic=topic, start="newest", newest_n=3, limit=PARTITIONS * 3)
                records, _ = scan.scan(gw, spec, None)
                ends = gw.list_offsets([(topic, p) for p in range(PARTITIONS)], "latest")
                ok = len(records) == PARTITIONS * 3 and len(ends) == PARTITIONS
                return time.monotonic() - started, ok, "" if ok else f"{len(records)} records, {len(ends)} ends"
            except Exception as exc:  # noqa: BLE001 - counted as a failure
                return time.monotonic() - started, False, str(exc)[:200]

        warm = [browse() for _ in range(5)]
        assert all(ok for _, ok, _ in warm), warm
        baseline = statistics.median(t for t, _, _ in warm)
        for _round in range(args.rounds):
            steady = statistics.median(browse()[0] for _ in range(3))  # the same call, warm, just before the move
            before = topic_layout(cluster.tool("kafka-topics", "--describe", "--topic", topic))
            wanted: dict[int, list[int]] = {p: before[p]["replicas"][1:] + before[p]["replicas"][:1] for p in range(PARTITIONS)}
            plan = {"version": 1, "partitions": [{"topic": topic, "partition": p, "replicas": wanted[p]} for p in range(PARTITIONS)]}
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                json.dump(plan, f)
            cluster.tool("kafka-reassign-partitions", "--reassignment-json-file", f.name, "--execute")

            def reassigned(wanted: dict[int, list[int]] = wanted) -> bool:
                layout = topic_layout(cluster.tool("kafka-topics", "--describe", "--topic", topic))
                return all(layout[p]["replicas"] == wanted[p] for p in range(PARTITIONS))

            wait_for(reassigned, 60, what="the reassignment")
            cluster.tool("kafka-leader-election", "--election-type", "PREFERRED", "--all-topic-partitions")
            after = topic_layout(cluster.tool("kafka-topics", "--describe", "--topic", topic))
            moved = sum(1 for p in range(PARTITIONS) if after[p]["leader"] != before[p]["leader"])
            renewals, retries = gw.renewals, gw.retries
            took, ok, error = browse()
            r["rounds"].append({"moved": moved, "seconds": round(took, 3), "before": round(steady, 3), "ok": ok, "error": error,
                                "renewals": gw.renewals - renewals, "retries": gw.retries - retries})
            print(json.dumps(r["rounds"][-1]), flush=True)
            time.sleep(1)
    rounds = r["rounds"]
    added = ", ".join("%.0f ms" % ((x["seconds"] - x["before"]) * 1000) for x in rounds)
    firsts = [x["seconds"] for x in rounds]
    section = [
        f"## First browse after a leader move (issue 8), {datetime.now(tz=UTC):%Y-%m-%d %H:%M} UTC",
        "",
        "Command: `.venv/bin/python -m bench.leadermove --rounds " + str(args.rounds) + "` (3-node test cluster, "
        f"{PARTITIONS}-partition RF3 topic; each round rotates every replica list and runs a preferred-leader election, "
        "then times the first browse of every partition's newest messages plus an end-offsets read through the same "
        "long-lived gateway, as the web process holds it).",
        "",
        "| | value |",
        "|---|---|",
        f"| rounds | {len(rounds)} |",
        f"| partitions whose leader moved per round | {', '.join(str(x['moved']) for x in rounds)} |",
        f"| first calls after the move that failed | {sum(1 for x in rounds if not x['ok'])} |",
        f"| first call after the move, median / max | {statistics.median(firsts) * 1000:.0f} ms / {max(firsts) * 1000:.0f} ms |",
        f"| the same call just before each move (median of 3 per round), median | {statistics.median(x['before'] for x in rounds) * 1000:.0f} ms |",
        f"| added latency per round (first call after minus just before) | {added} |",
        f"| first calls of all, while warming up (median of 5) | {baseline * 1000:.0f} ms |",
        f"| admin client renewals / ListOffsets retries per round | {', '.join(str(x['renewals']) + '/' + str(x['retries']) for x in rounds)} |",
        "",
    ]
    text = "\n".join(section)
    print(text)
    with open(ROOT / "docs" / "benchmarks.md", "a") as out:
        out.write("\n" + text)


if __name__ == "__main__":
    main()
