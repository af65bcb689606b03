"""consumers_app.lagstatus: Burrow's partition and group lag status rules (ALGORITHMS.md section 2)."""

from __future__ import annotations

import json

import pytest

from consumers_app.lagstatus import (
    ERR,
    NOTFOUND,
    OK,
    REWIND,
    STALL,
    STOP,
    WARN,
    Commit,
    PartitionResult,
    PartitionWindow,
    evaluate_group,
    evaluate_partition,
    group_status_of,
)

STEP = 10.0  # seconds between refreshes in these vectors


def window(offsets: list[int], ends: list[int], size: int = 10) -> PartitionWindow:
    """A window fed one refresh every STEP seconds from t=0: committed offsets and the end offsets seen with them."""
    assert len(offsets) == len(ends)
    w = PartitionWindow(size=size)
    for i, (committed, end) in enumerate(zip(offsets, ends, strict=True)):
        assert w.record(committed, end, i * STEP)
    return w


def last_at(w: PartitionWindow) -> float:
    return w.commits[-1].at


def soon(w: PartitionWindow) -> float:
    """A moment just after the last refresh, well within the STOP limit."""
    return last_at(w) + 1


# Rule 1 --------------------------------------------------------------------------------------------


def test_empty_window_is_ok():
    assert evaluate_partition(PartitionWindow(), now=1000) == OK


def test_under_full_window_is_ok_even_when_it_looks_stalled():
    w = window([100] * 5, [200] * 5)
    assert evaluate_partition(w, soon(w)) == OK


def test_under_full_window_is_evaluated_once_the_minimum_fullness_is_met():
    w = window([100] * 5, [200] * 5)
    assert evaluate_partition(w, soon(w), min_fullness=0.5) == STALL


# Rule 2 --------------------------------------------------------------------------------------------


def test_current_lag_zero_is_ok_even_after_a_stall():
    w = window([100] * 10, [200] * 9 + [100])
    assert w.current_lag == 0
    assert evaluate_partition(w, now=10_000) == OK


def test_rewound_consumer_that_has_caught_up_is_ok():
    offsets = [100, 110, 120, 50, 60, 70, 80, 90, 100, 110]
    w = window(offsets, [o + 5 for o in offsets[:-1]] + [110])
    assert evaluate_partition(w, soon(w)) == OK
    behind = window(offsets, [o + 5 for o in offsets])
    assert evaluate_partition(behind, soon(behind), allowed_lag=5) == OK
    assert evaluate_partition(behind, soon(behind), allowed_lag=4) == REWIND


def test_current_lag_within_the_allowed_lag_is_ok():
    w = window([100] * 10, [105] * 10)
    assert evaluate_partition(w, soon(w), allowed_lag=5) == OK
    assert evaluate_partition(w, soon(w), allowed_lag=4) == STALL


def test_committed_offset_beyond_the_end_offset_counts_as_no_lag():
    w = window([120], [100], size=1)
    assert w.commits[0].lag == 0
    assert w.current_lag == 0


# Rule 3 --------------------------------------------------------------------------------------------


def advancing() -> PartitionWindow:
    """A consumer that advances and gains (lag 1000 down to 955); every end offset seen is beyond its last commit."""
    offsets = [1000 + 10 * i for i in range(10)]
    return window(offsets, [o + 1000 - 5 * i for i, o in enumerate(offsets)])


def test_advancing_consumer_is_ok():
    w = advancing()
    assert evaluate_partition(w, soon(w)) == OK


def test_no_commit_for_longer_than_the_window_spans_is_stop():
    w = advancing()  # spans 90 s
    assert evaluate_partition(w, last_at(w) + 90.5) == STOP


def test_no_commit_for_exactly_the_window_span_is_not_stop():
    w = advancing()
    assert evaluate_partition(w, last_at(w) + 90) == OK


def test_stop_is_suppressed_when_the_consumer_was_caught_up_recently():
    # Caught up at the first refresh (end offset 1000 = committed), then the producer went on and the consumer stopped.
    caught_up = window([1000] * 10, [1000 + 10 * i for i in range(10)])
    assert evaluate_partition(caught_up, now=10_000) == OK
    never_caught_up = window([1000] * 10, [1001 + 10 * i for i in range(10)])
    assert evaluate_partition(never_caught_up, now=10_000) == STOP


def test_stop_is_suppressed_when_the_last_commit_passed_an_end_offset_seen_in_the_window():
    # The end offset seen at the first refresh (1100) is below the last commit (1900): Burrow counts that as caught up.
    offsets = [1000 + 100 * i for i in range(10)]
    w = window(offsets, [o + 100 - i for i, o in enumerate(offsets)])
    assert evaluate_partition(w, now=10_000) == OK


def test_stop_wins_over_rewind_and_stall():
    stalled = window([100] * 10, [200] * 10)
    assert evaluate_partition(stalled, last_at(stalled) + 91) == STOP


# Rule 4 --------------------------------------------------------------------------------------------


def test_offset_going_back_for_good_is_rewind():
    offsets = [100, 110, 120, 50, 60, 70, 80, 90, 100, 110]
    w = window(offsets, [o + 5 for o in offsets])
    assert evaluate_partition(w, soon(w)) == REWIND


def test_rewind_that_gets_back_to_the_earlier_level_is_not_rewind():
    offsets = [100, 110, 120, 50, 60, 70, 80, 90, 100, 120]
    w = window(offsets, [o + 5 for o in offsets[:-1]] + [121])
    assert evaluate_partition(w, soon(w)) == OK


def test_rewind_is_reported_even_when_the_lag_was_once_within_the_allowed_lag():
    offsets = [100, 110, 120, 50, 60, 70, 80, 90, 100, 110]
    w = window(offsets, [100] + [o + 5 for o in offsets[1:]])
    assert w.commits[0].lag == 0
    assert evaluate_partition(w, soon(w)) == REWIND


# Rule 5 --------------------------------------------------------------------------------------------


def test_stalled_consumer_is_stall():
    w = window([100] * 10, [150 + i for i in range(10)])
    assert evaluate_partition(w, soon(w)) == STALL


def test_consumer_that_never_moved_but_had_no_lag_once_is_ok():
    w = window([100] * 10, [100] + [150] * 9)
    assert evaluate_partition(w, soon(w)) == OK


def test_consumer_whose_lag_never_decreases_is_warn():
    offsets = [100 + 10 * i for i in range(10)]
    lags = [10, 10, 12, 15, 15, 20, 21, 22, 30, 30]
    w = window(offsets, [o + lag for o, lag in zip(offsets, lags, strict=True)])
    assert evaluate_partition(w, soon(w)) == WARN


def test_lag_that_decreased_once_is_ok():
    offsets = [100 + 10 * i for i in range(10)]
    lags = [10, 12, 11, 15, 15, 20, 21, 22, 30, 30]
    w = window(offsets, [o + lag for o, lag in zip(offsets, lags, strict=True)])
    assert evaluate_partition(w, soon(w)) == OK


def test_growing_lag_that_was_once_within_the_allowed_lag_is_ok():
    offsets = [100 + 10 * i for i in range(10)]
    lags = [3, 10, 12, 15, 15, 20, 21, 22, 30, 30]
    w = window(offsets, [o + lag for o, lag in zip(offsets, lags, strict=True)])
    assert evaluate_partition(w, soon(w), allowed_lag=3) == OK
    assert evaluate_partition(w, soon(w), allowed_lag=2) == WARN


# The window --------------------------------------------------------------------------------------


def test_commit_sooner_than_the_minimum_distance_replaces_the_previous_keeping_its_time():
    w = PartitionWindow(min_distance=1.0)
    w.record(100, 150, at=10.0)
    w.record(105, 160, at=10.6)
    assert w.commits == [Commit(offset=105, at=10.0, lag=55)]
    assert w.end_offsets == [160]
    w.record(110, 160, at=11.0)  # 1 s after the kept time: a new entry
    assert [c.at for c in w.commits] == [10.0, 11.0]


def test_unchanged_offset_after_the_minimum_distance_is_a_new_entry():
    w = PartitionWindow(min_distance=1.0)
    w.record(100, 150, at=10.0)
    w.record(100, 150, at=15.0)
    assert [(c.offset, c.at) for c in w.commits] == [(100, 10.0), (100, 15.0)]


def test_unchanged_offset_of_a_group_without_members_is_no_commit_so_stop_can_fire():
    w = PartitionWindow(size=3, min_distance=1.0)
    for i, (offset, end) in enumerate([(100, 150), (110, 170), (120, 190)]):
        w.record(offset, end, at=i * 10.0)  # a member committing every 10 s, falling behind
    for at in (30.0, 40.0, 50.0):
        assert w.record(120, 250, at=at, committing=False)  # the group is empty now: nothing commits
    assert [c.at for c in w.commits] == [0.0, 10.0, 20.0]
    assert w.current_lag == 130  # the latest end offset still counts
    assert evaluate_partition(w, 50.0) == STOP  # 30 s since the last commit > the 20 s the window spans
    w.record(20, 250, at=60.0, committing=False)  # but a changed offset (a reset) is a commit
    assert [c.offset for c in w.commits] == [110, 120, 20]
    assert evaluate_partition(w, 61.0) == REWIND


def test_unchanged_offset_of_a_group_with_members_is_a_new_entry_so_a_stall_is_seen():
    w = PartitionWindow(size=3, min_distance=1.0)
    for at in (0.0, 10.0, 20.0):
        w.record(100, 150 + int(at), at=at, committing=True)
    assert len(w.commits) == 3 and evaluate_partition(w, 21.0) == STALL


def test_latest_end_offset_survives_a_trip_through_json():
    w = PartitionWindow(size=2)
    w.record(100, 150, at=0.0)
    w.record(100, 180, at=10.0, committing=False)
    copy = PartitionWindow.from_dict(json.loads(json.dumps(w.to_dict())))
    assert copy == w and copy.current_lag == 80


def test_observation_older_than_the_last_entry_is_dropped():
    w = PartitionWindow()
    w.record(100, 150, at=10.0)
    assert not w.record(90, 150, at=5.0)
    assert w.commits == [Commit(100, 10.0, 50)]


def test_window_keeps_only_the_last_w_commits_and_end_offsets():
    w = PartitionWindow(size=3)
    for i in range(5):
        w.record(100 + i, 200 + i, at=float(i * 10))
    assert [c.offset for c in w.commits] == [102, 103, 104]
    assert w.end_offsets == [202, 203, 204]
    assert w.fullness == 1.0


def test_window_survives_a_trip_through_json():
    w = advancing()
    copy = PartitionWindow.from_dict(json.loads(json.dumps(w.to_dict())))
    assert copy == w
    assert evaluate_partition(copy, last_at(w) + 91) == STOP


# Group status ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("partition", "group"), [(OK, OK), (WARN, WARN), (STOP, ERR), (STALL, ERR), (REWIND, ERR), (NOTFOUND, NOTFOUND)]
)
def test_partition_status_maps_to_group_status(partition, group):
    assert group_status_of(partition) == group


def test_unknown_partition_status_is_refused():
    with pytest.raises(ValueError):
        group_status_of("BROKEN")


def part(status: str, lag: int | None = 0, fullness: float = 1.0) -> PartitionResult:
    return PartitionResult(status, lag, fullness)


def test_group_with_no_partitions_is_notfound():
    result = evaluate_group({})
    assert result.status == NOTFOUND
    assert result.max_lag_partition is None and result.total_lag == 0 and result.complete == 0.0


def test_notfound_ranks_below_ok():
    assert evaluate_group({("t", 0): part(NOTFOUND), ("t", 1): part(OK)}).status == OK
    assert evaluate_group({("t", 0): part(NOTFOUND)}).status == NOTFOUND


def test_group_takes_the_worst_partition_status():
    assert evaluate_group({("t", 0): part(OK), ("t", 1): part(WARN)}).status == WARN
    assert evaluate_group({("t", 0): part(WARN), ("t", 1): part(STALL), ("t", 2): part(OK)}).status == ERR
    assert evaluate_group({("t", 0): part(REWIND), ("t", 1): part(WARN)}).status == ERR


def test_group_reports_largest_lag_total_lag_and_completeness():
    result = evaluate_group(
        {
            ("a", 0): part(OK, lag=5, fullness=1.0),
            ("b", 1): part(WARN, lag=40, fullness=0.5),
            ("b", 0): part(OK, lag=40, fullness=1.0),
            ("c", 0): part(OK, lag=None, fullness=0.0),
        }
    )
    assert result.max_lag_partition == ("b", 0)  # ties go to the first in (topic, partition) order
    assert result.max_lag == 40
    assert result.total_lag == 85
    assert result.complete == 0.5


def test_group_without_lag_still_names_a_partition_with_the_largest_lag():
    result = evaluate_group({("b", 0): part(OK, lag=0), ("a", 1): part(OK, lag=0), ("c", 0): part(OK, lag=None)})
    assert (result.max_lag_partition, result.max_lag, result.total_lag) == (("a", 1), 0, 0)


def test_group_with_only_unknown_lags_has_no_largest_lag():
    result = evaluate_group({("a", 0): part(OK, lag=None)})
    assert (result.max_lag_partition, result.max_lag) == (None, None)
