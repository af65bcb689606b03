"""What two of a metadata cycle's steps cost per changed topic or partition, timed alone.

At 1% of 300,000 partitions a second a cycle takes in about 3,000 partition changes over 2,600
topics of 30 partitions, and each of these steps runs once per changed topic or partition:

- `PartitionTable.of`: a changed topic's metadata rows (as the gateway and the simulator give them)
  made into the table the watcher compares and builds from;
- `diff._partition` for a leader moved alone (its ISR, replicas and min ISR as they were), against
  `diff._partition_all`, which looks at every kind of event.

    .venv/bin/python -m bench.per_change

Prints one JSON line, each figure the least of seven timings in microseconds (a machine running
other work shows in all of them alike: compare figures of one run).
"""

from __future__ import annotations

import json
import random
import timeit
from collections.abc import Callable
from typing import Any


def _least(call: Callable[[], Any], number: int = 5000, repeat: int = 7) -> float:
    return round(min(timeit.repeat(call, number=number, repeat=repeat)) / number * 1e6, 2)


def measure() -> dict[str, float]:
    from bench.run import setup_django

    setup_django()
    from console.gateway.types import PartitionTable
    from console.snapshots.model import PartitionState
    from console.watcher.diff import _partition, _partition_all

    rng = random.Random(1)
    layout = []
    for p in range(30):
        replicas = tuple(rng.sample(range(1, 101), 3))
        layout.append((replicas[0], replicas, replicas[: 2 + p % 2]))
    before = PartitionState(3, 1, [1, 2, 3], [1, 2, 3], [], 0, 100, 5, {})
    after = PartitionState(3, 2, [1, 2, 3], [1, 2, 3], [], 0, 100, 5, {})
    return {
        "partition_table_of_30_rows_us": _least(
            lambda: PartitionTable.of("sim.topic-000001", ((p, v[0], v[1], v[2], None) for p, v in enumerate(layout)))),
        "leader_moved_alone_event_us": _least(lambda: _partition("sim.topic-000001", before, after, 2, 2)),
        "leader_moved_every_kind_looked_at_us": _least(lambda: _partition_all("sim.topic-000001", before, after, 2, 2)),
    }


def main() -> None:
    print(json.dumps(measure()))


if __name__ == "__main__":
    main()
