"""How fast this machine is right now, for reading a bench's figures against another run's.

The machines the benches run on are shared: the same code's figures moved by a factor of three to
four between two sessions (the watcher alone at 300,000 partitions: cycle p50 0.29 s in one, 1.19 s
in the next), with nothing in the code or the bench to say so. `bench.simulate` and
`bench.browser_push` add `machine_reference_seconds` to their JSON: a fixed pure-Python loop's best
time of three, taken before the run, to set beside another run's.
"""

from __future__ import annotations

import timeit


def _work() -> int:
    total = 0
    for i in range(2_000_000):
        total += i
    return total


def reference_seconds() -> float:
    """The best of three runs of a fixed loop (two million additions), in seconds."""
    return round(min(timeit.repeat(_work, number=1, repeat=3)), 3)


if __name__ == "__main__":
    print(reference_seconds())
