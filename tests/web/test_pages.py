"""Pages render the snapshot: overview counts, brokers, quorum, layout grid, at-risk lists."""

from __future__ import annotations

import re

import pytest

from console.snapshots import loader


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
    cells = re.findall(r'class="cell (\w+)[ "]', row1)
    assert cells == ["outofsync", "leader", "offline"]  # broker 1 out of ISR, 2 leads, 3 is down


def test_layout_can_show_internal_topics(client_as, snapshot) -> None:
    assert "__consumer_offsets" in text(client_as("viewer").get("/clusters/local/layout/?internal=1"))


@pytest.mark.parametrize(("broker", "offline", "under_min"), [(2, 1, 1), (1, 0, 0), (3, 0, 1)])
def test_at_risk_lists_partitions_that_would_suffer_if_a_broker_died(client_as, snapshot, broker, offline, under_min) -> None:
    page = text(client_as("viewer").get(f"/clusters/local/at-risk/?broker={broker}"))
    assert re.search(rf'Would go offline <span class="count ?\w*">{offline}</span>', page)
    assert re.search(rf'Would fall under min ISR <span class="count ?\w*">{under_min}</span>', page)


@pytest.mark.parametrize(
    "path",
    [
        "/clusters/local/topics/",
        "/clusters/local/topics/?sort=size&desc=1",
        "/clusters/local/topics/?q=ord&regex=1",
        "/clusters/local/topics/orders/",
        "/clusters/local/topics/orders/messages/",
    ],
)
def test_topic_pages_render_for_a_viewer(client_as, snapshot, monkeypatch, path: str) -> None:
    from topics_app import services

    monkeypatch.setattr(services, "topic_configs", lambda cluster, name: [])  # configs come from Kafka: none here
    response = client_as("viewer").get(path)
    assert response.status_code == 200, response.content[:500]
    assert b"orders" in response.content


@pytest.mark.parametrize(
    "path",
    ["/clusters/local/topics/new/", "/clusters/local/topics/orders/partitions/", "/clusters/local/topics/orders/purge/"],
)
def test_change_forms_need_the_operator_role(client_as, snapshot, path: str) -> None:
    assert client_as("viewer").get(path).status_code == 403
    assert client_as("operator").get(path).status_code == 200


def test_delete_form_needs_the_admin_role(client_as, snapshot) -> None:
    assert client_as("operator").get("/clusters/local/topics/orders/delete/").status_code == 403
    assert client_as("admin").get("/clusters/local/topics/orders/delete/").status_code == 200


def test_topics_list_with_a_bad_regex_is_a_400_page(client_as, snapshot) -> None:
    response = client_as("viewer").get("/clusters/local/topics/?q=%28&regex=1")
    assert response.status_code == 400 and b"not a valid regular expression" in response.content


def test_group_page_carries_the_lag_history_for_its_chart(client_as, snapshot) -> None:
    import json
    import time

    from console.snapshots import store
    from console.snapshots.model import GroupState

    snapshot.groups["billing"] = GroupState("billing", "Stable", "consumer", "classic", "range", [], {"orders:0": 5})
    snapshot.version += 1
    store.save(snapshot, snapshot.content_bytes())
    now = time.time()
    store.client().delete("console:lag:local:billing")
    store.append_lag_history("local", {"billing": (now - 30, 12, 1.5)})
    store.append_lag_history("local", {"billing": (now, 5, 0.5)})
    store.append_lag_history("local", {"billing": (now - 7200, 99, 9.0)})  # older than an hour: not charted
    page = client_as("viewer").get("/clusters/local/groups/billing/").content.decode()
    data = json.loads(page.split('<script id="lag-history" type="application/json">')[1].split("</script>")[0])
    assert data["lag"] == [12, 5] and data["time_lag"] == [1.5, 0.5]
    assert "vendor/plotly/plotly.min.js" in page
    assert client_as("viewer").get("/static/vendor/plotly/plotly.min.js").status_code == 200


def test_groups_page_ranks_the_groups_that_rebalance_most(client_as, snapshot) -> None:
    from datetime import UTC, datetime, timedelta

    from consumers_app.models import Rebalance

    now = datetime.now(tz=UTC)
    for group, count in (("calm", 1), ("busy", 3)):
        for i in range(count):
            Rebalance.objects.create(cluster="local", group=group, started_at=now - timedelta(minutes=i + 1),
                                     ended_at=now - timedelta(minutes=i), duration_s=2.0)
    Rebalance.objects.create(cluster="local", group="ancient", started_at=now - timedelta(days=3),
                             ended_at=now - timedelta(days=3), duration_s=1.0)
    body = client_as("viewer").get("/api/v1/clusters/local/rebalances/most-frequent/").json()["groups"]
    assert [(g["group"], g["rebalances"], g["seconds"]) for g in body] == [("busy", 3, 6.0), ("calm", 1, 2.0)]
    page = client_as("viewer").get("/clusters/local/groups/").content.decode()
    assert page.index(">busy<") < page.index(">calm<") and "ancient" not in page


def test_new_protocol_group_page_shows_epochs_reconciliation_and_generations(client_as, snapshot) -> None:
    from datetime import UTC, datetime, timedelta

    from console.snapshots import store
    from console.snapshots.model import GroupState, MemberState
    from consumers_app.models import Rebalance

    members = [MemberState("m-a", "app-a", "10.0.0.1", [["orders", 0]], None, 7, [["orders", 0], ["orders", 1]]),
               MemberState("m-b", "app-b", "10.0.0.2", [["orders", 1]], "pod-b", 6, [])]
    snapshot.groups["kip848"] = GroupState("kip848", "Reconciling", "consumer", "consumer", "uniform", members,
                                           {"orders:0": 5}, coordinator=2, generation=8)
    snapshot.version += 1
    store.save(snapshot, snapshot.content_bytes())
    now = datetime.now(tz=UTC)
    Rebalance.objects.create(cluster="local", group="kip848", started_at=now - timedelta(seconds=3), ended_at=now,
                             duration_s=3.0, generation_before=6, generation_after=8, trigger="member joined")
    page = client_as("viewer").get("/clusters/local/groups/kip848/").content.decode()
    assert ">8</div><div class=\"lbl\">group epoch" in page
    assert "moving to: orders-0, orders-1" in page and "(static: pod-b)" in page
    assert "6 → 8" in page
    body = client_as("viewer").get("/api/v1/clusters/local/consumer-groups/kip848/").json()
    assert (body["group_type"], body["generation"]) == ("consumer", 8)
    assert [(m["epoch"], m["target_assignment"]) for m in body["member_list"]] == [(7, ["orders-0", "orders-1"]), (6, [])]


def test_share_group_lag_is_the_figure_kafka_reports(client_as, snapshot) -> None:
    from console.snapshots import store
    from console.snapshots.model import GroupState

    snapshot.groups["queue"] = GroupState("queue", "Empty", "share", "share", "simple", [], {"orders:0": 5},
                                          generation=3, broker_lag={"orders:0": 2})
    snapshot.version += 1
    store.save(snapshot, snapshot.content_bytes())
    detail = client_as("viewer").get("/api/v1/clusters/local/consumer-groups/queue/").json()
    assert [(p["committed"], p["lag"]) for p in detail["partitions"]] == [(5, 2)]  # Kafka's lag, not end - start
    page = client_as("viewer").get("/clusters/local/groups/queue/").content.decode()
    assert "Start offset" in page and "Committed" not in page


def test_groups_list_filters_by_state_and_type(client_as, snapshot) -> None:
    from console.snapshots import store
    from console.snapshots.model import GroupState

    snapshot.groups.update({
        "a-classic": GroupState("a-classic", "Stable", "consumer", "classic", "range", [], {}),
        "b-new": GroupState("b-new", "Reconciling", "consumer", "consumer", "uniform", [], {}, generation=4),
        "c-share": GroupState("c-share", "Empty", "share", "share", "simple", [], {}, generation=2),
    })
    snapshot.version += 1
    store.save(snapshot, snapshot.content_bytes())
    api = "/api/v1/clusters/local/consumer-groups/"
    names = lambda **q: [g["group"] for g in client_as("viewer").get(api, q).json()["results"]]  # noqa: E731
    assert names(type="share") == ["c-share"]
    assert names(state="Reconciling") == ["b-new"]
    assert names(state="Stable", type="consumer") == []
    page = client_as("viewer").get("/clusters/local/groups/", {"type": "consumer"}).content.decode()
    assert "b-new" in page and "a-classic" not in page and '<option selected>consumer</option>' in page
    bad = client_as("viewer").get(api, {"state": "Sleepy"})
    assert bad.status_code == 400 and "'state' must be one of" in bad.json()["detail"]
    assert client_as("viewer").get("/clusters/local/groups/", {"type": "nope"}).status_code == 400


def test_groups_page_heads_and_rebalance_panel_are_rendered_for_each_request_content(client_as, snapshot) -> None:
    """The column heads and the rebalance panel come from the rendered-row cache: keyed by what
    they show, so a new query or a new rebalance is on the next view."""
    from datetime import UTC, datetime, timedelta

    from consumers_app.models import Rebalance

    viewer = client_as("viewer")
    first = viewer.get("/clusters/local/groups/", {"q": "bil", "sort": "total_lag"}).content.decode()
    assert "q=bil" in first and "No rebalances seen in the last 24 hours." in first
    assert re.search(r"total lag ▲</a>|lag ▲</a>", first)
    second = viewer.get("/clusters/local/groups/", {"q": "ord", "sort": "total_lag", "desc": "1"}).content.decode()
    assert "q=ord" in second and "q=bil" not in second and "▼" in second
    # Those two are made per request: they do not fill the cache of rows found by identity.
    from console import listing

    held = len(listing._ROW_HTML_OF)
    for _ in range(5):
        viewer.get("/clusters/local/groups/", {"q": "ord", "sort": "total_lag", "desc": "1"})
    assert len(listing._ROW_HTML_OF) == held
    now = datetime.now(tz=UTC)
    Rebalance.objects.create(cluster="local", group="odd<g>/1", started_at=now - timedelta(seconds=5), ended_at=now,
                             duration_s=5.0)
    third = viewer.get("/clusters/local/groups/").content.decode()
    assert "No rebalances seen" not in third
    assert ">odd&lt;g&gt;/1<" in third and 'href="/clusters/local/groups/odd%3Cg%3E~2F1/"' in third


def test_a_group_whose_stored_part_cannot_be_read_gets_a_sentence_not_a_server_error(client_as, snapshot) -> None:
    """Groups are parsed when a page first asks for them (parts.GroupsRead): a part this version
    cannot read (a later version's, or damaged) answers the pages and the API that need it with
    503 and a sentence, and the pages that do not need it render."""
    from console.snapshots import store

    store.client().hset("console:snapshot:local:parts", "g:billing", b"x\x01 damaged")
    loader._cache.pop("local", None)
    loader._raw_parts.pop("local", None)
    viewer = client_as("viewer")
    for path in ("/clusters/local/groups/billing/", "/clusters/local/groups/", "/api/v1/clusters/local/consumer-groups/billing/",
                 "/api/v1/clusters/local/consumer-groups/"):
        response = viewer.get(path)
        assert response.status_code == 503, path
        assert "stored part of consumer group &#x27;billing&#x27; cannot be read" in response.content.decode() \
            or "stored part of consumer group 'billing' cannot be read" in response.content.decode(), path
        assert "Traceback" not in response.content.decode()
    assert viewer.get("/clusters/local/").status_code == 200
    assert viewer.get("/clusters/local/topics/").status_code == 200
