"""How `manage.py watch` tells a child's end and paces its restarts."""

from __future__ import annotations

from console.management.commands.watch import MAX_PAUSE, STABLE_SECONDS, exit_reason, next_pause


def test_a_signal_and_an_exit_code_are_named() -> None:
    assert exit_reason(-6) == "signal SIGABRT"
    assert exit_reason(-11) == "signal SIGSEGV"
    assert exit_reason(3) == "exit code 3"


def test_a_child_that_ran_a_while_is_started_again_at_once() -> None:
    assert next_pause(8.0, STABLE_SECONDS + 1) == 0.0


def test_a_child_dying_at_start_is_started_again_after_a_growing_pause() -> None:
    pauses = [0.0]
    for _ in range(8):
        pauses.append(next_pause(pauses[-1], 2.0))
    assert pauses[1:5] == [1.0, 2.0, 4.0, 8.0]
    assert max(pauses) == MAX_PAUSE
