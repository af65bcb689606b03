"""Planner speed and movement at scale (issue 9): 30,000 partitions on 6 brokers.

`.venv/bin/python -m bench.placement [--partitions 30000] [--brokers 6]` builds a synthetic cluster
(3 racks, RF 3, topic sizes spread over four orders of magnitude, one extra broker that holds nothing)
and times plan() for each request kind, with --generate's expected movement computed beside it.
Reports replicas moved against the minimum that must move (for a decommission: exactly the replicas on
the retired broker; for spreading onto the empty broker: its fair share), and appends to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import random
import time
from datetime import UTC, datetime

from bench.run import setup_django


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--partitions", type=int, default=30_000)
    parser.add_argument("--brokers", type=int, default=6)
    parser.add_argument("--no-append", action="store_true")
    args = parser.parse_args()
    setup_django()
    from brokers_app.placement.model import Broker, ClusterLayout, PartitionInfo, PlanRequest
    from brokers_app.placement.planner import plan

    rng = random.Random(7)
    ids = list(range(1, args.brokers + 1))
    brokers = tuple(Broker(b, f"r{b % 3}") for b in ids)

    def layout_on(hosts: list[int]) -> ClusterLayout:
        """RF 3 round-robin over `hosts` from a random start (as Kafka places new topics): balanced."""
        partitions = []
        for t in range(args.partitions // 30):
            size = int(10 ** rng.uniform(5, 9))
            for n in range(30):
                start = rng.randrange(len(hosts))
                replicas: list[int] = []
                k = start
                while len(replicas) < 3:
                    b = hosts[k % len(hosts)]
                    if b not in replicas:
                        replicas.append(b)
                    k += 1
                partitions.append(PartitionInfo(f"topic-{t:05d}", n, tuple(replicas), replicas[0], size))
        return ClusterLayout(brokers, tuple(partitions))

    full = layout_on(ids)  # every broker populated
    new = ids[-1]
    with_new = layout_on(ids[:-1])  # the last broker just added: it holds nothing yet
    on_broker_1 = sum(1 for p in full.partitions if 1 in p.replicas)
    fair_share = (3 * len(with_new.partitions)) // len(ids)
    cases = [
        ("decommission broker 1", full, PlanRequest.decommission([1]), on_broker_1),
        (f"spread onto new broker {new}", with_new, PlanRequest.add_brokers([new]), fair_share),
        ("rebalance whole cluster (new broker empty)", with_new, PlanRequest.rebalance(), fair_share),
    ]
    rows = []
    for name, layout, request, minimum in cases:
        t0 = time.perf_counter()
        result = plan(layout, request, compare_with_generate=False)
        seconds = time.perf_counter() - t0
        t1 = time.perf_counter()
        result_g = plan(layout, request, compare_with_generate=True)
        with_generate = time.perf_counter() - t1
        gen = result_g.generate
        rows.append((name, len(layout.partitions), seconds, with_generate, result.replicas_to_move, minimum,
                     result.replicas_to_move / minimum if minimum else 0.0, gen.replicas if gen else None,
                     result.spread_after.replicas, result.spread_after.leaders))
        print(f"{name}: {seconds:.2f} s, moved {result.replicas_to_move} replicas (minimum {minimum}), "
              f"--generate ~{gen.replicas if gen else 0:.0f}; spread after {result.spread_after}")
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"\n## Replica placement planner (issue 9), {stamp}\n",
        f"Command: `.venv/bin/python -m bench.placement --partitions {args.partitions} --brokers {args.brokers}`. "
        "Machine: 2 cores, Python 3.11.7; pure Python, no Kafka. Synthetic cluster: 3 racks, RF 3, 30 partitions per topic, "
        "sizes 100 kB to 1 GB; the decommission on a balanced cluster of all brokers, the others with the last broker "
        "empty (just added).\n",
        "| request | partitions | plan time | plan + --generate estimate | replicas moved | minimum that must move | ratio | --generate moves (expected) | replica spread after | leader spread after | budget |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, n, s, sg, moved, minimum, ratio, gen_moves, rs, ls in rows:
        lines.append(f"| {name} | {n:,} | {s:.2f} s | {sg:.2f} s | {moved:,} | {minimum:,} | {ratio:.2f} | "
                     f"{'' if gen_moves is None else f'{gen_moves:,.0f}'} | {rs} | {ls} | <= 5 s, ratio <= 1.2 |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_append:
        from tests.support import ROOT

        with open(ROOT / "docs" / "benchmarks.md", "a") as f:
            f.write(text)


if __name__ == "__main__":
    main()
