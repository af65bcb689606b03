"""What a user just changed is visible on their next request: no 404 for a topic Kafka has."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests

from tests.conftest import Stack, unique

pytestmark = pytest.mark.cluster
API = "/api/v1/clusters/local/topics/"


def call(stack: Stack, method: str, path: str, body: dict[str, Any] | None = None, **params: Any) -> requests.Response:
    return stack.api("admin").request(method, stack.base_url + path, json=body, params=params or None, timeout=30)


# The hundred rounds run a few at a time: each round's own create-then-use is what is checked, and
# rounds side by side also keep the controller and the watcher busy, as several users would.
ROUNDS_AT_ONCE = 4


def test_create_then_produce_at_once_a_hundred_times_never_fails(stack: Stack) -> None:
    prefix = unique("ryw-produce")

    def round_(i: int) -> str | None:
        name = f"{prefix}-{i}"
        r = call(stack, "POST", API, {"name": name, "partitions": 1, "replication_factor": 1})
        assert r.status_code == 201, r.text
        p = call(stack, "POST", API + name + "/messages/", {"value": f"hello {i}"})
        return None if p.status_code == 201 else f"{name}: {p.status_code} {p.text[:200]}"

    started = time.monotonic()
    failures = rounds(round_)
    took = time.monotonic() - started
    delete_all(stack, [f"{prefix}-{i}" for i in range(100)])
    assert failures == [], f"{len(failures)} of 100 produces right after create failed (in {took:.0f} s): {failures[:3]}"


def test_create_then_describe_at_once_a_hundred_times_never_fails(stack: Stack) -> None:
    prefix = unique("ryw-describe")

    def round_(i: int) -> str | None:
        name = f"{prefix}-{i}"
        r = call(stack, "POST", API, {"name": name, "partitions": 2, "replication_factor": 1})
        assert r.status_code == 201, r.text
        d = call(stack, "GET", API + name + "/")
        parts = call(stack, "GET", API + name + "/partitions/")
        listed = call(stack, "GET", API, q=name)
        if d.status_code != 200 or parts.status_code != 200 or len(parts.json()["partitions"]) != 2:
            return f"{name}: detail {d.status_code}, partitions {parts.status_code} {parts.text[:120]}"
        if name not in [t["name"] for t in listed.json()["results"]]:
            return f"{name}: not in the topics list"
        return None

    failures = rounds(round_)
    delete_all(stack, [f"{prefix}-{i}" for i in range(100)])
    assert failures == [], f"{len(failures)} of 100 describes right after create failed: {failures[:3]}"


def rounds(round_: Callable[[int], str | None]) -> list[str]:
    with ThreadPoolExecutor(ROUNDS_AT_ONCE) as pool:
        return [failure for failure in pool.map(round_, range(100)) if failure is not None]


def delete_all(stack: Stack, names: list[str]) -> None:
    with ThreadPoolExecutor(ROUNDS_AT_ONCE) as pool:
        list(pool.map(lambda name: call(stack, "DELETE", API + name + "/", {"confirm": name}, confirm=name), names))


def test_add_partitions_then_browse_and_produce_to_the_new_partition_at_once(stack: Stack) -> None:
    prefix = unique("ryw-grow")
    failures: list[str] = []
    for i in range(20):
        name = f"{prefix}-{i}"
        assert call(stack, "POST", API, {"name": name, "partitions": 1, "replication_factor": 1}).status_code == 201
        grown = call(stack, "POST", API + name + "/partitions/", {"count": 3})
        assert grown.status_code in (200, 201), grown.text
        parts = call(stack, "GET", API + name + "/partitions/")
        produced = call(stack, "POST", API + name + "/messages/", {"value": "x", "partition": 2})
        browsed = call(stack, "GET", API + name + "/messages/", start="oldest", partitions="2", limit=5)
        if parts.status_code != 200 or len(parts.json()["partitions"]) != 3:
            failures.append(f"{name}: partitions {parts.status_code} {parts.text[:120]}")
        elif produced.status_code != 201:
            failures.append(f"{name}: produce to the new partition {produced.status_code} {produced.text[:160]}")
        elif browsed.status_code != 200 or len(browsed.json()["records"]) != 1:
            failures.append(f"{name}: browse of the new partition {browsed.status_code} {browsed.text[:160]}")
        call(stack, "DELETE", API + name + "/", {"confirm": name}, confirm=name)
    assert failures == [], failures[:3]


def test_delete_then_recreate_with_the_same_name_is_seen_at_once(stack: Stack) -> None:
    name = unique("ryw-recreate")
    assert call(stack, "POST", API, {"name": name, "partitions": 1, "replication_factor": 1}).status_code == 201
    for partitions in (3, 2):
        deleted = call(stack, "DELETE", API + name + "/", {"confirm": name}, confirm=name)
        assert deleted.status_code in (200, 204), deleted.text
        assert name not in [t["name"] for t in call(stack, "GET", API, q=name).json()["results"]]
        created = None
        for _ in range(20):  # Kafka refuses the name while it is still deleting the old topic
            created = call(stack, "POST", API, {"name": name, "partitions": partitions, "replication_factor": 1})
            if created.status_code == 201:
                break
            time.sleep(0.5)
        assert created is not None and created.status_code == 201, created.text if created else None
        assert len(call(stack, "GET", API + name + "/partitions/").json()["partitions"]) == partitions
        assert call(stack, "POST", API + name + "/messages/", {"value": "again"}).status_code == 201
    call(stack, "DELETE", API + name + "/", {"confirm": name}, confirm=name)
