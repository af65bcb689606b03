"""The metadata cycle first, in the watcher's process.

The cycle's thread and the sampling thread share one interpreter. Taking a sampling process's
pass in (DeltaMerger.apply, ClusterWatcher.merge) while a cycle runs makes the cycle wait for the
interpreter lock. A pass taken in a second later costs nothing anyone waits for; a cycle a second
later delays every change it carries. So a merge does its work in steps and gives way, between two steps, to a cycle
that asked for its turn; a cycle never starts while a step runs, and a merge never starts while a
cycle runs."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)

# The longest either side waits for the other: a cycle for one step of a merge, a merge for the
# cycles (each well under it). Past it, it goes on regardless (said in the log): a bug here must
# not stop the watcher.
WAIT_MAX_S = 10.0


class CycleFirst:
    __slots__ = ("_cond", "_cycles", "_merging")

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._cycles = 0  # cycles running or waiting for their turn
        self._merging = False  # a step of a merge runs

    def _wait(self, until_free: str) -> None:
        deadline = time.monotonic() + WAIT_MAX_S
        while self._merging if until_free == "merge" else self._cycles:
            left = deadline - time.monotonic()
            if left <= 0:
                log.warning("waited %g s for the watcher's %s to give way; going on", WAIT_MAX_S, until_free)
                return
            self._cond.wait(left)

    @contextmanager
    def cycle(self) -> Iterator[None]:
        """A metadata cycle: starts once the merge's current step, if one runs, has ended."""
        with self._cond:
            self._cycles += 1
            self._wait("merge")
        try:
            yield
        finally:
            with self._cond:
                self._cycles -= 1
                self._cond.notify_all()

    @contextmanager
    def merge(self) -> Iterator[None]:
        """Taking a pass in: starts when no cycle runs or waits; `give_way` between its steps."""
        with self._cond:
            self._wait("cycle")
            self._merging = True
        try:
            yield
        finally:
            with self._cond:
                self._merging = False
                self._cond.notify_all()

    @property
    def merging(self) -> bool:
        """Whether a step of a merge runs now."""
        return self._merging

    def give_way(self) -> None:
        """Between two steps of a merge: a cycle that asked for its turn runs first."""
        if not self._cycles:  # (read without the lock: a cycle asking just now waits one step more)
            return
        with self._cond:
            self._merging = False
            self._cond.notify_all()
            self._wait("cycle")
            self._merging = True
