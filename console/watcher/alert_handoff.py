"""The group alert rules in a thread of their own, beside a sampling process's passes.

A pass hands its groups over and goes on: the rules' database work (slow on a loaded machine or a
busy database) never lengthens a pass, which the watcher holds to its stall limit, nor delays the
samples the pass writes. Only the latest pass waits; one the thread had no time for is folded into it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from collections.abc import Set as AbstractSet

from console.snapshots.model import GroupState
from console.watcher.registry import AlertEvaluator

log = logging.getLogger(__name__)

Handed = tuple[Mapping[str, GroupState] | None, Mapping[tuple[str, int], int], float | None, AbstractSet[str] | None]


class GroupAlertsApart:
    """What `Sampler.alerts` is in a sampling process: `groups` returns at once."""

    def __init__(self, cluster: str, evaluator: AlertEvaluator) -> None:
        self.cluster = cluster
        self.evaluator = evaluator
        self._ready = threading.Condition()
        self._pending: Handed | None = None
        self._thread: threading.Thread | None = None

    def groups(self, groups: Mapping[str, GroupState] | None, ends: Mapping[tuple[str, int], int], now: float | None = None,
               moved: AbstractSet[str] | None = None) -> None:
        # (a copy of the mapping: the next pass may add and drop groups while the rules read these)
        handed: Handed = (dict(groups) if groups is not None else None, ends, now, moved)
        with self._ready:
            if self._pending is not None:  # (not evaluated yet: its groups stand if this pass read none, its moved topics count too)
                before = self._pending
                moved_all = None if before[3] is None or moved is None else set(before[3]) | set(moved)
                handed = (handed[0] if handed[0] is not None else before[0], ends, now, moved_all)
            self._pending = handed
            self._ready.notify()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"group-alerts-{self.cluster}", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            with self._ready:
                while self._pending is None:
                    self._ready.wait()
                handed, self._pending = self._pending, None
            try:
                self.evaluator.groups(*handed)
            except Exception:  # noqa: BLE001 - the rules must never stop the thread that runs them
                log.exception("evaluating the alert rules on the groups of %s failed", self.cluster)
