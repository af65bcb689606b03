"""Scoped roles: a user bound to `team-a.` topics and `team-a/` groups sees and acts on those only.

Every route of the permission table is asked, with every method it declares plus HEAD and OPTIONS,
about team B's topic and group by team A's operator: the answer is 403 or 404, never data, and no
request reaches Kafka. Lists, events and the live sockets show team A's names only.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth.models import Group, User
from django.test import Client

from console.models import AuditEntry, RoleBinding
from console.snapshots.model import Snapshot
from tests.web.conftest import TEAM_B_GROUP, TEAM_B_TOPIC
from tests.web.test_route_roles import ROUTES, SAMPLES, UNDECLARED_PAGES, Route, expected_roles


def team_a_user(role: str = "operator", name: str = "alice") -> User:
    user = User.objects.create_user(name, password="pw")
    RoleBinding.objects.create(subject_kind="user", subject=name, role=role, cluster="local", topic_kind="prefix",
                               topic_pattern="team-a.", group_kind="prefix", group_pattern="team-a/")
    return user


def client_of(user: User) -> Client:
    c = Client()
    c.force_login(user)
    return c


def _team_b_path(route: Route) -> str | None:
    """The route's path about team B's topic or group; None for a route that names neither."""
    if "<str:topic>" not in route.key and "<name:group>" not in route.key:
        return None
    path = "/" + route.path
    path = path.replace(f"/topics/{SAMPLES['topic']}/", f"/topics/{TEAM_B_TOPIC}/")
    return path.replace("/team~2Fservice/", "/team-b~2Fsvc/")


CLUSTER_WIDE = [r for r in ROUTES if not r.is_admin_site and r.key not in UNDECLARED_PAGES and _team_b_path(r) is None
                and any(a in ("reassignments.view", "partitions.reassign", "analytics.view", "analytics.run", "leaders.elect",
                              "reports.schedule", "audit.view", "access.manage", "metrics.view")
                        for a in (expected_roles(r) or {}).values())]
NAMED = [r for r in ROUTES if not r.is_admin_site and _team_b_path(r) is not None]


@pytest.mark.parametrize("route", [pytest.param(r, id=r.key) for r in NAMED])
def test_team_a_gets_no_answer_about_team_bs_topic_or_group(route: Route, db: None, teams: Snapshot,
                                                             gateway_uses: list[str]) -> None:
    client = client_of(team_a_user())
    path = _team_b_path(route)
    assert path is not None
    for method in [*(expected_roles(route) or {}), "HEAD", "OPTIONS"]:
        body = json.dumps({}) if route.is_api else None
        response = client.generic(method, path, body or "", content_type="application/json")
        where = f"{method} {path}: {response.status_code}"
        assert response.status_code in (403, 404, 405), where
        assert b"m-team-b" not in response.content and b"client" not in response.content, where
    assert not gateway_uses, f"{route.key}: reached the gateway ({gateway_uses})"


@pytest.mark.parametrize("route", [pytest.param(r, id=r.key) for r in CLUSTER_WIDE])
def test_team_a_may_not_use_what_acts_on_the_whole_cluster(route: Route, db: None, teams: Snapshot,
                                                           gateway_uses: list[str]) -> None:
    client = client_of(team_a_user())
    for method in expected_roles(route) or {}:
        response = client.generic(method, "/" + route.path, "{}", content_type="application/json")
        assert response.status_code == 403, f"{method} /{route.path}: {response.status_code}"
    assert not gateway_uses


def test_team_a_sees_its_own_topic_and_group(db: None, teams: Snapshot) -> None:
    client = client_of(team_a_user())
    assert client.get("/clusters/local/topics/team-a.orders/").status_code == 200
    assert client.get("/api/v1/clusters/local/consumer-groups/team-a~2Fsvc/").status_code == 200
    assert client.get("/api/v1/clusters/local/consumer-groups/team-b~2Fsvc/").status_code == 403


def test_lists_counts_and_searches_show_team_a_only(db: None, teams: Snapshot) -> None:
    client = client_of(team_a_user(role="viewer"))
    topics = client.get("/api/v1/clusters/local/topics/?q=orders").json()
    assert [t["name"] for t in topics["results"]] == ["team-a.orders"] and topics["count"] == 1
    regex = client.get("/api/v1/clusters/local/topics/?q=team-.*&regex=true").json()
    assert [t["name"] for t in regex["results"]] == ["team-a.orders"]
    groups = client.get("/api/v1/clusters/local/consumer-groups/").json()
    assert [g["group"] for g in groups["results"]] == ["team-a/svc"] and groups["count"] == 1
    for page in ("/clusters/local/topics/", "/clusters/local/groups/", "/clusters/local/layout/", "/clusters/local/at-risk/"):
        html = client.get(page).content.decode()
        assert "team-b" not in html, page
    assert "team-a.orders" in client.get("/clusters/local/topics/").content.decode()
    assert "team-b" not in client.get("/clusters/local/topics/team-a.orders/").content.decode()


def test_an_unscoped_viewer_still_sees_every_team(db: None, teams: Snapshot, users: dict[str, User]) -> None:
    client = client_of(users["viewer"])
    names = {t["name"] for t in client.get("/api/v1/clusters/local/topics/").json()["results"]}
    assert {"team-a.orders", TEAM_B_TOPIC} <= names


def test_events_naming_team_bs_topic_or_group_are_hidden(db: None, teams: Snapshot) -> None:
    from datetime import UTC, datetime

    from brokers_app.models import Event

    now = datetime.now(tz=UTC)
    Event.objects.create(cluster="local", at=now, kind="leader_change", severity="info", message="b moved", topic=TEAM_B_TOPIC)
    Event.objects.create(cluster="local", at=now, kind="group_state", severity="info", message="b group", details={"group": TEAM_B_GROUP})
    Event.objects.create(cluster="local", at=now, kind="leader_change", severity="info", message="a moved", topic="team-a.orders")
    Event.objects.create(cluster="local", at=now, kind="broker_down", severity="critical", message="broker 2 down", broker=2)
    client = client_of(team_a_user(role="viewer"))
    shown = [e["message"] for e in client.get("/api/v1/clusters/local/events/").json()["events"]]
    assert shown == ["broker 2 down", "a moved"]
    page = client.get("/clusters/local/events/").content.decode()
    assert "a moved" in page and "b moved" not in page and "b group" not in page


def test_a_binding_for_a_group_applies_to_its_members(db: None, teams: Snapshot) -> None:
    user = User.objects.create_user("bob", password="pw")
    group = Group.objects.create(name="idp-team-b")
    user.groups.add(group)
    RoleBinding.objects.create(subject_kind="group", subject="idp-team-b", role="viewer", cluster="*", topic_kind="regex",
                               topic_pattern=r"team-b\..*", group_kind="none")
    client = client_of(user)
    assert client.get(f"/clusters/local/topics/{TEAM_B_TOPIC}/").status_code == 200
    assert client.get("/clusters/local/topics/team-a.orders/").status_code == 403
    assert client.get("/clusters/local/groups/team-b~2Fsvc/").status_code == 403  # (no groups in this binding)


def test_deny_by_default_leaves_a_user_without_a_role_nothing(db: None, teams: Snapshot, settings: Any) -> None:
    settings.CONSOLE_DEFAULT_ROLE = "none"
    client = client_of(User.objects.create_user("nobody", password="pw"))
    assert client.get("/clusters/local/").status_code == 403
    assert client.get("/api/v1/clusters/").status_code == 403


def test_a_binding_change_counts_from_the_next_request(db: None, teams: Snapshot) -> None:
    user = team_a_user(role="viewer")
    client = client_of(user)
    assert client.get(f"/clusters/local/topics/{TEAM_B_TOPIC}/").status_code == 403
    RoleBinding.objects.filter(subject="alice").update(topic_kind="all")
    RoleBinding.objects.get(subject="alice").save()  # (updated_at moves, as any edit through the page or API)
    assert client.get(f"/clusters/local/topics/{TEAM_B_TOPIC}/").status_code == 200


def test_admins_manage_bindings_through_the_api_and_every_change_is_audited(db: None, users: dict[str, User]) -> None:
    admin, viewer = client_of(users["admin"]), client_of(users["viewer"])
    body = {"subject_kind": "user", "subject": "viewer", "role": "operator", "cluster": "local", "topic_kind": "prefix",
            "topic_pattern": "team-a."}
    assert viewer.post("/api/v1/role-bindings/", body, content_type="application/json").status_code == 403
    created = admin.post("/api/v1/role-bindings/", body, content_type="application/json")
    assert created.status_code == 201, created.content
    bid = created.json()["id"]
    assert admin.patch(f"/api/v1/role-bindings/{bid}/", {"role": "viewer"}, content_type="application/json").json()["role"] == "viewer"
    assert admin.delete(f"/api/v1/role-bindings/{bid}/").status_code == 204
    actions = list(AuditEntry.objects.filter(action__endswith="role_binding").values_list("action", flat=True))
    assert sorted(actions) == ["create_role_binding", "delete_role_binding", "update_role_binding"]


@pytest.mark.parametrize(("body", "said"), [
    ({"subject": "viewer", "role": "root"}, "'role' must be one of"),
    ({"subject": "viewer", "actions": ["topic.eat"]}, "Unknown action"),
    ({"subject": "viewer", "role": "viewer", "topic_kind": "regex", "topic_pattern": "("}, "not a valid regular expression"),
    ({"subject": "viewer", "role": "viewer", "cluster": "elsewhere"}, "configured cluster"),
    ({"subject": "no-such-user", "role": "viewer"}, "There is no user"),
    ({"subject": "viewer"}, "needs a 'role'"),
    ({"subject": "viewer", "role": "viewer", "colour": "red"}, "'colour' is not a field of this request"),
])
def test_a_bad_binding_is_refused_with_a_sentence(body: dict[str, Any], said: str, db: None, users: dict[str, User]) -> None:
    response = client_of(users["admin"]).post("/api/v1/role-bindings/", body, content_type="application/json")
    assert response.status_code == 400 and said in response.json()["detail"], response.content


def test_the_access_page_adds_and_deletes_a_binding(db: None, users: dict[str, User]) -> None:
    admin = client_of(users["admin"])
    response = admin.post("/access/", {"subject_kind": "user", "subject": "viewer", "role": "operator", "cluster": "*",
                                       "topic_kind": "prefix", "topic_pattern": "<b>team-a."})
    assert response.status_code == 302
    page = admin.get("/access/").content.decode()
    assert "&lt;b&gt;team-a." in page and "<b>team-a." not in page
    bid = RoleBinding.objects.get().id
    assert admin.post("/access/", {"delete": str(bid)}).status_code == 302 and not RoleBinding.objects.exists()
    assert admin.post("/access/", {"subject": "viewer"}).status_code == 400


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_scoped_socket_is_refused_for_team_bs_topic_and_its_lists_are_cut(teams: Snapshot) -> None:
    from channels.routing import URLRouter
    from channels.testing import WebsocketCommunicator

    from console.routing import websocket_urlpatterns

    user = await database_sync_to_async(team_a_user)("viewer", f"ws-{time.monotonic_ns()}")

    def communicator(path: str) -> WebsocketCommunicator:
        comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path)
        comm.scope["user"] = user
        return comm

    refused = communicator(f"/ws/clusters/local/live/?view=topic&topic={TEAM_B_TOPIC}")
    await refused.connect()
    said = await refused.receive_json_from(timeout=5)
    assert "no longer" in said["message"] or "may" in said["message"]
    assert (await refused.receive_output(timeout=5))["type"] == "websocket.close"

    from channels.layers import get_channel_layer

    from console.realtime import cluster_group

    comm = communicator("/ws/clusters/local/live/?view=topics")
    assert (await comm.connect())[0]
    await get_channel_layer().group_send(cluster_group("local"), {
        "type": "cluster.update", "cluster": "local", "version": teams.version, "changed": True, "taken_at": time.time(),
        "checked_at": time.time(), "reachable": True, "error": None, "events": []})
    fragment = None
    for _ in range(5):
        message = await comm.receive_json_from(timeout=5)
        if message["type"] == "fragment":
            fragment = message
            break
    assert fragment is not None and "team-a.orders" in fragment["html"] and "team-b" not in fragment["html"]
    await comm.disconnect()


@pytest.mark.parametrize(("path", "body"), [
    ("/api/v1/clusters/local/topics/", {"name": "team-b.new", "partitions": 1, "replication_factor": 1}),
    ("/api/v1/clusters/local/topics/team-a.orders/messages/republish/", {"partition": 0, "offset": 0, "target_topic": TEAM_B_TOPIC}),
    ("/api/v1/clusters/local/consumer-groups/team-a~2Fsvc/offsets/", {"to": "group", "from_group": TEAM_B_GROUP, "dry_run": True}),
])
def test_names_in_a_body_are_checked_as_the_url_is(path: str, body: dict[str, Any], db: None, teams: Snapshot,
                                                    gateway_uses: list[str]) -> None:
    response = client_of(team_a_user()).post(path, body, content_type="application/json")
    assert response.status_code == 403, response.content
    assert "team-b" in response.json()["detail"]
    assert not gateway_uses


def test_the_overviews_counts_are_of_team_as_topics_only(db: None, teams: Snapshot, users: dict[str, User]) -> None:
    everyone = client_of(users["viewer"]).get("/api/v1/clusters/local/").json()["counts"]
    scoped = client_of(team_a_user(role="viewer")).get("/api/v1/clusters/local/").json()["counts"]
    assert scoped["topics"] == 1 and scoped["partitions"] == 1 and scoped["brokers"] == everyone["brokers"]
    assert everyone["topics"] > 1 and everyone["partitions"] > 1
