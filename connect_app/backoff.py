"""The auto-restart schedule of a failed task: pure, no I/O (tests/unit/test_connect_backoff.py).

The k-th restart within the window (k = 0, 1, ...) waits `base * 2**k` seconds, at most `cap`,
counted from when the failure was seen (or the last restart, if later): the gaps between restarts
grow, and a task that fails at once does not turn into a loop of restarts. Once `max_restarts`
restarts lie within the window, the next failure is given up on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Schedule:
    max_restarts: int
    window_seconds: float
    backoff_seconds: float
    max_backoff_seconds: float


@dataclass(frozen=True)
class Decision:
    action: str  # "restart", "wait" or "give_up"
    due: float | None = None  # "wait": when the restart is due (epoch seconds)
    attempt: int = 0  # "restart": which restart within the window this is (1 = the first)
    delay: float = 0.0  # the backoff this restart waited


def delay(k: int, base: float, cap: float) -> float:
    """The wait before the k-th restart (0-based) within the window."""
    if k >= 64:
        return cap
    return min(base * (2 ** k), cap)


def within(restarts: Sequence[float], now: float, window: float) -> list[float]:
    """The restarts that still count: made less than `window` seconds ago."""
    return [r for r in restarts if now - r < window]


def decide(schedule: Schedule, restarts: Sequence[float], failed_since: float, last_restart: float | None, now: float) -> Decision:
    """What to do about a task failed since `failed_since`, restarted at `restarts` (epoch seconds)."""
    counted = within(restarts, now, schedule.window_seconds)
    k = len(counted)
    if k >= schedule.max_restarts:
        return Decision("give_up", attempt=k)
    wait = delay(k, schedule.backoff_seconds, schedule.max_backoff_seconds)
    due = max(failed_since, last_restart or failed_since) + wait
    if now >= due:
        return Decision("restart", attempt=k + 1, delay=wait)
    return Decision("wait", due=due, attempt=k + 1, delay=wait)
