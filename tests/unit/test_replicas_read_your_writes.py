"""A reassignment job read as ended is read back: the next reads wait for the replica sets it left
(changes.note_change "replicas:<topic>:<partition>", noted by the job's worker when it finishes)."""

from __future__ import annotations

from typing import Any

import pytest

from brokers_app import reassignment_runner
from console.snapshots import change_shown

from ._build import part, snapshot, topic


def test_a_replica_set_is_shown_once_the_snapshot_has_it_in_any_order() -> None:
    old = snapshot(topic("orders", part(0, leader=1, replicas=(1, 2)), part(1, leader=2, replicas=(2, 3))))
    assert not change_shown(old, "replicas:orders:0", 0.0, [3, 4])
    new = snapshot(topic("orders", part(0, leader=4, replicas=(4, 3)), part(1, leader=2, replicas=(2, 3))))
    assert change_shown(new, "replicas:orders:0", 0.0, [3, 4])
    # A topic or partition gone meanwhile waits for nothing.
    assert change_shown(new, "replicas:payments:0", 0.0, [3, 4]) and change_shown(new, "replicas:orders:9", 0.0, [3, 4])


class _Job:
    cluster = "local"
    plan = {"partitions": [{"topic": "orders", "partition": 0, "before": [1, 2], "after": [4, 3]},
                           {"topic": "orders", "partition": 1, "before": [2, 3], "after": [3, 1]}]}


def test_a_finished_job_notes_the_replica_sets_it_left(monkeypatch: pytest.MonkeyPatch) -> None:
    from console import snapshots

    noted: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(snapshots, "note_change", lambda cluster, expect: noted.append((cluster, expect)))
    reassignment_runner.note_replicas(_Job(), target="after")  # type: ignore[arg-type]
    reassignment_runner.note_replicas(_Job(), target="before")  # type: ignore[arg-type]
    assert noted == [("local", {"replicas:orders:0": [3, 4], "replicas:orders:1": [1, 3]}),
                     ("local", {"replicas:orders:0": [1, 2], "replicas:orders:1": [2, 3]})]
