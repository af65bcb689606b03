"""The group alert rules beside a sampling process's passes: a pass never waits for them."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from console.watcher.alert_handoff import GroupAlertsApart


class SlowRules:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.release = threading.Event()
        self.entered = threading.Event()

    def snapshot(self, snap: Any) -> None:
        return None

    def groups(self, groups: Mapping[str, Any] | None, ends: Mapping[tuple[str, int], int], now: float | None = None,
               moved: AbstractSet[str] | None = None) -> None:
        self.entered.set()
        self.release.wait(10)
        self.calls.append((None if groups is None else sorted(groups), dict(ends), now, None if moved is None else sorted(moved)))


def test_a_pass_goes_on_while_the_rules_work_and_passes_they_had_no_time_for_are_folded_into_the_latest() -> None:
    rules = SlowRules()
    apart = GroupAlertsApart("c", rules)
    started = time.monotonic()
    apart.groups({"g1": object()}, {("t", 0): 1}, 1.0, {"t"})  # type: ignore[dict-item]
    assert rules.entered.wait(5)
    apart.groups({"g2": object()}, {("t", 0): 2}, 2.0, {"u"})  # type: ignore[dict-item]
    apart.groups(None, {("t", 0): 3}, 3.0, {"v"})  # (a pass that read no groups: the last handed stand)
    assert time.monotonic() - started < 1, "the passes waited for the rules"
    rules.release.set()
    deadline = time.monotonic() + 5
    while len(rules.calls) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert rules.calls == [(["g1"], {("t", 0): 1}, 1.0, ["t"]), (["g2"], {("t", 0): 3}, 3.0, ["u", "v"])]


def test_an_unknown_set_of_moved_topics_stays_unknown_when_folded() -> None:
    rules = SlowRules()
    apart = GroupAlertsApart("c", rules)
    apart.groups({}, {}, 1.0, {"t"})
    assert rules.entered.wait(5)
    apart.groups({}, {}, 2.0, None)
    apart.groups({}, {}, 3.0, {"u"})
    rules.release.set()
    deadline = time.monotonic() + 5
    while len(rules.calls) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert rules.calls[1][3] is None
