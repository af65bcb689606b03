"""The topics list by name from the names kept in order per set of topics (topics_app.reads'
name index): searches and pages equal filtering and sorting every row of the version."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from tests.unit._build import part, snapshot, topic
from topics_app import reads as topics


def reference(rows: list[dict[str, Any]], query: str, internal: bool, descending: bool) -> list[dict[str, Any]]:
    kept = [r for r in rows if (internal or not r["internal"]) and query.lower() in r["name"].lower()]
    return sorted(kept, key=lambda r: r["name"], reverse=descending)


def test_searches_by_name_equal_filtering_and_sorting_every_row_as_topics_come_and_go() -> None:
    rng = random.Random(3)
    words = ["Orders", "orders-EU", "audit", "_internal", "Ördnung", "pay.ments", "x"]
    names = {f"{rng.choice(words)}-{i}" for i in range(60)}
    made = {n: topic(n, part(0, end_offset=rng.randrange(100)), internal=n.startswith("_")) for n in names}
    index_before = None
    for version in range(1, 12):
        for n in rng.sample(sorted(made), 5):
            del made[n]
        for i in range(rng.randrange(0, 6)):
            n = f"{rng.choice(words)}-new-{version}-{i}"
            made[n] = topic(n, part(0), internal=n.startswith("_"))
        snap = replace(snapshot(*made.values(), cluster="names"), version=version)
        every = topics.topic_rows(snap)
        for query in ["", "ORD", "eu", "-1", "ö", "zzz", "."]:
            internal, descending = rng.random() < 0.5, rng.random() < 0.5
            page = topics.topics_page(snap, query=query, internal=internal, descending=descending, per_page=500)
            assert page.rows == reference(every, query, internal, descending), (version, query)
        index = topics.name_index(snap)
        assert index is not index_before  # (a new set of names: a new index)
        same_names = replace(snap, version=version + 100, topics=dict(reversed(list(snap.topics.items()))))
        assert topics.name_index(same_names) is index  # (the same names in another dict: kept)
        index_before = index


def test_a_search_by_name_sees_only_the_visible_topics() -> None:
    snap = replace(snapshot(topic("orders-a"), topic("orders-b"), topic("audit"), cluster="names-visible"), version=1)
    page = topics.topics_page(snap, query="orders", visible=lambda name: name != "orders-a")
    assert [r["name"] for r in page.rows] == ["orders-b"] and page.total == 1
