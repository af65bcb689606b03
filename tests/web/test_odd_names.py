"""Group ids, client ids and hosts with any character Kafka allows work in every page, link and push."""

from __future__ import annotations

import html
import re
from urllib.parse import quote

import pytest
from channels.testing import WebsocketCommunicator

from console.converters import decode_name, encode_name
from console.snapshots import store
from console.snapshots.model import GroupState, MemberState

ODD = ["team/service", "</script><script>alert(1)</script>", "a%2Fb", "a?b#c", "with space", "ünïcode", "..", "~x~", "quo\"te'"]


@pytest.mark.parametrize("name", [*ODD, "", ".", "~", "~7E", "/", "a~2Fb"])
def test_every_name_maps_to_one_path_segment_and_back(name: str) -> None:
    segment = encode_name(name)
    assert "/" not in segment and segment not in {".", ".."} and segment
    assert decode_name(segment) == name


@pytest.fixture
def odd_groups(snapshot):  # noqa: ANN201
    for i, gid in enumerate(ODD):
        member = MemberState(f"m-{i}", "<b>client</b>/" + gid, "host<i>/" + gid, [["orders", 0]])
        snapshot.groups[gid] = GroupState(gid, "Stable", "consumer", "classic", "range", [member], {"orders:0": 5})
    snapshot.topic_groups["orders"] = list(ODD)
    snapshot.version += 1
    store.save(snapshot, snapshot.content_bytes())
    return snapshot


def group_links(page: str) -> list[str]:
    return [html.unescape(h) for h in re.findall(r'href="(/clusters/local/groups/[^"]+)"', page)]


def test_groups_list_renders_and_links_each_odd_group_to_its_own_page(client_as, odd_groups) -> None:
    viewer = client_as("viewer")
    page = viewer.get("/clusters/local/groups/", {"per_page": 100})
    assert page.status_code == 200
    body = page.content.decode()
    assert "<script>alert(1)" not in body and "&lt;/script&gt;&lt;script&gt;alert(1)" in body
    links = [link for link in group_links(body) if link.count("/") == 5]
    assert len(links) == len(ODD)
    seen = set()
    for link in links:
        detail = viewer.get(link)  # the test client decodes the path as the ASGI server does
        assert detail.status_code == 200, link
        gid = next(g for g in ODD if f"<h1>{html.escape(g)}" in detail.content.decode() or html.escape(g) in detail.content.decode())
        seen.add(gid)
    assert seen == set(ODD)


@pytest.mark.parametrize("gid", ODD)
def test_each_odd_group_has_a_page_an_api_detail_and_a_reset_page(client_as, odd_groups, gid: str) -> None:
    from django.urls import reverse

    viewer, operator = client_as("viewer"), client_as("operator")
    page = viewer.get(reverse("group", args=["local", gid]))
    assert page.status_code == 200
    assert html.escape(gid) in page.content.decode()
    assert "&lt;b&gt;client&lt;/b&gt;" in page.content.decode()
    api = viewer.get(f"/api/v1/clusters/local/consumer-groups/{quote(encode_name(gid))}/")
    assert api.status_code == 200 and api.json()["group"] == gid
    assert operator.get(reverse("group_reset", args=["local", gid])).status_code == 200


def test_topic_page_links_its_odd_groups(client_as, odd_groups, monkeypatch) -> None:
    from topics_app import services

    monkeypatch.setattr(services, "topic_configs", lambda cluster, name: [])
    body = client_as("viewer").get("/clusters/local/topics/orders/").content.decode()
    assert "<script>alert(1)" not in body
    assert len([link for link in group_links(body) if link.count("/") == 5]) == len(ODD)


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
@pytest.mark.parametrize("view", ["groups", "topic", "group"])
async def test_live_updates_render_with_odd_names(odd_groups, view: str) -> None:
    from channels.db import database_sync_to_async
    from django.contrib.auth.models import User

    viewer = await database_sync_to_async(User.objects.create_user)(f"ws-{view}", password="x")  # any user may look
    from channels.routing import URLRouter

    from console.realtime import cluster_group
    from console.routing import websocket_urlpatterns

    query = {"groups": "view=groups&per_page=100", "topic": "view=topic&topic=orders",
             "group": "view=group&group=" + "%2F".join(p for p in ["team", "service"])}[view]
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/clusters/local/live/?{query}")
    comm.scope["user"] = viewer
    connected, _ = await comm.connect()
    assert connected
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    await layer.group_send(cluster_group("local"), {
        "type": "cluster.update", "reachable": True, "error": None, "taken_at": odd_groups.taken_at,
        "checked_at": odd_groups.checked_at, "version": odd_groups.version, "changed": True, "events": [],
    })
    fragments = []
    for _ in range(4):
        msg = await comm.receive_json_from(timeout=5)
        if msg["type"] == "fragment":
            fragments.append(msg["html"])
            break
        assert msg["type"] != "notice", msg
    await comm.disconnect()
    assert fragments
    assert "<script>alert(1)" not in fragments[0]
    if view != "group":
        assert len([link for link in group_links(fragments[0]) if link.count("/") == 5]) == len(ODD)
    else:
        assert "team/service" in fragments[0]
