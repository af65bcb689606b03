"""The live pages of a web process share one member of their cluster's group (console/live_hub.py):
each broadcast is received once, drawn once per view and visible names, and handed to every page,
each page with its own access cut and its own outbox; its task ends with its event loop."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User

from console import group_receiver, live, live_hub, socket_guard
from console.models import RoleBinding
from console.realtime import cluster_group
from console.routing import websocket_urlpatterns
from console.snapshots import store
from console.snapshots.model import Snapshot
from tests.web.conftest import TEAM_B_TOPIC

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("no_socket_slots")]


def update(version: int, changed: bool = True) -> dict[str, Any]:
    return {"type": "cluster.update", "cluster": "local", "version": version, "changed": changed, "taken_at": time.time(),
            "checked_at": time.time(), "reachable": True, "error": None, "events": []}


def make_users(count: int, scoped: bool = False) -> list[User]:
    stamp = time.monotonic_ns()
    users = [User.objects.create_user(f"hub-{stamp}-{i}", password="x") for i in range(count)]
    if scoped:
        for user in users:
            RoleBinding.objects.create(subject_kind="user", subject=user.username, role="viewer", cluster="local",
                                       topic_kind="prefix", topic_pattern="team-a.", group_kind="prefix", group_pattern="team-a/")
    return users


async def opened(path: str, user: User) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path)
    comm.scope["user"] = user
    connected, code = await comm.connect(timeout=20)
    assert connected, code
    return comm


def members() -> set[bytes]:
    return set(store.client().zrange(f"asgi:group:{cluster_group('local')}", 0, -1))


async def next_of(comm: WebsocketCommunicator, kind: str) -> dict[str, Any]:
    while True:
        message = await comm.receive_json_from(timeout=10)
        if message["type"] == kind:
            return message


@pytest.mark.asyncio
async def test_the_pages_of_a_process_are_one_member_of_their_clusters_group(snapshot: Snapshot) -> None:
    before = members()
    users = await database_sync_to_async(make_users)(4)
    views = ["overview", "topics", "groups", "status", "events"]
    comms = [await opened(f"/ws/clusters/local/live/?view={views[i % 5]}", users[i % 4]) for i in range(20)]
    assert len(members() - before) == 1
    await get_channel_layer().group_send(cluster_group("local"), update(snapshot.version))
    statuses = [await next_of(c, "status") for c in comms]
    assert {s["version"] for s in statuses} == {snapshot.version}
    hub = live_hub.hub_of("local")
    assert hub is not None
    for comm in comms:
        await comm.disconnect()
    assert live_hub.hub_of("local") is None
    await asyncio.get_running_loop().run_in_executor(None, hub.receiver.thread.join, 10)
    assert not hub.receiver.thread.is_alive() and members() == before  # (its receiver left the group)


@pytest.mark.asyncio
async def test_pages_whose_users_see_other_names_get_their_own_drawing_of_one_broadcast(
        teams: Snapshot, monkeypatch: pytest.MonkeyPatch) -> None:
    """Shared drawings are per visible names: team A's viewers never get the drawing that holds team B's topic."""
    calls: list[int] = []
    real = live.FRAGMENTS["topics"]

    def counted(state: Any, params: Any) -> dict[str, str]:
        calls.append(state.snapshot.version)
        return real(state, params)

    monkeypatch.setitem(live.FRAGMENTS, "topics", counted)
    everyone = await database_sync_to_async(make_users)(3)
    team_a = await database_sync_to_async(make_users)(3, scoped=True)
    wide = [await opened("/ws/clusters/local/live/?view=topics", u) for u in everyone for _ in range(3)]
    narrow = [await opened("/ws/clusters/local/live/?view=topics", u) for u in team_a for _ in range(3)]
    await get_channel_layer().group_send(cluster_group("local"), update(teams.version))
    for comm in wide:
        assert TEAM_B_TOPIC in (await next_of(comm, "fragment"))["html"]
    for comm in narrow:
        html = (await next_of(comm, "fragment"))["html"]
        assert "team-a.orders" in html and TEAM_B_TOPIC not in html
    assert calls == [teams.version, teams.version]  # (one drawing for each set of visible names, eighteen pages)
    for comm in (*wide, *narrow):
        await comm.disconnect()


@pytest.mark.asyncio
async def test_a_page_that_does_not_keep_up_gets_the_latest_status_and_holds_no_other_back(snapshot: Snapshot) -> None:
    users = await database_sync_to_async(make_users)(2)
    slow_comm = await opened("/ws/clusters/local/live/?view=status", users[0])
    others = [await opened("/ws/clusters/local/live/?view=status", users[1]) for _ in range(3)]
    hub = live_hub.hub_of("local")
    assert hub is not None
    [slow] = [p for p in hub.pages if p.drawn_for() == users[0]]
    held = asyncio.Event()
    real_send = slow.outbox._send

    async def stuck(text: str) -> None:
        await held.wait()
        await real_send(text)

    slow.outbox._send = stuck
    for i in range(5):
        await get_channel_layer().group_send(cluster_group("local"), update(snapshot.version + i, changed=False))
        for comm in others:  # (each broadcast reaches the others while the slow page sends nothing)
            assert (await next_of(comm, "status"))["version"] == snapshot.version + i
    held.set()
    got = [(await slow_comm.receive_json_from(timeout=5))["version"] for _ in range(2)]
    assert got == [snapshot.version, snapshot.version + 4]  # (the one it was sending, then the latest)
    assert await slow_comm.receive_nothing(timeout=0.3)
    for comm in (slow_comm, *others):
        await comm.disconnect()


@pytest.mark.asyncio
async def test_a_process_that_fell_behind_sends_the_latest_status_and_one_redraw(snapshot: Snapshot) -> None:
    """Broadcasts that arrived while the process was busy (its loop blocked here) are taken together:
    every event, but one status, the latest, and one redraw, not a backlog that only grows."""
    from console.realtime import group_send

    users = await database_sync_to_async(make_users)(1)
    page = await opened("/ws/clusters/local/live/?view=overview", users[0])
    events = await opened("/ws/clusters/local/live/?view=events", users[0])
    event = {"id": 1, "cluster": "local", "at": "2026-11-22T10:00:00+00:00", "severity": "info", "kind": "topic_created",
             "broker": None, "topic": "t", "partition": None, "details": {}}
    for i in range(3):  # (blocking this loop: the hub's task gets no turn meanwhile)
        group_send(cluster_group("local"), {**update(snapshot.version + i), "events": [{**event, "id": i, "message": f"created t{i}"}]})
    time.sleep(0.5)
    status = await page.receive_json_from(timeout=5)
    assert (status["type"], status["version"]) == ("status", snapshot.version + 2)
    assert (await page.receive_json_from(timeout=5))["type"] == "fragment"
    assert await page.receive_nothing(timeout=0.5)
    assert (await events.receive_json_from(timeout=5))["version"] == snapshot.version + 2
    rows = [await events.receive_json_from(timeout=5) for _ in range(3)]
    assert [r["type"] for r in rows] == ["prepend"] * 3 and all(f"created t{i}" in r["html"] for i, r in enumerate(rows))
    await page.disconnect()
    await events.disconnect()


@pytest.mark.asyncio
async def test_pages_go_on_getting_broadcasts_after_redis_failed_the_hubs_receive(
        snapshot: Snapshot, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Redis that restarted empty: the receive fails and the group's membership is gone; the hub
    joins again by itself and its pages stay open."""
    import redis

    monkeypatch.setattr(group_receiver, "RETRY_MAX_SECONDS", 0.1)
    layer = get_channel_layer()
    receive = layer.receive
    failed = threading.Event()

    others = members()  # (receivers of other loops, if any, are not the one failed)

    async def first_fails(channel: str) -> dict[str, Any]:  # (in the receiver's thread)
        if not failed.is_set() and channel.encode() not in others:
            store.client().delete(f"asgi:group:{cluster_group('local')}")
            failed.set()
            raise redis.ConnectionError("Connection refused")
        return await receive(channel)

    monkeypatch.setattr(layer, "receive", first_fails)
    users = await database_sync_to_async(make_users)(1)
    comm = await opened("/ws/clusters/local/live/?view=status", users[0])
    hub = live_hub.hub_of("local")
    assert hub is not None
    assert await asyncio.get_running_loop().run_in_executor(None, failed.wait, 10)
    deadline = time.monotonic() + 10
    while hub.receiver.channel.encode() not in members() and time.monotonic() < deadline:  # (joined again)
        await asyncio.sleep(0.05)
    await layer.group_send(cluster_group("local"), update(snapshot.version, changed=False))
    assert (await next_of(comm, "status"))["version"] == snapshot.version
    await comm.disconnect()


@pytest.mark.asyncio
async def test_sockets_opening_together_are_checked_in_a_few_calls(snapshot: Snapshot, monkeypatch: pytest.MonkeyPatch) -> None:
    """Checked one by one, the pages of a restarted web process queued behind each other in the one
    database thread, past the server's time for a handshake."""
    calls: list[int] = []
    real = socket_guard._verdicts

    def counted(sockets: list[Any]) -> Any:
        calls.append(len(sockets))
        return real(sockets)

    monkeypatch.setattr(socket_guard, "_verdicts", counted)
    slots: list[int] = []
    take_many = socket_guard._slots.work

    def slots_counted(asks: list[Any]) -> Any:
        slots.append(len(asks))
        return take_many(asks)

    monkeypatch.setattr(socket_guard._slots, "work", slots_counted)
    users = await database_sync_to_async(make_users)(5)
    comms = []
    for i in range(60):
        comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), "/ws/clusters/local/live/?view=status")
        comm.scope["user"] = users[i % 5]
        comms.append(comm)
    results = await asyncio.gather(*(c.connect(timeout=20) for c in comms))
    assert all(connected for connected, _ in results)
    assert sum(calls) >= 60 and len(calls) <= 10, calls
    assert sum(slots) == 60 and len(slots) <= 10, slots  # (and their slots in a few round trips to Redis)
    for comm in comms:
        await comm.disconnect()


def test_a_loop_closed_with_live_pages_open_leaves_no_task_pending(snapshot: Snapshot) -> None:
    """Twice, as the test modules' loops come one after the other: the second loop must not wait on
    anything the first left behind (a loop that never finished closing hung the web tests)."""
    users = make_users(2)
    left: list[asyncio.Task[Any]] = []
    receivers: list[threading.Thread] = []

    async def pages_left_open() -> None:
        comms = [await opened(f"/ws/clusters/local/live/?view={v}", users[i % 2]) for i, v in enumerate(["overview", "status", "topics"])]
        await get_channel_layer().group_send(cluster_group("local"), update(snapshot.version))
        for comm in comms:
            await next_of(comm, "status")
        hub = live_hub.hub_of("local")
        assert hub is not None
        left.extend(t for t in asyncio.all_tasks() if t is not asyncio.current_task())
        assert hub.task in left
        receivers.append(hub.receiver.thread)

    def run(done: threading.Event, errors: list[BaseException]) -> None:
        try:
            asyncio.run(pages_left_open())
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            done.set()

    for _ in range(2):
        left.clear()
        done, errors = threading.Event(), list[BaseException]()
        threading.Thread(target=run, args=(done, errors), daemon=True).start()
        assert done.wait(60), "the event loop never finished closing"
        assert not errors, errors
        assert left and all(t.done() for t in left), [t for t in left if not t.done()]
    for thread in receivers:
        thread.join(10)
        assert not thread.is_alive(), "a hub's receiving thread outlived its loop"
