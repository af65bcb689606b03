"""How many carried topics' sampled changes a metadata cycle takes (sampled_share.SampledShare): a pass's
changes spread over half the time to the next pass instead of taken in a burst."""

from __future__ import annotations

import pytest

from console.watcher import sampled_share
from console.watcher.sampled_share import SampledShare


def passes_every(seconds: float, count: int = 4) -> SampledShare:
    clock = [1000.0]
    share = SampledShare(clock=lambda: clock[0])
    for _ in range(count):
        share.merged()
        clock[0] += seconds
    return share


def test_before_two_passes_a_cycle_takes_what_the_limit_allows() -> None:
    share = SampledShare()
    assert share.period() is None
    assert share.take(6000, 3000, 1.0) == 3000
    share.merged()
    assert share.period() is None
    assert share.take(6000, 3000, 1.0) == 3000


def test_a_pass_is_spread_over_half_the_time_to_the_next_one() -> None:
    share = passes_every(14.0)
    assert share.period() == 14.0
    taken, due, cycles = [], 6000, 0
    while due:
        n = share.take(due, 3000, 1.0)
        taken.append(n)
        due -= n
        cycles += 1
    # 7 cycles (half of 14 s at one a second), each the same share, the last what is left.
    assert taken == [858] * 6 + [6000 - 6 * 858]
    assert cycles == int(sampled_share.SPREAD_SHARE * 14.0)


def test_a_new_pass_arriving_before_the_backlog_is_in_is_spread_again_with_what_is_left() -> None:
    share = passes_every(10.0)  # 5 cycles
    assert share.take(5000, 3000, 1.0) == 1000
    assert share.take(4000, 3000, 1.0) == 1000
    # A new pass marks 6,000 more: 9,000 due, spread over the next 5 cycles.
    assert share.take(9000, 3000, 1.0) == 1800
    # Topics built anew by their metadata leave the backlog: the same share, not recomputed.
    assert share.take(7000, 3000, 1.0) == 1800


def test_few_topics_go_in_at_once_and_never_more_than_the_limit() -> None:
    share = passes_every(30.0)
    assert share.take(sampled_share.SPREAD_FLOOR, 3000, 1.0) == sampled_share.SPREAD_FLOOR  # (at once, however far apart the passes)
    assert share.take(2000, 3000, 1.0) == sampled_share.SPREAD_FLOOR  # (15 cycles: 134 each, raised to the floor)
    assert share.take(40, 7, 1.0) == 7  # (the floor within the limit)
    fast = passes_every(1.5)  # (passes closer than two cycles: no spreading)
    assert fast.take(6000, 3000, 1.0) == 3000
    assert fast.take(2500, 3000, 1.0) == 2500


@pytest.mark.parametrize("interval", [0.5, 2.0])
def test_the_cycles_counted_follow_the_metadata_interval(interval: float) -> None:
    share = passes_every(12.0)
    cycles = int(sampled_share.SPREAD_SHARE * 12.0 / interval)
    assert share.take(12000, 12000, interval) == -(-12000 // cycles)


@pytest.mark.parametrize(("apart", "share"), [(0.5, 1000), (2.0, 2000)])
def test_the_cycles_are_counted_at_the_time_between_them_never_longer_than_the_interval(apart: float, share: int) -> None:
    """A busy cluster is polled every WATCHER_BUSY_INTERVAL: cycles 0.5 s apart spread a pass over
    twice the cycles counted at one a second (the same half of the time to the next pass); cycles
    2 s apart count as one a second, as before (never a larger share)."""
    clock = [1000.0]
    spread = SampledShare(clock=lambda: clock[0])
    for _ in range(4):
        spread.merged()
        clock[0] += 12.0
    for _ in range(3):  # (cycles before the pass, each taking the few topics due at once)
        assert spread.take(10, 3000, 1.0) == 10
        clock[0] += apart
    assert spread.take(12000, 12000, 1.0) == share  # (12 or 6 cycles in the 6 s)
