"""What a metadata cycle costs for a given number of changes: CPU-seconds of the cycle's thread.

bench.simulate runs the watcher as it runs for real, against a model changing on its own clock, and
its cycle time is a fixed point of the two (a slower cycle takes in more changes, which make it
slower), on cores shared with the model and the sampling process: on this 2-core machine its cycle
p50 at 300,000 partitions moves 30% from one run of the same code to the next. This bench holds the
work fixed to compare two versions of the code: the model (bench.simulate's, in this process)
makes exactly `--changes` partition changes (leader moves, ISR shrinks and expansions, as
bench.simulate's do) between cycles, no sampling pass runs meanwhile (the offsets stay as the
first pass read them), and each cycle's CPU time in its own thread is taken.

    .venv/bin/python -m bench.cycle_cost --partitions 300000 --changes 6000 --cycles 15

It prints one JSON line: the CPU-seconds of a cycle (median and least), the topics a cycle built
(their metadata changed) and serialised, and the CPU per topic built. 6,000 changes a cycle is
what a cycle of about 2 s takes in at 1% of 300,000 partitions a second.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

from bench.simulate import Model, SimGateway, measured


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from bench.run import setup_django

    os.environ["CONSOLE_PROCESS"] = "watcher"
    setup_django()
    from django.conf import settings
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    settings.ANALYTICS_SAMPLES = False
    from console.watcher.loop import ClusterWatcher
    from console.watcher.memory import tune_gc

    model = Model(args.partitions, args.groups, args.brokers, args.partitions_per_topic)
    gw = SimGateway(model, 0.0)
    watcher = ClusterWatcher("sim", "cycle-cost", gw=gw, remote=False, events_thread=True)  # type: ignore[arg-type]
    watcher.cycle()
    tune_gc()
    watcher.sample_offsets()  # (one pass: every topic's offsets, sizes and groups, then none until the end)
    watcher.cycle()
    cpu: list[float] = []
    built: list[int] = []
    serialised: list[int] = []
    for i in range(args.warmup + args.cycles):
        model.step(0.0, 0.0, args.changes)
        before = time.thread_time()
        snap, _changes = watcher.cycle()
        took = time.thread_time() - before
        watcher.publisher.flush()  # (the events of this cycle written before the next: not measured)
        if i >= args.warmup:
            cpu.append(took)
            built.append(len(snap.topics) - watcher.topics_reused)
            serialised.append(watcher.topics_serialised)
    watcher.close()
    per_topic = sorted(c / b for c, b in zip(cpu, built, strict=True) if b)
    return {
        "partitions": args.partitions,
        "changes_per_cycle": args.changes,
        "cycles": len(cpu),
        "cycle_cpu_p50_seconds": round(statistics.median(cpu), 4),
        "cycle_cpu_min_seconds": round(min(cpu), 4),
        "topics_built_per_cycle": round(statistics.mean(built)),
        "topics_serialised_per_cycle": round(statistics.mean(serialised)),
        "cpu_per_topic_built_p50_us": round(statistics.median(per_topic) * 1e6, 1) if per_topic else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=300_000)
    parser.add_argument("--groups", type=int, default=1000, help="(groups are not what a metadata cycle is about)")
    parser.add_argument("--brokers", type=int, default=100)
    parser.add_argument("--partitions-per-topic", type=int, default=30)
    parser.add_argument("--changes", type=int, default=6000, help="partitions changed before each cycle")
    parser.add_argument("--cycles", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3)
    measured(measure, parser.parse_args())


if __name__ == "__main__":
    main()
