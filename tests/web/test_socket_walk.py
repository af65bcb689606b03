"""Every websocket view and message action, as every role and as a scoped user: a socket opens only for
who may see what it shows, and every action on it answers within what the role may do.

The live socket's views come from the apps' registry (console.live.VIEWS), so a view added without an
action of its own is walked too. The scoped user is team A's viewer (topics `team-a.`, groups
`team-a/`), asking about team B's topic and group.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote

import pytest
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User

from console import live
from console.access import ACTIONS, ROLES
from console.models import RoleBinding
from console.routing import websocket_urlpatterns
from console.snapshots.model import Snapshot
from tests.web.conftest import TEAM_B_GROUP, TEAM_B_TOPIC, make_user

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("no_socket_slots")]

SCOPED = "team-a"
# Views a scoped user may open on its cluster (cut to its names): cluster-wide ones (reassignments, analytics) hold every team's names.
SCOPED_MAY_OPEN = {"status", "overview", "layout", "at_risk", "topics", "groups", "events", "broker"}


@database_sync_to_async
def user_for(caller: str) -> User:
    if caller != SCOPED:
        from django.contrib.auth.models import Group

        Group.objects.get_or_create(name=caller)  # (a transactional test's flush takes the migration's groups)
        return make_user(caller)
    user = User.objects.create_user(f"team-a-{time.monotonic_ns()}", password="x")
    RoleBinding.objects.create(subject_kind="user", subject=user.username, role="viewer", cluster="local",
                               topic_kind="prefix", topic_pattern="team-a.", group_kind="prefix", group_pattern="team-a/")
    return user


def communicator(path: str, user: Any) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path)
    comm.scope["user"] = user
    return comm


async def is_refused(comm: WebsocketCommunicator) -> bool:
    """Whether the socket was refused: closed at connect, or accepted only to say why and close."""
    connected, _ = await comm.connect()
    if not connected:
        return True
    # A refusal is decided before the accept and sent right after it, in the same task with no thread in
    # between: an accepted socket that has said nothing a moment later stays open.
    if await comm.receive_nothing(timeout=0.2):  # (receive_output's timeout would cancel the consumer)
        return False
    out = await comm.receive_output(timeout=2.0)
    while out["type"] != "websocket.close":
        out = await comm.receive_output(timeout=2.0)
    return True


def view_cases() -> list[Any]:
    return [pytest.param(view, caller, id=f"{view} as {caller}") for view in sorted(live.VIEWS) for caller in (*ROLES, SCOPED)]


@pytest.mark.parametrize(("view", "caller"), view_cases())
async def test_a_live_view_opens_only_for_who_may_see_it(view: str, caller: str, teams: Snapshot) -> None:
    user = await user_for(caller)
    params = {"view": view, "topic": TEAM_B_TOPIC, "group": TEAM_B_GROUP, "job": "1"}
    comm = communicator("/ws/clusters/local/live/?" + "&".join(f"{k}={quote(v)}" for k, v in params.items()), user)
    action = live.VIEW_ACTIONS.get(view, "cluster.view")
    least = ACTIONS[action][0]
    expected_open = view in SCOPED_MAY_OPEN if caller == SCOPED else ROLES.index(caller) >= ROLES.index(least)
    refused = await is_refused(comm)
    assert refused is not expected_open, f"{view} as {caller} (needs {action})"
    if not refused:
        await comm.disconnect()


@pytest.mark.parametrize("caller", [*ROLES, SCOPED])
async def test_the_message_socket_of_team_bs_topic_opens_for_roles_not_for_team_a(caller: str, teams: Snapshot) -> None:
    user = await user_for(caller)
    comm = communicator(f"/ws/clusters/local/topics/{TEAM_B_TOPIC}/messages/", user)
    refused = await is_refused(comm)
    assert refused is (caller == SCOPED)
    if not refused:
        await comm.disconnect()


@pytest.mark.parametrize("action", ["scan", "stop", "tail", "stop_tail", "produce", "delete", "", None])
async def test_every_message_action_is_a_read_or_refused_by_name(action: Any, teams: Snapshot, monkeypatch: Any) -> None:
    """The socket has no action that changes anything: produce, delete or anything unknown is an error."""
    from console import gateway

    writes: list[str] = []

    class NoWrites:
        def __getattr__(self, name: str) -> Any:
            if name.startswith(("produce", "delete", "create", "alter")):
                writes.append(name)
            raise gateway.errors.ClusterUnavailable("no Kafka in this test")

    monkeypatch.setattr(gateway, "for_cluster", lambda name: NoWrites())
    comm = communicator("/ws/clusters/local/topics/team-a.orders/messages/", await user_for("viewer"))
    assert (await comm.connect())[0]
    await comm.send_json_to({"action": action, "params": {}})
    if action in ("stop", "stop_tail"):  # (nothing running: nothing to say)
        assert await comm.receive_nothing(timeout=0.5)
        await comm.disconnect()
        return
    reply = await comm.receive_json_from(timeout=5)
    if action in ("scan", "tail"):
        assert reply["type"] in ("error", "progress", "done", "tailing", "records", "notice"), reply
    else:
        assert reply["type"] == "error" and "action" in reply["message"].lower(), reply
    assert not writes
    await comm.disconnect()
