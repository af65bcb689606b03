"""A judged group's per-partition time lags and statuses as the sampling process keeps them when
they are not uniform (consumers_app.lag_values.LagSeconds, LagStatuses): read and serialised as the
lists they stand for."""

from __future__ import annotations

import orjson

from console.snapshots.model import GroupState, Snapshot
from console.snapshots.parts import group_of_part, group_part, part_json
from consumers_app.lag_values import LagSeconds, LagStatuses
from consumers_app.lag_windows import STATUS_NAMES


def test_lag_seconds_read_as_the_list_with_none_where_unknown() -> None:
    values = [0.0, None, 12.5, 3600.125, None]
    lag = LagSeconds(values)
    assert list(lag) == values and [lag[i] for i in range(5)] == values and lag[1:3] == [None, 12.5] and len(lag) == 5
    assert lag.itemsize == 4 and lag == LagSeconds(values) and lag != LagSeconds([0.0, None, 12.5, 3600.125, 1.0])
    assert lag.json_value() == values


def test_lag_statuses_read_as_the_names() -> None:
    codes = [0, 1, 2, 3, 4, 0]
    statuses = LagStatuses(codes)
    names = [STATUS_NAMES[c] for c in codes]
    assert names == ["OK", "WARN", "STOP", "STALL", "REWIND", "OK"]
    assert list(statuses) == names and [statuses[i] for i in range(6)] == names and statuses[1:3] == names[1:3]
    assert len(statuses) == 6 and statuses == LagStatuses(codes) and statuses.json_value() == names


def test_a_group_with_compact_lag_columns_serialises_and_reads_as_with_lists() -> None:
    keys = ["t:0", "t:1", "t:2"]

    def group(statuses: object, seconds: object) -> GroupState:
        return GroupState(group_id="g<script>", state="Stable", protocol_type="consumer", group_type="classic",
                          assignor="range", members=[], offsets={"t:0": 1, "t:1": 2, "t:2": 3}, status="WARN", time_lag=9.5,
                          lag_keys=keys, lag_status=statuses, lag_seconds=seconds)  # type: ignore[arg-type]

    compact = group(LagStatuses([0, 1, 0]), LagSeconds([0.0, 9.5, None]))
    plain = group(["OK", "WARN", "OK"], [0.0, 9.5, None])
    assert part_json(group_part(compact)) == part_json(group_part(plain))
    assert compact.lag_of() == plain.lag_of() == {"t:0": {"status": "OK", "time_lag": 0.0},
                                                  "t:1": {"status": "WARN", "time_lag": 9.5},
                                                  "t:2": {"status": "OK", "time_lag": None}}
    read = group_of_part(group_part(compact))
    assert read.lag_status == ["OK", "WARN", "OK"] and read.lag_seconds == [0.0, 9.5, None]
    assert orjson.loads(Snapshot(cluster="c", groups={"g": compact}).to_json())["groups"]["g"]["lag_seconds"] == [0.0, 9.5, None]
