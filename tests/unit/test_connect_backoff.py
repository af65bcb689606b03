"""The auto-restart schedule (connect_app/backoff.py): waits doubling from the base up to the cap,
counted from the failure (or the last restart), restarts counted within the window, then a give-up."""

from __future__ import annotations

from connect_app.backoff import Schedule, decide, delay, within

POLICY = Schedule(max_restarts=4, window_seconds=60, backoff_seconds=1.5, max_backoff_seconds=5)


def test_the_waits_double_up_to_the_cap() -> None:
    assert [delay(k, 1.5, 5) for k in range(5)] == [1.5, 3.0, 5, 5, 5]
    assert [delay(k, 1, 600) for k in range(4)] == [1, 2, 4, 8]
    assert delay(200, 1, 30) == 30  # (no overflow far along)


def test_only_restarts_within_the_window_count() -> None:
    assert within([10.0, 50.0, 69.0], 70.0, 60) == [50.0, 69.0]
    assert within([10.0], 70.0, 60) == []


def test_the_first_restart_waits_the_base_from_the_failure() -> None:
    assert decide(POLICY, [], failed_since=100.0, last_restart=None, now=101.0).action == "wait"
    waiting = decide(POLICY, [], failed_since=100.0, last_restart=None, now=101.0)
    assert waiting.due == 101.5 and waiting.attempt == 1
    go = decide(POLICY, [], failed_since=100.0, last_restart=None, now=101.5)
    assert (go.action, go.attempt, go.delay) == ("restart", 1, 1.5)


def test_each_next_restart_waits_longer_from_the_later_of_failure_and_last_restart() -> None:
    # Two restarts within the window: the third waits 5 s (1.5 * 4 = 6, capped), from the failure seen after the last.
    d = decide(POLICY, [100.0, 104.0], failed_since=105.0, last_restart=104.0, now=109.9)
    assert (d.action, d.due, d.attempt) == ("wait", 110.0, 3)
    assert decide(POLICY, [100.0, 104.0], failed_since=105.0, last_restart=104.0, now=110.0).action == "restart"
    # A failure seen before the last restart (a stale read) counts from the restart.
    assert decide(POLICY, [100.0], failed_since=90.0, last_restart=100.0, now=102.9).action == "wait"


def test_give_up_after_max_restarts_within_the_window_and_start_again_once_they_age_out() -> None:
    restarts = [100.0, 102.0, 106.0, 112.0]
    assert decide(POLICY, restarts, failed_since=113.0, last_restart=112.0, now=113.0).action == "give_up"
    # Sixty seconds on, the first two no longer count: the next restart waits as the third did.
    later = decide(POLICY, restarts, failed_since=165.0, last_restart=112.0, now=165.0)
    assert (later.action, later.attempt, later.due) == ("wait", 3, 170.0)
