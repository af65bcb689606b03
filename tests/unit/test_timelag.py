"""consumers_app.timelag: kafka-lag-exporter's offset/time table and time lag (ALGORITHMS.md section 3)."""

from __future__ import annotations

import json

import pytest

from consumers_app.timelag import (
    INSERTED,
    NEVER,
    NON_MONOTONIC,
    OUT_OF_ORDER,
    UPDATED,
    OffsetTimeTable,
    Point,
    catch_up_forecast,
    group_time_lag,
    predicted_time,
    time_lag,
)


def table(*points: tuple[int, float], limit: int = 60) -> OffsetTimeTable:
    t = OffsetTimeTable(limit=limit)
    for offset, at in points:
        assert t.add(offset, at) in (INSERTED, UPDATED)
    return t


def pts(t: OffsetTimeTable) -> list[tuple[int, float]]:
    return [(p.offset, p.at) for p in t.points]


# The table ---------------------------------------------------------------------------------------


def test_points_are_kept_newest_last():
    t = table((100, 10.0), (150, 20.0), (300, 30.0))
    assert pts(t) == [(100, 10.0), (150, 20.0), (300, 30.0)]


def test_point_as_old_as_the_newest_is_rejected():
    t = table((100, 10.0))
    assert t.add(200, 10.0) == OUT_OF_ORDER
    assert pts(t) == [(100, 10.0)]


def test_point_older_than_the_newest_is_rejected():
    t = table((100, 10.0))
    assert t.add(200, 5.0) == OUT_OF_ORDER
    assert pts(t) == [(100, 10.0)]


def test_offset_lower_than_the_newest_is_rejected():
    t = table((100, 10.0))
    assert t.add(99, 20.0) == NON_MONOTONIC
    assert pts(t) == [(100, 10.0)]


def test_flat_run_keeps_only_its_first_and_last_point():
    t = table((50, 0.0), (100, 10.0), (100, 20.0))
    assert t.add(100, 30.0) == UPDATED
    assert t.add(100, 40.0) == UPDATED
    assert pts(t) == [(50, 0.0), (100, 10.0), (100, 40.0)]


def test_second_point_of_a_flat_run_is_inserted():
    t = table((50, 0.0), (100, 10.0))
    assert t.add(100, 20.0) == INSERTED
    assert t.add(120, 30.0) == INSERTED
    assert pts(t) == [(50, 0.0), (100, 10.0), (100, 20.0), (120, 30.0)]


def test_table_slides_dropping_the_oldest_point():
    t = table(*[(100 * i, float(i)) for i in range(5)], limit=3)
    assert pts(t) == [(200, 2.0), (300, 3.0), (400, 4.0)]


def test_rate_is_messages_per_second_over_the_table():
    assert table((100, 10.0), (400, 20.0), (700, 40.0)).rate() == 20.0
    assert table((100, 10.0)).rate() is None


def test_table_survives_a_trip_through_json():
    t = table((100, 10.5), (200, 20.25), limit=7)
    copy = OffsetTimeTable.from_dict(json.loads(json.dumps(t.to_dict())))
    assert copy == t
    assert copy.points[0] == Point(100, 10.5)


# Time lag ----------------------------------------------------------------------------------------


def test_committed_offset_equal_to_the_newest_point_has_no_time_lag():
    assert time_lag(table((100, 10.0), (200, 20.0)), 200, now=1000.0) == 0.0
    assert time_lag(table((200, 20.0)), 200, now=1000.0) == 0.0


def test_time_lag_with_fewer_than_two_points_is_unknown():
    assert time_lag(OffsetTimeTable(), 100, now=50.0) is None
    assert time_lag(table((200, 20.0)), 100, now=50.0) is None


def test_time_lag_interpolates_between_neighbouring_points():
    t = table((100, 10.0), (200, 20.0), (600, 30.0))
    assert predicted_time(t, 150) == 15.0
    assert time_lag(t, 150, now=40.0) == 25.0
    assert time_lag(t, 300, now=40.0) == pytest.approx(40.0 - 22.5)


def test_offset_at_the_end_of_a_flat_run_was_last_the_end_at_the_runs_last_point():
    t = table((0, 0.0), (100, 10.0), (100, 20.0), (200, 30.0))
    assert predicted_time(t, 100) == 20.0
    assert time_lag(t, 100, now=40.0) == 20.0


def test_time_lag_extrapolates_below_the_oldest_point():
    t = table((100, 10.0), (150, 12.0), (200, 20.0))
    # On the oldest and newest points: 100 offsets per 10 s, so offset 50 was the end at t=5.
    assert time_lag(t, 50, now=30.0) == 25.0


def test_time_lag_extrapolates_above_the_newest_point():
    t = table((100, 10.0), (150, 12.0), (200, 20.0))
    assert predicted_time(t, 250) == 25.0
    assert time_lag(t, 250, now=30.0) == 5.0


def test_time_lag_is_never_negative():
    t = table((100, 10.0), (200, 20.0))
    assert time_lag(t, 250, now=21.0) == 0.0
    assert time_lag(t, 150, now=12.0) == 0.0


def test_flat_table_puts_a_lower_offset_before_its_oldest_point():
    t = table((100, 10.0), (100, 30.0))
    assert time_lag(t, 50, now=40.0) == 30.0


def test_flat_table_gives_no_time_lag_to_a_higher_offset():
    t = table((100, 10.0), (100, 30.0))
    assert time_lag(t, 150, now=40.0) == 0.0


def test_group_time_lag_is_the_largest_known_partition_time_lag():
    assert group_time_lag([3.0, None, 12.5, 0.0]) == 12.5
    assert group_time_lag([None, None]) is None
    assert group_time_lag([]) is None


# Forecast ----------------------------------------------------------------------------------------


def test_forecast_divides_the_lag_by_the_net_consume_rate():
    assert catch_up_forecast(1000, consume_rate=30.0, produce_rate=10.0) == 50.0


def test_forecast_is_never_when_the_group_does_not_gain_on_the_log():
    assert catch_up_forecast(1000, consume_rate=10.0, produce_rate=10.0) == NEVER
    assert catch_up_forecast(1000, consume_rate=5.0, produce_rate=10.0) == NEVER


def test_forecast_is_zero_when_there_is_no_lag():
    assert catch_up_forecast(0, consume_rate=0.0, produce_rate=10.0) == 0.0
