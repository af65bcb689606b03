"""The live websocket: only for logged-in users; turns the watcher's broadcasts into fragments."""

from __future__ import annotations

import time
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser, User

from console.realtime import cluster_group
from console.routing import websocket_urlpatterns
from console.snapshots import store
from tests.web.conftest import sample_snapshot

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


def communicator(path: str, user: Any) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path)
    comm.scope["user"] = user
    return comm


def update(version: int, changed: bool = True, events: list[dict] | None = None, reachable: bool = True) -> dict:
    return {"type": "cluster.update", "cluster": "local", "version": version, "changed": changed, "taken_at": time.time(),
            "checked_at": time.time(), "reachable": reachable, "error": None if reachable else "Cluster 'local' is unreachable.",
            "events": events or []}


@database_sync_to_async
def a_user() -> User:
    return User.objects.create_user(f"ws-{time.monotonic_ns()}", password="x")


async def test_anonymous_socket_is_refused(redis_server: str) -> None:
    comm = communicator("/ws/clusters/local/live/?view=overview", AnonymousUser())
    connected, code = await comm.connect()
    assert not connected and code == 4401


async def test_socket_for_an_unknown_cluster_is_refused(redis_server: str) -> None:
    comm = communicator("/ws/clusters/nope/live/?view=overview", await a_user())
    connected, code = await comm.connect()
    assert not connected and code == 4404


async def test_socket_for_an_unknown_view_is_refused(redis_server: str) -> None:
    comm = communicator("/ws/clusters/local/live/?view=secrets", await a_user())
    connected, code = await comm.connect()
    assert not connected and code == 4404


async def test_changed_snapshot_is_pushed_as_a_rendered_overview_fragment(redis_server: str) -> None:
    snap = sample_snapshot(version=int(time.time() * 1000))
    store.save(snap, snap.content_bytes())
    comm = communicator("/ws/clusters/local/live/?view=overview", await a_user())
    connected, _ = await comm.connect()
    assert connected
    await get_channel_layer().group_send(cluster_group("local"), update(snap.version))
    status = await comm.receive_json_from(timeout=5)
    assert status["type"] == "status" and status["reachable"] is True and status["version"] == snap.version
    fragment = await comm.receive_json_from(timeout=5)
    assert fragment["type"] == "fragment" and fragment["target"] == "live-overview" and fragment["version"] == snap.version
    assert '<tr data-broker="3" class="row-down">' in fragment["html"]
    await comm.disconnect()


async def test_broadcasts_during_a_slow_redraw_get_their_status_at_once_and_one_redraw_after_it(
        redis_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A redraw slower than the broadcasts (at 300,000 partitions: seconds against one a second)
    must not queue one redraw per broadcast: the page fell 30 to 45 s behind, statuses too."""
    from console import live

    snap = sample_snapshot(version=int(time.time() * 1000))
    store.save(snap, snap.content_bytes())
    drawn: list[float] = []

    def slow(state: Any, params: Any) -> dict[str, str]:
        time.sleep(0.6)
        drawn.append(time.monotonic())
        return {"live-overview": f"<p>{len(drawn)}</p>"}

    monkeypatch.setitem(live.FRAGMENTS, "overview", slow)
    monkeypatch.setattr(live, "SHARED", set())  # (drawn again from the same snapshot, not sent as drawn before)
    comm = communicator("/ws/clusters/local/live/?view=overview", await a_user())
    assert (await comm.connect())[0]
    started = time.monotonic()
    statuses = []
    for i in range(6):  # (each status received before the next broadcast: a process that fell behind sends only the latest)
        await get_channel_layer().group_send(cluster_group("local"), update(snap.version + i))
        statuses.append(await comm.receive_json_from(timeout=5))
    fragment_received = [m for m in statuses if m["type"] == "fragment"]
    assert not fragment_received and all(m["type"] == "status" for m in statuses)
    assert time.monotonic() - started < 0.6  # (all six before the first redraw is done)
    fragments = [await comm.receive_json_from(timeout=5) for _ in range(2)]
    assert [f["html"] for f in fragments] == ["<p>1</p>", "<p>2</p>"]  # one for the first, one for the five after
    assert await comm.receive_nothing(timeout=1.0) and len(drawn) == 2
    await comm.disconnect()


async def test_sockets_showing_the_same_page_get_one_drawing_per_version(redis_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fragments drawn from the snapshot and params alone (live.SHARED) are drawn once per version
    for every socket of the process showing that page (at 300,000 partitions each further overview
    took 9 ms of the one render thread a version); other params, a new version, a changed quorum
    are drawn again, and views that read more (a group's page: its lag history) are not shared."""
    from console import live
    from console.snapshots.model import QuorumMember, QuorumState

    snap = sample_snapshot(version=int(time.time() * 1000))
    store.save(snap, snap.content_bytes())
    calls: list[tuple[int | None, str]] = []
    real = live.FRAGMENTS["topics"]

    def counted(state: Any, params: Any) -> dict[str, str]:
        calls.append((state.snapshot.version, params.get("q", "")))
        return real(state, params)

    monkeypatch.setitem(live.FRAGMENTS, "topics", counted)
    user = await a_user()
    same = [communicator("/ws/clusters/local/live/?view=topics", user) for _ in range(3)]
    other = communicator("/ws/clusters/local/live/?view=topics&q=orders", user)
    for comm in (*same, other):
        assert (await comm.connect())[0]

    async def fragments() -> list[str]:
        out = []
        for comm in (*same, other):
            status = await comm.receive_json_from(timeout=5)
            fragment = await comm.receive_json_from(timeout=5)
            assert status["type"] == "status" and fragment["type"] == "fragment" and fragment["target"] == "live-topics"
            out.append(fragment["html"])
        return out

    await get_channel_layer().group_send(cluster_group("local"), update(snap.version))
    html = await fragments()
    assert html[0] == html[1] == html[2] != html[3] and "orders" in html[3]
    assert sorted(calls) == [(snap.version, ""), (snap.version, "orders")]  # (one drawing per params)
    # A new version is drawn again, once.
    calls.clear()
    v2 = sample_snapshot(version=snap.version + 1)
    v2.quorum = QuorumState(leader_id=1, leader_epoch=3, high_watermark=10, voters=[QuorumMember(1, 10, 0, 0, 0)], observers=[])
    store.save(v2, v2.content_bytes())
    await get_channel_layer().group_send(cluster_group("local"), update(v2.version))
    await fragments()
    assert sorted(calls) == [(v2.version, ""), (v2.version, "orders")]
    # The same version with another quorum (a stamp written alone) is drawn again too.
    calls.clear()
    moved = sample_snapshot(version=v2.version)
    moved.quorum = QuorumState(leader_id=2, leader_epoch=4, high_watermark=12, voters=[QuorumMember(2, 12, 0, 0, 0)], observers=[])
    store.client().set("console:snapshot:local:stamp", moved.stamp_bytes())
    await get_channel_layer().group_send(cluster_group("local"), {**update(v2.version), "quorum_changed": True})
    await fragments()
    assert sorted(calls) == [(v2.version, ""), (v2.version, "orders")]
    for comm in (*same, other):
        await comm.disconnect()
    assert "group" not in live.SHARED and {"overview", "topics", "groups", "layout", "at_risk", "topic"} <= live.SHARED


async def test_unchanged_snapshot_sends_only_the_status(redis_server: str) -> None:
    comm = communicator("/ws/clusters/local/live/?view=layout", await a_user())
    assert (await comm.connect())[0]
    await get_channel_layer().group_send(cluster_group("local"), update(1, changed=False, reachable=False))
    status = await comm.receive_json_from(timeout=5)
    assert status == {**status, "type": "status", "reachable": False}
    assert await comm.receive_nothing(timeout=0.5)
    await comm.disconnect()


async def test_events_page_receives_only_events_matching_its_filter(redis_server: str) -> None:
    comm = communicator("/ws/clusters/local/live/?view=events&kind=broker_down", await a_user())
    assert (await comm.connect())[0]
    base: dict[str, Any] = {"cluster": "local", "at": "2026-11-22T10:00:00+00:00", "severity": "critical", "topic": None, "partition": None, "details": {}}
    events = [
        {**base, "id": 1, "kind": "broker_down", "broker": 2, "message": "Broker 2 (127.0.0.1:9094) is down"},
        {**base, "id": 2, "kind": "leader_change", "broker": 1, "message": "t-0 leader 2 -> 1", "topic": "t", "partition": 0},
    ]
    await get_channel_layer().group_send(cluster_group("local"), update(2, events=events))
    assert (await comm.receive_json_from(timeout=5))["type"] == "status"
    rows = await comm.receive_json_from(timeout=5)
    assert rows["type"] == "prepend" and rows["count"] == 1
    assert "Broker 2 (127.0.0.1:9094) is down" in rows["html"] and "leader 2 -&gt; 1" not in rows["html"]
    await comm.disconnect()


async def test_event_message_with_html_is_escaped(redis_server: str) -> None:
    comm = communicator("/ws/clusters/local/live/?view=events", await a_user())
    assert (await comm.connect())[0]
    event = {"id": 3, "cluster": "local", "at": "2026-11-22T10:00:00+00:00", "severity": "info", "kind": "topic_created",
             "broker": None, "topic": "x", "partition": None, "details": {}, "message": "<script>alert(1)</script>"}
    await get_channel_layer().group_send(cluster_group("local"), update(3, events=[event]))
    await comm.receive_json_from(timeout=5)
    rows = await comm.receive_json_from(timeout=5)
    assert "<script>" not in rows["html"] and "&lt;script&gt;" in rows["html"]
    await comm.disconnect()


async def test_a_job_page_redraws_on_its_own_jobs_progress_only(redis_server: str) -> None:
    """A message type an app registered (brokers_app: reassignment.progress) reaches only the pages it is for."""
    from brokers_app.models import ReassignmentJob

    snap = sample_snapshot(version=int(time.time() * 1000))
    store.save(snap, snap.content_bytes())
    job = await database_sync_to_async(ReassignmentJob.objects.create)(
        cluster="local", created_by="op", kind="imported", plan={"version": 1, "partitions": [], "request": {"kind": "imported"}})
    comm = communicator(f"/ws/clusters/local/live/?view=reassignment&job={job.id}", await a_user())
    assert (await comm.connect())[0]
    await get_channel_layer().group_send(cluster_group("local"), {"type": "reassignment.progress", "job": job.id + 1})
    assert await comm.receive_nothing(timeout=0.5)
    await get_channel_layer().group_send(cluster_group("local"), {"type": "reassignment.progress", "job": job.id})
    fragment = await comm.receive_json_from(timeout=5)
    assert (fragment["type"], fragment["target"]) == ("fragment", "job-progress"), fragment
    await comm.disconnect()
