"""The lag windows' and time tables' columns (consumers_app/lag_windows.py, time_tables.py) on their
own: time per sample and bytes held, for a quiet cluster, a mixed one and a busy one (issue 11).

`.venv/bin/python -m bench.lag_columns [--windows N] [--topics T] [--samples S] [--module FILE]`
records S samples into N windows (10 entries each, one group) and N time tables (60 points) of
partitions in T topics, judging every window and interpolating every time lag at each sample, for
three kinds of partitions:
  - quiet: offsets that move by 3 a sample and lags of 2 (most partitions of a large cluster);
  - mixed: a fifth of the rows busy (offsets that move by 50,000 a sample, lags of 100,000);
  - busy: every row busy.
`--module` loads the columns from another file (an older version, as `git show
REV:consumers_app/lagcolumns.py` writes it for revisions that kept both there) to compare. Prints
one line per kind: milliseconds a sample after the first, the first (every row handed out: a
sampling process's first pass), and the windows' and tables' arrays in MB.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from types import SimpleNamespace
from typing import Any

import numpy as np


def load(path: str | None) -> Any:
    """What holds WindowColumns and TimeColumns: the current modules, or the file at `path`."""
    if path is None:
        from consumers_app import lag_windows, time_tables

        return SimpleNamespace(WindowColumns=lag_windows.WindowColumns, TimeColumns=time_tables.TimeColumns)
    spec = importlib.util.spec_from_file_location("lagcolumns_compared", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def held(columns: Any, names: tuple[str, ...]) -> float:
    return sum(getattr(columns, n).nbytes for n in names if hasattr(columns, n)) / 1e6


def run(module: Any, kind: str, windows: int, samples: int, topics: int) -> tuple[float, float, float, float]:
    rng = np.random.default_rng(1)
    busy = np.zeros(windows, np.bool_)
    if kind == "busy":
        busy[:] = True
    elif kind == "mixed":
        busy[rng.random(windows) < 0.2] = True
    step = np.where(busy, 50_000, 3)
    lag = np.where(busy, 100_000, 2)
    cols = module.WindowColumns(size=10, min_distance=1.0, capacity=windows)
    tables = module.TimeColumns(limit=60, capacity=windows)
    per = -(-windows // topics)  # (partitions a topic)
    keys = [(f"t{i // per}", i % per) for i in range(windows)]
    rows = cols.rows_of("g", tuple(keys))
    committed = rng.integers(0, 10**9, windows)
    spent = first = 0.0
    for s in range(samples):
        committed = committed + step
        ends = committed + lag
        at = 1000.0 + 3 * s
        listed = dict(zip(keys, ends.tolist(), strict=True))
        started = time.perf_counter()
        cols.record(rows, committed, ends, at, np.ones(windows, np.bool_))
        cols.status(rows, at)
        tables.add_all(listed, at)
        tables.time_lag(np.arange(windows), committed, at)
        if hasattr(cols, "settle"):
            cols.settle()
        if s:
            spent += time.perf_counter() - started
        else:
            first = time.perf_counter() - started
    return (spent / max(1, samples - 1), first,
            held(cols, ("rises", "gaps", "stamps", "origin", "count", "latest_end", "latest_gap")),
            held(tables, ("rises", "stamps", "origin", "count")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=300_000)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--module", help="a file defining WindowColumns and TimeColumns to load instead of the current ones")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    module = load(args.module)
    for kind in ("quiet", "mixed", "busy"):
        seconds, first, windows_mb, tables_mb = run(module, kind, args.windows, args.samples, args.topics)
        print(f"{kind:6s} {seconds * 1000:7.1f} ms a sample, the first {first * 1000:8.1f} ms; "
              f"windows {windows_mb:6.1f} MB, tables {tables_mb:6.1f} MB", flush=True)


if __name__ == "__main__":
    main()
