"""A reading process's side of the simulated cluster (issue 11): each new snapshot version read as a
web process reads it.

`TEST_REDIS_PORT=6395 .venv/bin/python -m bench.web_reads --partitions 300000 --groups 50000
--change-rate 0.01 --seconds 100` runs `bench.simulate` (the watcher on the simulated cluster) in a
child process, waits `--warmup` seconds (its model, first cycle and first passes), then reads the
snapshot with `store.load` every 50 ms for `--seconds`, as a web process does before rendering a
live fragment (same Redis, nothing else cached). Ends by printing one JSON line: versions read and
missed, each new version's read time and the time from its cycle's start (`taken_at`) to the end
of its read (p50 / p99 / max), and the child's own figures. The child and this process share the
machine's cores, as a web process and the watcher would on one host.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

from bench.run import setup_django


def quantile(values: list[float], q: float) -> float | None:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q))], 3) if ordered else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=300_000)
    parser.add_argument("--groups", type=int, default=50_000)
    parser.add_argument("--change-rate", type=float, default=0.01)
    parser.add_argument("--seconds", type=float, default=100)
    parser.add_argument("--warmup", type=float, default=75, help="seconds before reading (the watcher's warm-up)")
    args = parser.parse_args()
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.simulate", "--partitions", str(args.partitions), "--groups", str(args.groups),
         "--change-rate", str(args.change_rate), "--seconds", str(args.seconds + args.warmup)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=os.environ.copy())
    try:
        time.sleep(args.warmup)
        setup_django()
        from console.watcher import store

        reads: list[tuple[int, float, float]] = []
        seen: int | None = None
        first: int | None = None
        end = time.monotonic() + args.seconds
        while time.monotonic() < end and child.poll() is None:
            started = time.perf_counter()
            try:
                snap = store.load("sim")
            except store.StoreUnavailable:
                snap = None
            took = time.perf_counter() - started
            if snap is not None and snap.version != seen:
                if seen is None:
                    first = snap.version  # (the first read is of everything: not counted)
                elif snap.taken_at is not None:
                    reads.append((snap.version, took, time.time() - snap.taken_at))
                seen = snap.version
            time.sleep(0.05)
        out, _ = child.communicate(timeout=args.seconds + args.warmup + 600)
    finally:
        if child.poll() is None:
            child.kill()
    lines = [line for line in out.splitlines() if line.startswith("{")]
    watcher: dict[str, Any] = json.loads(lines[-1]) if lines else {}
    times, ages = [r[1] for r in reads], [r[2] for r in reads]
    span = (reads[-1][0] - (first or 0)) if reads else 0
    print(json.dumps({
        "versions_read": len(reads),
        "versions_missed": max(0, span - len(reads)),  # (written while a read ran: the next read catches up)
        "read_p50_seconds": quantile(times, 0.5), "read_p99_seconds": quantile(times, 0.99),
        "read_max_seconds": quantile(times, 1.0),
        "taken_to_read_p50_seconds": quantile(ages, 0.5), "taken_to_read_p99_seconds": quantile(ages, 0.99),
        "taken_to_read_max_seconds": quantile(ages, 1.0),
        "watcher": {k: watcher.get(k) for k in ("cycle_p50_seconds", "cycle_p99_seconds", "cycles_over_1s", "push_p50_seconds",
                                                 "push_p99_seconds", "pushes_over_2s", "spurious_events")},
    }), flush=True)


if __name__ == "__main__":
    main()
