"""The alerting API in-process: channels, rules with their preview, alerts with acknowledgement and
silences; bad input answered with one sentence, roles (viewers see, operators change rules and
silences, admins channels), every change in the audit log, secrets never answered."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from alerts_app.models import Alert, AlertChannel, AlertRule, Silence
from console.models import AuditEntry
from console.snapshots.model import Snapshot

pytestmark = pytest.mark.django_db

ODD = "<b>'\"/%ü"


@pytest.fixture(autouse=True)
def _redis(redis_server: str) -> None:
    """(A change of a rule, channel or silence tells the evaluators through Redis.)"""


def call(client: Client, method: str, path: str, body: Any = None) -> Any:
    return client.generic(method, path, json.dumps(body if body is not None else {}), content_type="application/json")


def rules_path(cluster: str = "local") -> str:
    return f"/api/v1/clusters/{cluster}/alert-rules/"


@pytest.fixture
def hook(db: None) -> AlertChannel:
    return AlertChannel.objects.create(name="ops-hook", kind="webhook", url="https://hooks.example.com/T0/B1/key-in-path",
                                       secret="hmac-key-not-to-be-shown")


def a_rule(**fields: Any) -> dict[str, Any]:
    return {"name": "brokers gone", "condition": "broker_down", "target": "*", "for_seconds": 30, "severity": "critical",
            "channels": ["ops-hook"], **fields}


# Channels ------------------------------------------------------------------------------------------


def test_an_admin_creates_a_webhook_channel_and_its_secret_is_never_answered(client_as: Any) -> None:
    r = call(client_as("admin"), "POST", "/api/v1/alert-channels/",
             {"name": "pager", "kind": "webhook", "url": "https://pager.example.com/in", "secret": "s3cret", "max_attempts": 4})
    assert r.status_code == 201, r.content
    body = r.json()
    assert body["secret_set"] is True and "secret" not in body and b"s3cret" not in r.content
    assert body["max_attempts"] == 4 and body["url"] == "https://pager.example.com/in"
    listed = call(client_as("admin"), "GET", "/api/v1/alert-channels/")
    assert b"s3cret" not in listed.content
    entry = AuditEntry.objects.get(action="alert_channel_create")
    assert entry.username == "admin" and entry.target == "pager" and "s3cret" not in json.dumps(entry.details)


def test_a_viewer_sees_channels_with_only_the_host_of_their_url(client_as: Any, hook: AlertChannel) -> None:
    shown = call(client_as("viewer"), "GET", "/api/v1/alert-channels/").json()["channels"]
    assert shown[0]["name"] == "ops-hook" and shown[0]["url"] == "https://hooks.example.com/…"
    assert b"key-in-path" not in call(client_as("viewer"), "GET", "/api/v1/alert-channels/ops-hook/").content


def test_a_webhook_url_that_is_not_http_is_a_clear_400(client_as: Any) -> None:
    r = call(client_as("admin"), "POST", "/api/v1/alert-channels/", {"name": "ftp", "kind": "webhook", "url": "ftp://files.example.com/x"})
    assert r.status_code == 400
    assert r.json()["detail"] == "'url' must start with http:// or https://; its scheme is 'ftp:'."
    assert not AlertChannel.objects.exists()
    assert AuditEntry.objects.get(action="alert_channel_create").outcome == "refused"


def test_only_an_admin_manages_channels(client_as: Any, hook: AlertChannel) -> None:
    for role in ("viewer", "operator"):
        c = client_as(role)
        assert call(c, "POST", "/api/v1/alert-channels/", {"name": "x", "kind": "email", "to": ["a@example.com"]}).status_code == 403
        assert call(c, "PATCH", "/api/v1/alert-channels/ops-hook/", {"max_attempts": 2}).status_code == 403
        assert call(c, "DELETE", "/api/v1/alert-channels/ops-hook/").status_code == 403
        assert call(c, "POST", "/api/v1/alert-channels/ops-hook/test/").status_code == 403
    assert AlertChannel.objects.get().max_attempts == 5


def test_an_admin_changes_a_channel_keeping_its_secret_and_deletes_it(client_as: Any, hook: AlertChannel) -> None:
    admin = client_as("admin")
    r = call(admin, "PATCH", "/api/v1/alert-channels/ops-hook/", {"max_attempts": 2, "enabled": False})
    assert r.status_code == 200, r.content
    hook.refresh_from_db()
    assert (hook.max_attempts, hook.enabled, hook.secret) == (2, False, "hmac-key-not-to-be-shown")
    assert call(admin, "PATCH", "/api/v1/alert-channels/ops-hook/", {"colour": "red"}).json()["detail"].startswith(
        "Unknown channel field 'colour'")
    assert call(admin, "DELETE", "/api/v1/alert-channels/ops-hook/").status_code == 204
    assert not AlertChannel.objects.exists()
    assert call(admin, "GET", "/api/v1/alert-channels/ops-hook/").status_code == 404
    assert [e.action for e in AuditEntry.objects.exclude(action="login").order_by("id")] == ["alert_channel_update", "alert_channel_update",
                                                                    "alert_channel_delete"]


def test_a_channel_named_with_odd_characters_round_trips_through_its_url(client_as: Any) -> None:
    admin = client_as("admin")
    assert call(admin, "POST", "/api/v1/alert-channels/", {"name": ODD, "kind": "email", "to": ["oncall@example.com"]}).status_code == 201
    r = call(admin, "GET", "/api/v1/alert-channels/%3Cb%3E'%22~2F%25%C3%BC/")
    assert r.status_code == 200 and r.json()["name"] == ODD


def test_send_a_test_queues_one_delivery_and_is_audited(client_as: Any, hook: AlertChannel) -> None:
    r = call(client_as("admin"), "POST", "/api/v1/alert-channels/ops-hook/test/")
    assert r.status_code == 202, r.content
    assert hook.deliveries.count() == 1
    detail = call(client_as("viewer"), "GET", "/api/v1/alert-channels/ops-hook/").json()
    assert [d["kind"] for d in detail["deliveries"]] == ["test"] and detail["dead_letters"] == []
    assert AuditEntry.objects.get(action="alert_channel_test").details["notification"] == r.json()["notification"]


def test_an_admin_sends_a_dead_letter_again_but_never_a_sent_one(client_as: Any, hook: AlertChannel) -> None:
    from alerts_app.models import Delivery, Notification

    note = Notification.objects.create(cluster="local", kind="firing", severity="critical", title="Broker 3 left")
    dead = Delivery.objects.create(notification=note, channel=hook, state="dead", attempts=5, last_error="HTTP 500")
    sent = Delivery.objects.create(notification=note, channel=hook, state="sent", attempts=1)
    path = "/api/v1/alert-channels/ops-hook/deliveries/{}/retry/"
    assert call(client_as("operator"), "POST", path.format(dead.id)).status_code == 403
    r = call(client_as("admin"), "POST", path.format(dead.id))
    assert r.status_code == 202 and (r.json()["state"], r.json()["attempts"]) == ("pending", 0)
    again = call(client_as("admin"), "POST", path.format(sent.id))
    assert again.status_code == 409 and again.json()["detail"] == f"Delivery #{sent.id} was sent already; it is not sent again."
    assert call(client_as("admin"), "POST", path.format(999999)).status_code == 404
    assert AuditEntry.objects.filter(action="alert_delivery_retry", outcome="ok").count() == 1


# Rules ---------------------------------------------------------------------------------------------


def test_an_operator_creates_a_broker_down_rule_and_a_viewer_reads_it(client_as: Any, hook: AlertChannel, snapshot: Snapshot) -> None:
    r = call(client_as("operator"), "POST", rules_path(), a_rule())
    assert r.status_code == 201, r.content
    created = r.json()
    assert {k: created[k] for k in ("name", "condition", "target", "for_seconds", "severity", "channels", "enabled")} == {
        "name": "brokers gone", "condition": "broker_down", "target": "*", "for_seconds": 30, "severity": "critical",
        "channels": ["ops-hook"], "enabled": True}
    listed = call(client_as("viewer"), "GET", rules_path()).json()["rules"]
    assert [x["name"] for x in listed] == ["brokers gone"]
    entry = AuditEntry.objects.get(action="alert_rule_create")
    assert (entry.username, entry.cluster, entry.target, entry.outcome) == ("operator", "local", "brokers gone", "ok")


def test_a_viewer_cannot_create_change_or_delete_a_rule(client_as: Any, hook: AlertChannel, snapshot: Snapshot) -> None:
    rule = call(client_as("operator"), "POST", rules_path(), a_rule()).json()
    viewer = client_as("viewer")
    assert call(viewer, "POST", rules_path(), a_rule(name="mine")).status_code == 403
    assert call(viewer, "PATCH", f"{rules_path()}{rule['id']}/", {"severity": "info"}).status_code == 403
    r = call(viewer, "DELETE", f"{rules_path()}{rule['id']}/")
    assert r.status_code == 403 and "alerts.manage" in r.json()["detail"]
    assert AlertRule.objects.get().severity == "critical"


@pytest.mark.parametrize(("fields", "sentence"), [
    ({"condition": "lag_pct"}, "'lag_pct' is not a condition; conditions are group_status, group_lag, partition_lag, "
                               "time_lag, under_replicated, under_min_isr, offline, broker_down, no_controller, "
                               "controller_moved, quorum_lag, produce_rate_zero, job_failed, connect_task_failing, transaction_hanging."),
    ({"for_seconds": -5}, "for_seconds must be 0 or more seconds."),
    ({"for_seconds": "soon"}, "for_seconds must be a whole number of seconds."),
    ({"condition": "group_lag"}, "Condition group_lag needs a 'threshold' (records)."),
    ({"condition": "time_lag", "threshold": -1}, "'threshold' must be 0 or more seconds."),
    ({"condition": "group_status", "status": "SLOW"}, "Condition group_status needs a 'status': one of WARN, ERR, STOP, STALL."),
    ({"severity": "apocalyptic"}, "'apocalyptic' is not a severity; severities are info, warning, critical."),
    ({"channels": ["nowhere"]}, "'channels' names no channel 'nowhere'; the channels are ops-hook."),
    ({"target": "re:(unclosed"}, "'target' is not a valid regular expression: missing ), unterminated subpattern at position 0."),
    ({"target": "kafka-1"}, "Condition broker_down is about brokers: the target must be a broker id (such as 2), a glob, '*' "
                            "or 're:<regex>', not 'kafka-1'."),
    ({"condition": "no_controller", "target": "2"}, "Condition no_controller is about the whole cluster, so its target must be '*'."),
    ({"name": " "}, "'name' must not be empty."),
    ({"colour": "red"}, "'colour' is not a field of a rule; the fields are name, condition, target, threshold, status, "
                        "for_seconds, severity, channels, repeat_seconds, enabled."),
])
def test_a_bad_rule_is_refused_with_its_sentence(client_as: Any, hook: AlertChannel, snapshot: Snapshot, fields: dict[str, Any],
                                                 sentence: str) -> None:
    r = call(client_as("operator"), "POST", rules_path(), a_rule(**fields))
    assert r.status_code == 400, r.content
    assert r.json() == {"detail": sentence}
    assert not AlertRule.objects.exists()


def test_a_rule_on_an_unknown_cluster_is_a_404(client_as: Any, hook: AlertChannel, snapshot: Snapshot) -> None:
    assert call(client_as("operator"), "POST", rules_path("nowhere"), a_rule()).status_code == 404


def test_a_second_rule_of_the_same_name_is_a_conflict(client_as: Any, hook: AlertChannel, snapshot: Snapshot) -> None:
    op = client_as("operator")
    assert call(op, "POST", rules_path(), a_rule()).status_code == 201
    r = call(op, "POST", rules_path(), a_rule())
    assert r.status_code == 409 and r.json()["detail"] == "Cluster 'local' has an alert rule named 'brokers gone' already."


def test_patch_changes_only_the_fields_sent_and_checks_them_with_the_rest(client_as: Any, hook: AlertChannel,
                                                                          snapshot: Snapshot) -> None:
    op = client_as("operator")
    rule = call(op, "POST", rules_path(), a_rule(condition="group_lag", threshold=1000, target="orders-*")).json()
    path = f"{rules_path()}{rule['id']}/"
    r = call(op, "PATCH", path, {"threshold": 5000, "channels": []})
    assert r.status_code == 200, r.content
    assert (r.json()["threshold"], r.json()["target"], r.json()["channels"]) == (5000.0, "orders-*", [])
    assert call(op, "PATCH", path, {"threshold": None}).json()["detail"] == "Condition group_lag needs a 'threshold' (records)."
    assert AuditEntry.objects.get(action="alert_rule_update", outcome="ok").details["changed"]["threshold"] == [1000.0, 5000.0]
    assert call(op, "DELETE", path).status_code == 204
    assert call(op, "GET", path).status_code == 404
    assert AuditEntry.objects.get(action="alert_rule_delete").details["name"] == "brokers gone"


def test_the_preview_says_what_would_fire_now_without_saving(client_as: Any, snapshot: Snapshot) -> None:
    r = call(client_as("viewer"), "POST", rules_path() + "preview/", {"condition": "broker_down", "target": "*"})
    assert r.status_code == 200, r.content
    assert [m["key"] for m in r.json()["matches"]] == ["broker:3"]  # (the sample snapshot's broker 3 is down)
    assert not AlertRule.objects.exists()
    bad = call(client_as("viewer"), "POST", rules_path() + "preview/", {"condition": "lag_pct"})
    assert bad.status_code == 400 and bad.json()["detail"].startswith("'lag_pct' is not a condition;")


# Alerts --------------------------------------------------------------------------------------------


def make_alert(rule: AlertRule, key: str, state: str = "firing", severity: str = "critical", minutes_ago: int = 5) -> Alert:
    since = timezone.now() - timedelta(minutes=minutes_ago)
    return Alert.objects.create(rule=rule, cluster=rule.cluster, key=key, state=state, severity=severity,
                                message=f"{key} is {state}.", since=since, fired_at=since if state != "pending" else None,
                                resolved_at=timezone.now() if state == "resolved" else None)


@pytest.fixture
def fired(db: None) -> dict[str, Any]:
    down = AlertRule.objects.create(cluster="local", name="brokers gone", condition="broker_down", severity="critical")
    lag = AlertRule.objects.create(cluster="local", name="lagging", condition="group_lag", threshold=10, severity="warning")
    return {"down": down, "lag": lag, "alerts": [
        make_alert(down, "broker:3", minutes_ago=2), make_alert(down, "broker:2", "resolved", minutes_ago=60),
        make_alert(lag, "group:orders-app", "pending", "warning", minutes_ago=1),
        make_alert(lag, "group:billing", "resolved", "warning", minutes_ago=600)]}


def test_the_alert_list_has_active_and_past_alerts_with_their_state(client_as: Any, fired: dict[str, Any], snapshot: Snapshot) -> None:
    body = call(client_as("viewer"), "GET", "/api/v1/clusters/local/alerts/").json()
    assert body["total"] == 4
    assert [(a["key"], a["state"]) for a in body["alerts"]] == [
        ("group:orders-app", "pending"), ("broker:3", "firing"), ("broker:2", "resolved"), ("group:billing", "resolved")]
    first = body["alerts"][1]
    assert first["rule"]["name"] == "brokers gone" and first["fired_at"] and first["silenced"] is None and first["acknowledged"] is None


@pytest.mark.parametrize(("query", "keys"), [
    ("state=firing", ["broker:3"]), ("state=active", ["group:orders-app", "broker:3"]),
    ("state=resolved&rule=lagging", ["group:billing"]), ("severity=critical", ["broker:3", "broker:2"]),
    ("key=broker", ["broker:3", "broker:2"]), ("key=ORDERS", ["group:orders-app"]),
    ("limit=1&offset=1", ["broker:3"]),
])
def test_the_alert_list_filters(client_as: Any, fired: dict[str, Any], snapshot: Snapshot, query: str, keys: list[str]) -> None:
    body = call(client_as("viewer"), "GET", f"/api/v1/clusters/local/alerts/?{query}").json()
    assert [a["key"] for a in body["alerts"]] == keys


def test_the_alert_list_filters_by_time(client_as: Any, fired: dict[str, Any], snapshot: Snapshot) -> None:
    since = (timezone.now() - timedelta(minutes=90)).isoformat().replace("+00:00", "Z")
    until = (timezone.now() - timedelta(minutes=30)).isoformat()
    body = client_as("viewer").get("/api/v1/clusters/local/alerts/", {"since": since, "until": until}).json()
    assert [a["key"] for a in body["alerts"]] == ["broker:2"]


@pytest.mark.parametrize(("query", "sentence"), [
    ("state=burning", "'state' must be one of active, pending, firing, resolved, not 'burning'."),
    ("since=yesterday", "'since' must be an ISO date and time or milliseconds since 1970, not 'yesterday'."),
    ("limit=0", "'limit' must be at least 1, not 0."),
    ("severity=loud", "'severity' must be one of info, warning, critical, not 'loud'."),
])
def test_bad_alert_filters_are_a_clear_400(client_as: Any, snapshot: Snapshot, query: str, sentence: str) -> None:
    r = call(client_as("viewer"), "GET", f"/api/v1/clusters/local/alerts/?{query}")
    assert r.status_code == 400 and r.json()["detail"] == sentence


def test_an_operator_acknowledges_an_active_alert_once(client_as: Any, fired: dict[str, Any], snapshot: Snapshot) -> None:
    alert = fired["alerts"][0]
    path = f"/api/v1/clusters/local/alerts/{alert.id}/acknowledge/"
    assert call(client_as("viewer"), "POST", path).status_code == 403
    r = call(client_as("operator"), "POST", path)
    assert r.status_code == 200 and r.json()["acknowledged"]["by"] == "operator"
    again = call(client_as("admin"), "POST", path)
    assert again.status_code == 409 and again.json()["detail"] == f"Alert #{alert.id} was acknowledged by operator already."
    resolved = fired["alerts"][1]
    assert call(client_as("operator"), "POST", f"/api/v1/clusters/local/alerts/{resolved.id}/acknowledge/").status_code == 409
    assert [(e.username, e.outcome) for e in AuditEntry.objects.filter(action="alert_acknowledge").order_by("id")] == [
        ("operator", "ok"), ("admin", "refused"), ("operator", "refused")]


# Silences ------------------------------------------------------------------------------------------


def test_an_operator_silences_with_who_and_why_and_expires_it(client_as: Any, snapshot: Snapshot) -> None:
    op = client_as("operator")
    r = call(op, "POST", "/api/v1/silences/", {"cluster": "local", "matchers": [{"field": "key", "value": "broker:3"}],
                                              "duration_seconds": 3600, "comment": "Broker 3 is being replaced"})
    assert r.status_code == 201, r.content
    s = r.json()
    assert (s["created_by"], s["state"], s["comment"], s["matchers"]) == (
        "operator", "active", "Broker 3 is being replaced", [{"field": "key", "value": "broker:3", "regex": False}])
    assert [x["id"] for x in call(client_as("viewer"), "GET", "/api/v1/silences/").json()["silences"]] == [s["id"]]
    assert call(client_as("viewer"), "DELETE", f"/api/v1/silences/{s['id']}/").status_code == 403
    ended = call(op, "DELETE", f"/api/v1/silences/{s['id']}/")
    assert ended.status_code == 200 and ended.json()["state"] == "expired" and ended.json()["expired_early_by"] == "operator"
    assert call(client_as("viewer"), "GET", "/api/v1/silences/").json()["silences"] == []
    assert len(call(client_as("viewer"), "GET", "/api/v1/silences/?expired=true").json()["silences"]) == 1
    assert [e.action for e in AuditEntry.objects.exclude(action="login").order_by("id")] == ["silence_create", "silence_expire"]


@pytest.mark.parametrize(("fields", "sentence"), [
    ({"comment": ""}, "'comment' is needed: say why these alerts are silenced."),
    ({"matchers": []}, "'matchers' must be a list of at least one {\"field\", \"value\", \"regex\"?}: a silence that "
                       "matches everything would hide every alert."),
    ({"matchers": [{"field": "colour", "value": "red"}]}, "'matchers[0].field' must be one of rule, condition, key, severity, target."),
    ({"matchers": [{"field": "key", "value": "(", "regex": True}]},
     "'matchers[0].value' is not a valid regular expression: missing ), unterminated subpattern at position 0."),
    ({"duration_seconds": -60}, "duration_seconds must be 60 or more seconds."),
    ({"ends_at": "2020-01-01T00:00:00Z", "duration_seconds": None}, "'ends_at' must be in the future."),
    ({"ends_at": "2999-01-01T00:00:00Z"}, "Give either 'ends_at' (an ISO date and time) or 'duration_seconds', not both or neither."),
    ({"cluster": "nowhere"}, "'cluster' must be '*' (every cluster) or one of local."),
])
def test_a_bad_silence_is_refused_with_its_sentence(client_as: Any, snapshot: Snapshot, fields: dict[str, Any], sentence: str) -> None:
    body = {"cluster": "*", "matchers": [{"field": "rule", "value": "brokers gone"}], "duration_seconds": 3600, "comment": "why",
            **fields}
    r = call(client_as("admin"), "POST", "/api/v1/silences/", {k: v for k, v in body.items() if v is not None})
    assert r.status_code == 400, r.content
    assert r.json() == {"detail": sentence}
    assert not Silence.objects.exists()


def test_a_viewer_cannot_silence(client_as: Any, snapshot: Snapshot) -> None:
    r = call(client_as("viewer"), "POST", "/api/v1/silences/", {"matchers": [{"field": "key", "value": "x"}], "duration_seconds": 60,
                                                              "comment": "mine"})
    assert r.status_code == 403 and not Silence.objects.exists()


def test_the_schema_describes_the_alerting_endpoints(client_as: Any) -> None:
    paths = client_as("viewer").get("/api/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    for p in ("/api/v1/alert-channels/", "/api/v1/alert-channels/{channel}/test/", "/api/v1/clusters/{cluster}/alert-rules/",
              "/api/v1/clusters/{cluster}/alert-rules/preview/", "/api/v1/clusters/{cluster}/alerts/", "/api/v1/silences/{silence_id}/"):
        assert p in paths, p
    rule_body = paths["/api/v1/clusters/{cluster}/alert-rules/"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert rule_body["$ref"].endswith("/RuleBody")
