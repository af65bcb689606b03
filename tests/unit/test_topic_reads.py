"""topics_app.reads: the topic layout grid and partition views, read from a snapshot."""

from __future__ import annotations

import pytest

from console.gateway.errors import NotFound
from topics_app.reads import cell, layout, partitions
from topics_app.reads import topic as find_topic

from ._build import broker, part, snapshot, topic

LIVE = {1, 2, 3}

# cell() -----------------------------------------------------------------------------------------


def test_cell_of_the_leader_is_leader():
    assert cell(part(leader=2, isr=[1, 2, 3]), 2, LIVE) == "leader"


def test_cell_of_an_in_sync_follower_is_insync():
    assert cell(part(leader=1, isr=[1, 3]), 3, LIVE) == "insync"


def test_cell_of_a_follower_out_of_the_isr_is_outofsync():
    assert cell(part(leader=1, isr=[1, 3]), 2, LIVE) == "outofsync"


def test_cell_of_a_replica_on_a_dead_broker_is_offline():
    assert cell(part(leader=1, isr=[1, 2, 3]), 2, {1, 3}) == "offline"


def test_cell_of_a_dead_leader_is_offline_not_leader():
    assert cell(part(leader=2, isr=[2]), 2, {1, 3}) == "offline"


def test_cell_of_a_broker_without_a_replica_is_empty():
    assert cell(part(replicas=(1, 2)), 3, LIVE) == ""


def test_cell_of_a_dead_broker_without_a_replica_is_empty_not_offline():
    assert cell(part(replicas=(1, 2)), 3, {1, 2}) == ""


# layout() ---------------------------------------------------------------------------------------


def many_topics(*names: str, internal: tuple[str, ...] = ()):
    return snapshot(*(topic(n, part(0)) for n in names), *(topic(n, part(0), internal=True) for n in internal))


def names(page) -> list[str]:
    return [t["name"] for t in page.topics]


def test_layout_lists_topics_by_name_with_brokers_sorted():
    snap = snapshot(topic("zeta"), topic("alpha"), topic("mid"), brokers=[broker(3), broker(1), broker(2)])
    page = layout(snap)
    assert names(page) == ["alpha", "mid", "zeta"]
    assert page.brokers == [1, 2, 3]
    assert (page.total, page.page, page.pages) == (3, 1, 1)


def test_layout_filters_topics_by_case_insensitive_substring():
    snap = many_topics("Orders", "orders-dlq", "payments", "ORDERS_v2")
    assert names(layout(snap, query="ORDer")) == ["ORDERS_v2", "Orders", "orders-dlq"]
    assert layout(snap, query="ORDer").total == 3


def test_layout_with_a_query_matching_nothing_is_empty_with_one_page():
    page = layout(many_topics("orders"), query="nope")
    assert (page.topics, page.total, page.page, page.pages) == ([], 0, 1, 1)


def test_layout_hides_internal_topics_by_default():
    snap = many_topics("orders", internal=("__consumer_offsets",))
    assert names(layout(snap)) == ["orders"]


def test_layout_shows_internal_topics_when_asked():
    snap = many_topics("orders", internal=("__consumer_offsets",))
    assert names(layout(snap, internal=True)) == ["__consumer_offsets", "orders"]


def test_layout_query_does_not_reveal_hidden_internal_topics():
    snap = many_topics("orders", internal=("__consumer_offsets",))
    assert layout(snap, query="consumer").total == 0


def test_layout_splits_topics_into_pages():
    snap = many_topics(*(f"t{i:02d}" for i in range(25)))
    first = layout(snap, page=1, per_page=10)
    last = layout(snap, page=3, per_page=10)
    assert names(first) == [f"t{i:02d}" for i in range(10)]
    assert names(last) == [f"t{i:02d}" for i in range(20, 25)]
    assert (first.total, first.pages, last.page) == (25, 3, 3)


def test_layout_page_beyond_the_last_shows_the_last_page():
    snap = many_topics(*(f"t{i:02d}" for i in range(25)))
    page = layout(snap, page=99, per_page=10)
    assert page.page == 3
    assert names(page) == [f"t{i:02d}" for i in range(20, 25)]


@pytest.mark.parametrize("requested", [0, -5])
def test_layout_page_below_one_shows_the_first_page(requested):
    snap = many_topics(*(f"t{i:02d}" for i in range(25)))
    page = layout(snap, page=requested, per_page=10)
    assert page.page == 1
    assert names(page)[0] == "t00"


def test_layout_exactly_full_pages_has_no_empty_extra_page():
    assert layout(many_topics(*(f"t{i}" for i in range(20))), per_page=10).pages == 2


def test_layout_row_describes_each_partition_with_one_cell_per_broker():
    snap = snapshot(
        topic("orders", part(0, leader=1, replicas=(1, 2), isr=[1]), part(1, leader=-1, replicas=(2, 3), isr=[]), min_isr=2),
        brokers=[broker(1), broker(2, up=False), broker(3)],
    )
    row = layout(snap).topics[0]
    assert (row["name"], row["internal"], row["replication_factor"], row["min_isr"]) == ("orders", False, 2, 2)
    p0, p1 = row["partitions"]
    assert p0 == {
        "partition": 0,
        "leader": 1,
        "replicas": [1, 2],
        "isr": [1],
        "offline": False,
        "under_replicated": True,
        "under_min_isr": True,
        "cells": ["leader", "offline", ""],
        "grid": [{"cell": "leader", "behind": None, "level": ""}, {"cell": "offline", "behind": None, "level": "unknown"},
                 {"cell": "", "behind": None, "level": ""}],
    }
    assert p1["offline"] is True
    assert p1["cells"] == ["", "offline", "outofsync"]


# topic() and partitions() -----------------------------------------------------------------------


def test_topic_returns_the_topic_state():
    snap = snapshot(topic("orders", min_isr=2))
    assert find_topic(snap, "orders") is snap.topics["orders"]


@pytest.mark.parametrize("lookup", [find_topic, partitions])
def test_unknown_topic_raises_not_found_naming_the_topic_and_cluster(lookup):
    snap = snapshot(topic("orders"), cluster="east")
    with pytest.raises(NotFound) as raised:
        lookup(snap, "missing-topic")
    assert "missing-topic" in raised.value.message
    assert "east" in raised.value.message
    assert raised.value.http_status == 404


def test_partitions_describe_each_partition():
    snap = snapshot(
        topic(
            "orders",
            part(0, leader=2, replicas=(2, 1, 3), isr=[2, 1], offline_replicas=[3], start_offset=4, end_offset=40),
            part(1, leader=-1, replicas=(3,), isr=[], offline_replicas=[3]),
            min_isr=2,
        )
    )
    rows = partitions(snap, "orders")
    assert rows[0] == {
        "partition": 0,
        "leader": 2,
        "replicas": [2, 1, 3],
        "isr": [2, 1],
        "offline_replicas": [3],
        "preferred_leader": 2,
        "offline": False,
        "under_replicated": True,
        "under_min_isr": False,
        "start_offset": 4,
        "end_offset": 40,
        "last_stable_offset": 40,
        "held_by": None,
        "messages": 36,
        "size": None,
        "replica_sizes": {},
        "replica_lag": [{"broker": b, "leader": b == 2, "in_isr": b in (2, 1), "bytes_behind": None,
                         "level": "leader" if b == 2 else "unknown", "growing_since": None, "not_answering_since": None,
                         "about_to_shrink": False, "future_offsets_behind": None} for b in (2, 1, 3)],
    }
    assert rows[1]["leader"] is None
    assert rows[1]["offline"] is True
    assert rows[1]["under_min_isr"] is True
