"""A leader election is read back: the next reads wait for the elected leaders (changes.note_change "leader:<topic>:<partition>")."""

from __future__ import annotations

from console.snapshots import change_shown

from ._build import part, snapshot, topic


def test_an_elected_leader_is_shown_once_the_snapshot_has_it_or_any_live_one_for_an_unclean_election() -> None:
    old = snapshot(topic("orders", part(0, leader=3, replicas=(2, 3, 1)), part(1, leader=1, replicas=(1, 2, 3))))
    assert not change_shown(old, "leader:orders:0", 0.0, 2)  # the election moved it to 2: not yet shown
    new = snapshot(topic("orders", part(0, leader=2, replicas=(2, 3, 1)), part(1, leader=1, replicas=(1, 2, 3))))
    assert change_shown(new, "leader:orders:0", 0.0, 2)
    offline = snapshot(topic("orders", part(0, leader=-1, replicas=(2, 3, 1))))
    assert not change_shown(offline, "leader:orders:0", 0.0, -1) and change_shown(old, "leader:orders:0", 0.0, -1)
    # A topic or partition gone meanwhile waits for nothing.
    assert change_shown(new, "leader:payments:0", 0.0, 2) and change_shown(new, "leader:orders:7", 0.0, 2)
