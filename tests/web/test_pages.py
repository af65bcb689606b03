"""Pages render the snapshot: overview counts, brokers, quorum, layout grid, at-risk lists."""

from __future__ import annotations

import re

import pytest


def text(response) -> str:
    return re.sub(r"\s+", " ", response.content.decode())


def test_overview_shows_brokers_quorum_and_counts(client_as, snapshot) -> None:
    page = text(client_as("viewer").get("/clusters/local/"))
    assert '<tr data-broker="3" class="row-down">' in page
    assert 'data-state="down">down</span>' in page
    assert "controller" in page
    assert 'id="quorum-leader">1</b>' in page
    assert re.search(r'<div class="num">2<span class="of">/3</span></div><div class="lbl">brokers up', page)
    assert re.search(r'counter bad"><div class="num">1</div><div class="lbl">offline', page)


def test_layout_grid_marks_leader_follower_out_of_sync_and_offline(client_as, snapshot) -> None:
    page = text(client_as("viewer").get("/clusters/local/layout/?q=ORD"))
    assert 'data-topic="orders"' in page
    assert "__consumer_offsets" not in page
    match = re.search(r'<tr data-partition="1">(.*?)</tr>', page)
    assert match is not None
    row1 = match.group(1)
    cells = re.findall(r'class="cell (\w+)"', row1)
    assert cells == ["outofsync", "leader", "offline"]  # broker 1 out of ISR, 2 leads, 3 is down


def test_layout_can_show_internal_topics(client_as, snapshot) -> None:
    assert "__consumer_offsets" in text(client_as("viewer").get("/clusters/local/layout/?internal=1"))


@pytest.mark.parametrize(("broker", "offline", "under_min"), [(2, 1, 1), (1, 0, 0), (3, 0, 1)])
def test_at_risk_lists_partitions_that_would_suffer_if_a_broker_died(client_as, snapshot, broker, offline, under_min) -> None:
    page = text(client_as("viewer").get(f"/clusters/local/at-risk/?broker={broker}"))
    assert re.search(rf'Would go offline <span class="count ?\w*">{offline}</span>', page)
    assert re.search(rf'Would fall under min ISR <span class="count ?\w*">{under_min}</span>', page)
