"""A reassignment's copy rate against its throttle (issue 9).

`.venv/bin/python -m bench.throttle [--throttle-mb 1] [--data-mb 24]` starts the test cluster (own
ports, see tests/support.py), writes --data-mb into one single-replica partition on broker 1, sets the
throttle configs a reassignment job sets (brokers_app.reassignment_moves.throttle_configs) and moves
the partition to broker 2 through the gateway, as a job does. Broker 2's copy is sampled from its log dir every second;
the rate over the copy (first to last sample strictly between empty and full) is compared with the
throttle. Throttles are removed at the end and checked gone. Appends to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime

from tests.support import ROOT, running_cluster


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--throttle-mb", type=float, default=1.0)
    parser.add_argument("--data-mb", type=int, default=24)
    args = parser.parse_args()

    from bench.run import setup_django

    setup_django()
    from confluent_kafka import Producer

    from brokers_app.reassignment_moves import THROTTLE_KEYS, Move, throttle_configs
    from brokers_app.reassignment_runner import remove_throttles
    from console import gateway

    rate = int(args.throttle_mb * 1024 * 1024)
    topic = "bench.throttle"
    with running_cluster() as cluster:
        cluster.tool("kafka-topics", "--create", "--topic", topic, "--replica-assignment", "1")
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 20, "batch.size": 1_000_000})
        value = bytes(range(256)) * 400  # 100 KiB
        for _ in range(args.data_mb * 10):
            producer.produce(topic, value=value, partition=0)
            producer.poll(0)
        assert producer.flush(60) == 0
        gw = gateway.for_bootstrap(cluster.bootstrap, timeout=10.0)
        size = gw.log_dir_sizes([1])[(topic, 0)][1]
        move = Move(topic, 0, (1,), (2,), size)
        brokers, topics = throttle_configs([move], rate)
        for b, cfg in brokers.items():
            gw.alter_configs("broker", str(b), cfg, [])
        for t, cfg in topics.items():
            gw.alter_configs("topic", t, cfg, [])
        started = time.monotonic()
        assert gw.alter_reassignments({(topic, 0): [2]}) == {(topic, 0): None}
        samples: list[tuple[float, int]] = []
        while True:
            copied = gw.log_dir_sizes([2]).get((topic, 0), {}).get(2, 0)
            samples.append((time.monotonic() - started, copied))
            if not gw.ongoing_reassignments():
                break
            time.sleep(1.0)
        elapsed = time.monotonic() - started
        middle = [(t, b) for t, b in samples if 0 < b < size]
        (t0, b0), (t1, b1) = middle[0], middle[-1]
        measured = (b1 - b0) / (t1 - t0)
        remove_throttles(gw, {"brokers": sorted(brokers), "topics": sorted(topics)})
        left = [v for v in gw.dynamic_configs("broker", ["1", "2"], THROTTLE_KEYS).values() if v]
        left += [v for v in gw.dynamic_configs("topic", [topic], THROTTLE_KEYS).values() if v]
    ratio = measured / rate
    text = "\n".join([
        f"\n## Reassignment throttle honoured (issue 9), {datetime.now(tz=UTC):%Y-%m-%d %H:%M} UTC\n",
        f"Command: `.venv/bin/python -m bench.throttle --throttle-mb {args.throttle_mb:g} --data-mb {args.data_mb}` "
        "(3-node test cluster; one partition of one replica on broker 1 moved to broker 2 under the throttle configs the "
        "console's jobs set; broker 2's copy sampled from its log dir every second).\n",
        "| throttle | data | whole move | copy rate measured (between first and last partial sample) | measured / throttle | throttle configs left after removal | budget |",
        "|---|---|---|---|---|---|---|",
        f"| {rate / 1048576:.2f} MiB/s | {size / 1048576:.1f} MiB | {elapsed:.1f} s | {measured / 1048576:.3f} MiB/s | {ratio:.2f} | "
        f"{len(left)} | within 20% (0.80-1.20) |",
        "",
    ])
    print(text)
    with open(ROOT / "docs" / "benchmarks.md", "a") as out:
        out.write(text)


if __name__ == "__main__":
    main()
