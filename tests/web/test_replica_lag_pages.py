"""Replica lag on the topic page and API, the broker page and API, and the layout grid: read from
the snapshot's replica sizes and the watcher's streaks in Redis (no Kafka)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest

from console.snapshots import store
from console.snapshots.model import BrokerState, PartitionState, Snapshot, TopicState
from console.snapshots.replica_lag import Streak, save_log_dirs, save_streaks

ODD = "odd%<script>'\"ü"  # (Kafka names have no '/'; the snapshot's may hold anything else)
NOW = time.time()


def lag_snapshot() -> Snapshot:
    behind = PartitionState(0, 1, [1, 2, 3], [1, 2, 3], [], 0, 100, 5_000_000, {"1": 5_000_000, "2": 5_000_000, "3": 1_000_000})
    close = PartitionState(1, 2, [2, 3, 1], [2, 3, 1], [], 0, 100, 10_000_000, {"1": 9_999_000, "2": 10_000_000, "3": 10_000_000})
    odd = PartitionState(0, 2, [2, 3], [2], [], 0, 10, 2000, {"2": 2000, "3": 500})
    return Snapshot(
        cluster="local", version=int(NOW * 1000), taken_at=NOW, checked_at=NOW, reachable=True, cluster_id="c", controller_id=1,
        brokers={1: BrokerState(1, "127.0.0.1", 29092, "r1", True), 2: BrokerState(2, "127.0.0.1", 29094, "r2", True),
                 3: BrokerState(3, "127.0.0.1", 29096, "r3", True)},
        topics={"orders": TopicState("orders", False, [behind, close], min_isr=2), ODD: TopicState(ODD, False, [odd])},
    )


@pytest.fixture
def lagging(redis_server: str) -> Iterator[Snapshot]:
    snap = lag_snapshot()
    store.save(snap, snap.content_bytes())
    save_streaks("local", [Streak("orders", 0, 3, NOW - 20, 4_000_000, 1_000_000, True, False, True, True)])
    save_log_dirs("local", {3: NOW - 25}, {("orders", 1): {2: 42}})
    yield snap
    save_streaks("local", [])
    save_log_dirs("local", {}, {})


def text(response) -> str:
    return re.sub(r"\s+", " ", response.content.decode())


def test_topic_api_gives_each_replicas_bytes_behind_its_leader(client_as, lagging) -> None:
    body = client_as("viewer").get("/api/v1/clusters/local/topics/orders/partitions/").json()
    rows = {r["broker"]: r for r in body["partitions"][0]["replica_lag"]}
    assert rows[1]["leader"] and rows[1]["bytes_behind"] == 0
    assert rows[2]["bytes_behind"] == 0 and rows[2]["level"] == "none"
    assert rows[3]["bytes_behind"] == 4_000_000 and rows[3]["level"] == "far" and rows[3]["in_isr"]
    assert rows[3]["about_to_shrink"] and rows[3]["growing_since"] == pytest.approx(NOW - 20)
    assert rows[3]["not_answering_since"] == pytest.approx(NOW - 25)
    close = {r["broker"]: r for r in body["partitions"][1]["replica_lag"]}
    assert close[1]["bytes_behind"] == 1000 and close[1]["level"] == "some"
    assert close[2]["future_offsets_behind"] == 42 and rows[3]["future_offsets_behind"] is None
    detail = client_as("viewer").get("/api/v1/clusters/local/topics/orders/").json()
    assert detail["partitions"][0]["replica_lag"] == body["partitions"][0]["replica_lag"]


def test_topic_page_shows_the_lag_column_and_the_isr_about_to_shrink_warning(client_as, lagging) -> None:
    page = text(client_as("viewer").get("/clusters/local/topics/orders/"))
    assert 'id="isr-shrink-warning"' in page and "ISR about to shrink" in page
    assert 'data-broker="3" data-bytes-behind="4000000"' in page
    assert "3.8 MB" in page and "not answering since" in page
    assert "2: moving log dir, 42 offsets behind" in page
    assert "Kafka&#x27;s admin API gives no follower&#x27;s log end offset" in page  # (the column's tooltip)


def test_layout_grid_colours_followers_by_their_lag(client_as, lagging) -> None:
    page = text(client_as("viewer").get("/clusters/local/layout/?q=orders"))
    row0 = re.search(r'<tr data-partition="0">(.*?)</tr>', page).group(1)  # type: ignore[union-attr]
    assert re.findall(r'class="cell (\w+) lag-(\w+)"', row0) == [("insync", "none"), ("insync", "far")]
    assert "3.8 MB behind the leader" in row0
    row1 = re.search(r'<tr data-partition="1">(.*?)</tr>', page).group(1)  # type: ignore[union-attr]
    assert ("insync", "some") in re.findall(r'class="cell (\w+) lag-(\w+)"', row1)


def test_broker_page_lists_its_followers_most_behind_first(client_as, lagging) -> None:
    body = client_as("viewer").get("/api/v1/clusters/local/brokers/3/replica-lag/").json()
    assert [(r["topic"], r["partition"], r["bytes_behind"]) for r in body["replicas"]] == [
        ("orders", 0, 4_000_000), (ODD, 0, 1500), ("orders", 1, 0)]
    assert body["about_to_shrink"] == 1 and body["not_answering_since"] == pytest.approx(NOW - 25)
    assert [r["leader"] for r in body["replicas"]] == [1, 2, 2]  # (each partition's leader id)
    assert "leader's log size minus this replica's" in body["how_measured"]
    top = client_as("viewer").get("/api/v1/clusters/local/brokers/3/replica-lag/?top=1").json()
    assert len(top["replicas"]) == 1
    page = text(client_as("viewer").get("/clusters/local/brokers/3/"))
    assert 'id="broker-silent"' in page and 'id="isr-shrink-warning"' in page
    assert "odd%&lt;script&gt;&#x27;&quot;ü" in page and "<script>'" not in page


def test_overview_links_each_broker_to_its_page(client_as, lagging) -> None:
    assert 'href="/clusters/local/brokers/2/"' in client_as("viewer").get("/clusters/local/").content.decode()


def test_unknown_broker_and_bad_top_are_refused_with_a_sentence(client_as, lagging) -> None:
    missing = client_as("viewer").get("/api/v1/clusters/local/brokers/9/replica-lag/")
    assert missing.status_code == 404 and "Broker 9 is not part of cluster 'local'" in missing.json()["detail"]
    assert client_as("viewer").get("/clusters/local/brokers/9/").status_code == 404
    bad = client_as("viewer").get("/api/v1/clusters/local/brokers/3/replica-lag/?top=0")
    assert bad.status_code == 400 and "top" in bad.json()["detail"]
    assert client_as("viewer").get("/api/v1/clusters/local/brokers/3/replica-lag/?top=x").status_code == 400


def test_replica_lag_needs_a_login(client, lagging) -> None:
    assert client.get("/api/v1/clusters/local/brokers/3/replica-lag/").status_code == 401


def test_a_running_reassignments_adding_replicas_show_their_catch_up(client_as, lagging) -> None:
    from brokers_app.models import ReassignmentJob

    # orders-0 moves from [1, 2] to [1, 2, 3]: the snapshot lists 3 as a replica, 4 MB behind.
    plan = {"partitions": [{"topic": "orders", "partition": 0, "before": [1, 2], "after": [1, 2, 3], "size": 5_000_000},
                           {"topic": "orders", "partition": 1, "before": [2, 3], "after": [2, 3, 1], "size": 10_000_000}]}
    job = ReassignmentJob.objects.create(cluster="local", kind="import", plan=plan, moves=["moving", "done"], state="running",
                                         created_by="op")
    body = client_as("viewer").get(f"/api/v1/clusters/local/reassignments/{job.id}/").json()
    assert body["catch_up"] == [{"topic": "orders", "partition": 0, "broker": 3, "leader": 1, "bytes_behind": 4_000_000,
                                 "size": 1_000_000, "in_isr": True}]
    page = text(client_as("viewer").get(f"/clusters/local/reassignments/{job.id}/"))
    assert 'id="catch-up"' in page and 'data-broker="3"' in page and 'data-bytes-behind="4000000"' in page


def test_a_scoped_viewers_broker_page_lists_only_their_topics(db, teams) -> None:
    from tests.web.test_scoped_access import client_of, team_a_user

    client = client_of(team_a_user(role="viewer"))
    body = client.get("/api/v1/clusters/local/brokers/2/replica-lag/").json()
    assert {r["topic"] for r in body["replicas"]} == {"team-a.orders"}
    assert "team-b" not in client.get("/clusters/local/brokers/2/").content.decode()
