"""The alert pages in-process: what each role sees and may do, forms that refuse with the API's
sentences (never a server error), odd names shown as text, and the active alerts redrawn over the
websocket when the cluster's update arrives."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Group, User
from django.utils import timezone

from alerts_app.models import Alert, AlertChannel, AlertRule, Silence
from console.models import AuditEntry
from console.realtime import cluster_group
from console.routing import websocket_urlpatterns
from console.snapshots import store
from console.snapshots.model import Snapshot
from tests.web.conftest import sample_snapshot

ODD = "<b>'\"/%ü"
ESCAPED = "&lt;b&gt;&#x27;&quot;/%ü"
PAGES = ("", "history/", "rules/", "silences/", "channels/")


@pytest.fixture
def setup(snapshot: Snapshot, db: None) -> dict[str, Any]:
    hook = AlertChannel.objects.create(name=ODD, kind="webhook", url="https://hooks.example.com/secret-path", secret="k")
    rule = AlertRule.objects.create(cluster="local", name=ODD, condition="broker_down", severity="critical", for_seconds=60)
    rule.channels.set([hook])
    since = timezone.now() - timedelta(minutes=3)
    alert = Alert.objects.create(rule=rule, cluster="local", key=f"broker:{ODD}", state="firing", severity="critical",
                                 message=f"Broker {ODD} left the cluster.", since=since, fired_at=since)
    Alert.objects.create(rule=rule, cluster="local", key="broker:2", state="resolved", severity="critical", message="Broker 2 left.",
                         since=since - timedelta(hours=2), fired_at=since - timedelta(hours=2), resolved_at=since - timedelta(hours=1))
    silence = Silence.objects.create(cluster="local", matchers=[{"field": "key", "value": ODD, "regex": False}],
                                     starts_at=timezone.now(), ends_at=timezone.now() + timedelta(hours=1), comment=f"why {ODD}",
                                     created_by="operator")
    return {"hook": hook, "rule": rule, "alert": alert, "silence": silence}


def page(path: str = "") -> str:
    return f"/clusters/local/alerts/{path}"


def test_every_alert_page_renders_odd_names_as_text(client_as: Any, setup: dict[str, Any]) -> None:
    paths = [*PAGES, f"rules/{setup['rule'].id}/", "channels/%3Cb%3E'%22~2F%25%C3%BC/"]
    for role in ("viewer", "admin"):
        for path in paths:
            r = client_as(role).get(page(path))
            assert r.status_code == 200, (role, path, r.content[:300])
            html = r.content.decode()
            assert ODD not in html, (role, path)
            if path not in ("history/",):
                assert ESCAPED in html, (role, path)


def test_a_viewer_sees_alerts_and_rules_without_any_form_to_change_them(client_as: Any, setup: dict[str, Any]) -> None:
    viewer = client_as("viewer")
    active = viewer.get(page()).content.decode()
    assert f"Broker {ESCAPED} left the cluster." in active and 'id="ack-form"' not in active and "Acknowledge" not in active
    assert 'id="rule-form"' not in viewer.get(page("rules/")).content.decode()
    assert 'id="silence-form"' not in viewer.get(page("silences/")).content.decode()
    channels = viewer.get(page("channels/")).content.decode()
    assert 'id="channel-form"' not in channels and "secret-path" not in channels and "https://hooks.example.com/…" in channels
    assert viewer.post(page("rules/"), {"op": "save", "name": "x", "condition": "offline"}).status_code == 403
    assert viewer.post(page(), {"alert": setup["alert"].id}).status_code == 403
    assert not AlertRule.objects.filter(name="x").exists()


def test_the_header_has_an_alerts_tab_marked_on_every_alert_page(client_as: Any, setup: dict[str, Any]) -> None:
    for path in PAGES:
        html = client_as("viewer").get(page(path)).content.decode()
        assert '<a href="/clusters/local/alerts/" class="active">Alerts</a>' in html, path


def test_an_operator_creates_a_rule_through_the_form(client_as: Any, setup: dict[str, Any]) -> None:
    r = client_as("operator").post(page("rules/"), {"op": "save", "name": "lagging", "condition": "group_lag", "target": "orders-*",
                                                    "threshold": "1000", "for_seconds": "120", "severity": "warning",
                                                    "channels": [ODD], "repeat_seconds": "3600", "enabled": "1"})
    assert r.status_code == 302 and r["Location"] == page("rules/")
    rule = AlertRule.objects.get(name="lagging")
    assert (rule.threshold, rule.for_seconds, rule.target, [c.name for c in rule.channels.all()]) == (1000.0, 120, "orders-*", [ODD])
    listed = client_as("viewer").get(page("rules/")).content.decode()
    assert "group_lag above 1000 records" in listed and "2 min" in listed
    assert AuditEntry.objects.get(action="alert_rule_create").username == "operator"


@pytest.mark.parametrize(("fields", "sentence"), [
    ({"for_seconds": "-5"}, "for_seconds must be 0 or more seconds."),
    ({"condition": "lag_pct"}, "&#x27;lag_pct&#x27; is not a condition; conditions are group_status,"),
    ({"condition": "group_lag", "threshold": "lots"}, "&#x27;threshold&#x27; must be a number of records, not &#x27;lots&#x27;."),
    ({"target": "re:(a"}, "&#x27;target&#x27; is not a valid regular expression"),
])
def test_a_bad_rule_form_is_shown_again_with_the_apis_sentence(client_as: Any, setup: dict[str, Any], fields: dict[str, str],
                                                               sentence: str) -> None:
    r = client_as("operator").post(page("rules/"), {"op": "save", "name": "typed name", "condition": "broker_down", "target": "*",
                                                    "for_seconds": "0", "severity": "critical", **fields})
    assert r.status_code == 400
    html = r.content.decode()
    assert sentence in html and 'value="typed name"' in html
    assert not AlertRule.objects.filter(name="typed name").exists()


def test_the_preview_shows_what_would_fire_now_and_saves_nothing(client_as: Any, setup: dict[str, Any]) -> None:
    r = client_as("operator").post(page("rules/"), {"op": "preview", "name": "", "condition": "broker_down", "target": "*",
                                                    "for_seconds": "60", "severity": "critical"})
    assert r.status_code == 200
    html = r.content.decode()
    assert 'id="rule-preview"' in html and "1 match</h2>" in html and "broker:3" in html
    assert AlertRule.objects.count() == 1


def test_an_operator_edits_and_deletes_a_rule_on_its_page(client_as: Any, setup: dict[str, Any]) -> None:
    rule, op = setup["rule"], client_as("operator")
    r = op.post(page(f"rules/{rule.id}/"), {"op": "save", "name": "renamed", "condition": "broker_down", "target": "2",
                                              "for_seconds": "30", "severity": "warning", "repeat_seconds": "0", "enabled": "1"})
    assert r.status_code == 302
    rule.refresh_from_db()
    assert (rule.name, rule.target, rule.severity, rule.channels.count()) == ("renamed", "2", "warning", 0)
    assert op.post(page(f"rules/{rule.id}/"), {"op": "delete"}).status_code == 302
    assert not AlertRule.objects.exists()
    assert client_as("viewer").get(page(f"rules/{rule.id}/")).status_code == 404


def test_an_operator_acknowledges_from_the_active_page(client_as: Any, setup: dict[str, Any]) -> None:
    alert = setup["alert"]
    html = client_as("operator").get(page()).content.decode()
    assert f'form="ack-form" name="alert" value="{alert.id}"' in html
    r = client_as("operator").post(page(), {"alert": str(alert.id)})
    assert r.status_code == 302
    alert.refresh_from_db()
    assert alert.acknowledged_by == "operator"
    assert "acknowledged by operator" in client_as("viewer").get(page()).content.decode()
    again = client_as("operator").post(page(), {"alert": str(alert.id)})
    assert again.status_code == 409 and "was acknowledged by operator already" in again.content.decode()
    assert client_as("operator").post(page(), {"alert": "many"}).status_code == 400


def test_the_history_filters_and_refuses_a_bad_time_with_a_sentence(client_as: Any, setup: dict[str, Any]) -> None:
    viewer = client_as("viewer")
    resolved = viewer.get(page("history/"), {"state": "resolved"}).content.decode()
    assert "Broker 2 left." in resolved and "left the cluster" not in resolved and "1 h" in resolved
    bad = viewer.get(page("history/"), {"since": "last tuesday"})
    assert bad.status_code == 400
    assert "&#x27;since&#x27; must be an ISO date and time or milliseconds since 1970" in bad.content.decode()


def test_silences_are_made_with_why_and_expired_from_the_page(client_as: Any, setup: dict[str, Any]) -> None:
    op = client_as("operator")
    refused = op.post(page("silences/"), {"op": "create", "cluster": "local", "field0": "rule", "value0": ODD,
                                          "duration_seconds": "3600", "comment": ""})
    assert refused.status_code == 400 and "say why these alerts are silenced" in refused.content.decode()
    r = op.post(page("silences/"), {"op": "create", "cluster": "*", "field0": "rule", "value0": ODD, "field1": "key",
                                    "value1": "broker:.*", "regex1": "1", "duration_seconds": "3600", "comment": "upgrade"})
    assert r.status_code == 302
    made = Silence.objects.get(comment="upgrade")
    assert made.cluster == "*" and made.created_by == "operator" and made.matchers[1] == {"field": "key", "value": "broker:.*", "regex": True}
    assert op.post(page("silences/"), {"op": "expire", "silence": str(made.id)}).status_code == 302
    made.refresh_from_db()
    assert made.expired_early_by == "operator"
    assert "ended by operator" in client_as("viewer").get(page("silences/")).content.decode()


def test_only_an_admin_creates_a_channel_and_a_bad_url_is_a_sentence(client_as: Any, setup: dict[str, Any]) -> None:
    assert client_as("operator").post(page("channels/"), {"op": "save", "name": "x", "kind": "email", "to": "a@example.com"}).status_code == 403
    admin = client_as("admin")
    bad = admin.post(page("channels/"), {"op": "save", "name": "files", "kind": "webhook", "url": "ftp://files.example.com/"})
    assert bad.status_code == 400 and "must start with http:// or https://" in bad.content.decode()
    r = admin.post(page("channels/"), {"op": "save", "name": "oncall", "kind": "email", "to": "a@example.com, b@example.com",
                                       "enabled": "1"})
    assert r.status_code == 302
    assert AlertChannel.objects.get(name="oncall").to == ["a@example.com", "b@example.com"]


def test_an_admin_sends_a_test_and_sees_the_delivery_on_the_channel_page(client_as: Any, setup: dict[str, Any]) -> None:
    path = page("channels/%3Cb%3E'%22~2F%25%C3%BC/")
    admin = client_as("admin")
    html = admin.get(path).content.decode()
    assert 'value="test"' in html and "Send a test" in html
    r = admin.post(path, {"op": "test"})
    assert r.status_code == 302
    after = admin.get(path).content.decode()
    assert "A test message is on its way" in after and "Test notification to alert channel" in after
    assert 'id="deliveries-table"' in after and 'id="no-dead-letters"' in after


# Live: the active alerts redrawn when the cluster's update arrives ---------------------------------


@database_sync_to_async
def _user_and_rule(role: str) -> tuple[User, AlertRule]:
    rule = AlertRule.objects.create(cluster="local", name="offline partitions", condition="offline", severity="critical")
    user = User.objects.create_user(f"live-{role}", password="x")
    user.groups.set([Group.objects.get_or_create(name=role)[0]])  # (a transactional test empties the tables after it)
    return user, rule


@database_sync_to_async
def _fire(rule: AlertRule) -> None:
    Alert.objects.create(rule=rule, cluster="local", key="topic:orders", state="firing", severity="critical",
                         message="Partition orders-2 has no leader.", since=timezone.now(), fired_at=timezone.now())


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role", ["operator", "viewer"])
async def test_the_active_alerts_are_redrawn_when_the_clusters_update_arrives(redis_server: str, role: str) -> None:
    snap = sample_snapshot(version=int(time.time() * 1000))
    store.save(snap, snap.content_bytes())
    user, rule = await _user_and_rule(role)
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), "/ws/clusters/local/live/?view=alerts")
    comm.scope["user"] = user
    connected, _ = await comm.connect()
    assert connected
    await _fire(rule)
    await get_channel_layer().group_send(cluster_group("local"), {
        "type": "cluster.update", "cluster": "local", "version": snap.version, "changed": True, "taken_at": time.time(),
        "checked_at": time.time(), "reachable": True, "error": None, "events": []})
    messages = [await comm.receive_json_from(timeout=5) for _ in range(2)]
    fragment = next(m for m in messages if m["type"] == "fragment")
    assert fragment["target"] == "live-alerts"
    assert "Partition orders-2 has no leader." in fragment["html"]
    assert ('form="ack-form"' in fragment["html"]) is (role == "operator"), "only those who may acknowledge get the button"
    await comm.disconnect()
