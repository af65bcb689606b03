"""Alert delivery to real receivers started here (an HTTP server, an SMTP server): each attempt is
driven by calling the task's body, as a worker would, with the backoff shrunk by settings."""

from __future__ import annotations

import hashlib
import hmac
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone

from alerts_app import delivery
from alerts_app.models import AlertChannel, AlertRule, Delivery, Notification
from brokers_app.models import Event
from tests.alert_receivers import HttpReceiver, MailReceiver, http_receiver, mail_receiver
from tests.support import free_port

SMTP = "django.core.mail.backends.smtp.EmailBackend"  # the test runner's default keeps mail in memory
FAST = {"ALERTS_DELIVERY_BACKOFF": 0.01, "ALERTS_DELIVERY_BACKOFF_MAX": 0.05, "ALERTS_DELIVERY_TIMEOUT": 2.0,
        "ALERTS_CHANNEL_FAILURE_EVENT_AFTER": 3}
ODD = "orders/% <b>'x'\" ü"


@pytest.fixture(autouse=True)
def fast_backoff() -> Iterator[None]:
    with override_settings(**FAST):
        yield


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, datetime | None]]:
    """What would go to Celery: (delivery id, eta)."""
    sent: list[tuple[int, datetime | None]] = []
    monkeypatch.setattr(delivery, "dispatch", lambda delivery_id, eta=None: sent.append((delivery_id, eta)))
    return sent


@pytest.fixture
def receiver() -> Iterator[HttpReceiver]:
    with http_receiver() as r:
        yield r


@pytest.fixture
def mail() -> Iterator[MailReceiver]:
    port = free_port()
    with mail_receiver(port) as m, override_settings(EMAIL_BACKEND=SMTP, EMAIL_HOST="127.0.0.1", EMAIL_PORT=port):
        yield m


def payload(nid: uuid.UUID, kind: str = "firing", alerts: int = 2, cluster: str = "local") -> dict[str, Any]:
    now = timezone.now().isoformat()
    return {
        "id": str(nid), "cluster": cluster, "kind": kind, "severity": "critical", "title": f"Offline partitions on {cluster}",
        "rule": {"id": 1, "name": "offline <now>", "condition": "offline", "target": "*", "threshold": None, "for_seconds": 0,
                 "severity": "critical"},
        "alerts": [{"id": i, "key": f"partition:{ODD}:{i}", "state": "resolved" if kind == "resolved" else "firing",
                    "message": f"Partition {ODD}-{i} has no leader", "value": 1.0, "since": now, "fired_at": now,
                    "resolved_at": now if kind == "resolved" else None, "details": {}} for i in range(alerts)],
        "created_at": now,
    }


def notify(channel: AlertChannel, kind: str = "firing", alerts: int = 2) -> Delivery:
    rule, _ = AlertRule.objects.get_or_create(cluster="local", name="offline <now>", defaults={"condition": "offline"})
    nid = uuid.uuid4()
    n = Notification.objects.create(id=nid, rule=rule, cluster="local", kind=kind, severity="critical",
                                    title="Offline partitions on local", payload=payload(nid, kind, alerts))
    return Delivery.objects.create(notification=n, channel=channel)


def channel(kind: str, url: str = "", **fields: Any) -> AlertChannel:
    return AlertChannel.objects.create(name=f"{kind}-{uuid.uuid4().hex[:6]}", kind=kind, url=url, **fields)


def run_until_done(d: Delivery, limit: int = 20) -> Delivery:
    """Attempt, wait out the backoff, attempt again... as the worker's retries would."""
    for _ in range(limit):
        outcome = delivery.attempt(d.id)
        d.refresh_from_db()
        if outcome in ("sent", "dead"):
            return d
        assert outcome == "retry" and d.next_attempt_at is not None
        time.sleep(max(0.0, (d.next_attempt_at - timezone.now()).total_seconds()))
    raise AssertionError(f"delivery still {d.state} after {limit} attempts")


def test_a_webhook_answering_500_three_times_gets_the_message_on_the_fourth_try_with_the_same_id(
        db: None, receiver: HttpReceiver, queued: list) -> None:
    receiver.statuses = [500, 500, 500]
    ch = channel("webhook", receiver.url + "/hook", secret="s3cret ü")
    d = notify(ch)
    d = run_until_done(d)
    assert d.state == "sent" and d.attempts == 4 and d.sent_at is not None and d.last_error == ""
    got = receiver.wait(4)
    assert len(got) == 4 and {r.headers["x-console-delivery"] for r in got} == {str(d.notification_id)}
    assert [r.path for r in got] == ["/hook"] * 4
    # Each retry was queued with its backoff: three, each one later than the one before it.
    assert [i for i, _ in queued] == [d.id] * 3 and all(eta is not None for _, eta in queued)
    ch.refresh_from_db()
    assert ch.consecutive_failures == 0 and ch.last_sent_at is not None and ch.last_error == ""
    # Once sent, nothing sends it again.
    assert delivery.attempt(d.id) == "skipped" and len(receiver.requests) == 4


def test_the_webhook_body_is_the_payload_and_its_hmac_verifies(db: None, receiver: HttpReceiver, queued: list) -> None:
    ch = channel("webhook", receiver.url, secret="k-ü-1")
    d = run_until_done(notify(ch))
    assert d.state == "sent"
    [got] = receiver.wait(1)
    expected = "sha256=" + hmac.new("k-ü-1".encode(), got.body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(got.headers["x-console-signature"], expected)
    assert got.headers["content-type"] == "application/json"
    assert abs(int(got.headers["x-console-timestamp"]) - time.time()) < 60
    body = got.json()
    assert body["id"] == str(d.notification_id) and body["kind"] == "firing" and body["cluster"] == "local"
    assert body["alerts"][0]["key"] == f"partition:{ODD}:0" and body["rule"]["condition"] == "offline"
    # A wrong key does not verify: the check above can fail.
    assert got.headers["x-console-signature"] != "sha256=" + hmac.new(b"other", got.body, hashlib.sha256).hexdigest()


def test_a_webhook_without_a_secret_sends_no_signature(db: None, receiver: HttpReceiver, queued: list) -> None:
    run_until_done(notify(channel("webhook", receiver.url)))
    [got] = receiver.wait(1)
    assert "x-console-signature" not in got.headers and got.headers["x-console-delivery"]


def test_a_slack_channel_gets_text_and_blocks_with_names_escaped(db: None, receiver: HttpReceiver, queued: list) -> None:
    run_until_done(notify(channel("slack", receiver.url)))
    body = receiver.wait(1)[0].json()
    assert set(body) == {"text", "blocks"} and "Offline partitions" in body["text"]
    assert body["blocks"][0]["type"] == "header" and body["blocks"][0]["text"]["type"] == "plain_text"
    for block in body["blocks"]:
        assert block["type"] in {"header", "section", "context", "actions"}
    listed = [b for b in body["blocks"] if b["type"] == "section"][-1]["text"]
    assert listed["type"] == "mrkdwn" and "&lt;b&gt;" in listed["text"] and "<b>" not in listed["text"]


def test_a_teams_channel_gets_an_adaptive_card(db: None, receiver: HttpReceiver, queued: list) -> None:
    run_until_done(notify(channel("teams", receiver.url), alerts=25))
    body = receiver.wait(1)[0].json()
    assert body["type"] == "message"
    [attachment] = body["attachments"]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    card = attachment["content"]
    assert card["type"] == "AdaptiveCard" and card["version"] and card["body"][0]["type"] == "TextBlock"
    facts = {f["title"]: f["value"] for f in card["body"][1]["facts"]}
    assert facts == {"Cluster": "local", "Severity": "critical", "Alerts": "25"}
    assert card["body"][-1]["text"] == "... and 5 more"


def test_an_alertmanager_channel_gets_the_version_4_webhook_payload(db: None, receiver: HttpReceiver, queued: list) -> None:
    ch = channel("alertmanager", receiver.url)
    with override_settings(ALERTS_EXTERNAL_URL="https://console.example.com"):
        run_until_done(notify(ch, kind="resolved", alerts=2))
    body = receiver.wait(1)[0].json()
    assert body["version"] == "4" and body["status"] == "resolved" and body["receiver"] == ch.name
    assert body["groupLabels"] == {"alertname": "offline <now>", "cluster": "local"}
    assert body["groupKey"] == '{}:{alertname="offline <now>", cluster="local"}'
    assert body["externalURL"] == "https://console.example.com"
    assert body["commonLabels"]["alertname"] == "offline <now>" and "key" not in body["commonLabels"]
    first = body["alerts"][0]
    assert set(first) >= {"status", "labels", "annotations", "startsAt", "endsAt", "generatorURL", "fingerprint"}
    assert first["status"] == "resolved" and first["labels"]["severity"] == "critical"
    assert first["labels"]["key"] == f"partition:{ODD}:0" and first["annotations"]["summary"].startswith("Partition")
    assert first["endsAt"].endswith("Z") and first["startsAt"].endswith("Z") and first["endsAt"] != "0001-01-01T00:00:00Z"
    assert first["generatorURL"] == "https://console.example.com/clusters/local/alerts/"
    assert len({a["fingerprint"] for a in body["alerts"]}) == 2


def test_an_email_arrives_at_the_mail_server_with_subject_and_body(db: None, mail: MailReceiver, queued: list) -> None:
    ch = AlertChannel.objects.create(name="mail", kind="email", to=["ops@example.com", "oncall@example.com"])
    d = run_until_done(notify(ch))
    assert d.state == "sent"
    [message] = mail.wait(1)
    assert message["Subject"] == "Offline partitions on local"
    assert message["X-Console-Delivery"] == str(d.notification_id)
    assert sorted(mail.envelopes[0][1]) == ["oncall@example.com", "ops@example.com"]
    text = message.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    html = message.get_body(("html",)).get_content()  # type: ignore[union-attr]
    assert f"partition:{ODD}:0: Partition {ODD}-0 has no leader" in text and "Alerts (2):" in text
    assert "&lt;b&gt;" in html and "<b>" not in html and "&#x27;x&#x27;" in html


def test_mail_to_a_server_that_is_down_is_a_sentence_and_retried(db: None, queued: list) -> None:
    ch = AlertChannel.objects.create(name="mail-down", kind="email", to=["ops@example.com"], max_attempts=2)
    with override_settings(EMAIL_BACKEND=SMTP, EMAIL_HOST="127.0.0.1", EMAIL_PORT=free_port()):
        d = run_until_done(notify(ch))
    assert d.state == "dead" and d.attempts == 2
    assert "Could not send mail through 127.0.0.1:" in d.last_error and "connection refused" in d.last_error


def test_a_dead_letter_after_max_attempts(db: None, receiver: HttpReceiver, queued: list) -> None:
    receiver.statuses = [503] * 10
    ch = channel("webhook", receiver.url, max_attempts=3)
    d = run_until_done(notify(ch))
    assert d.state == "dead" and d.attempts == 3 and d.next_attempt_at is None
    assert d.last_error.startswith("127.0.0.1:") and "answered HTTP 503: receiver says no" in d.last_error
    assert d.last_error.endswith("Gave up after 3 attempts.")
    assert len(receiver.wait(3)) == 3 and len(queued) == 2
    assert delivery.attempt(d.id) == "skipped" and len(receiver.requests) == 3


def test_a_refused_connection_is_a_sentence(db: None, queued: list) -> None:
    d = run_until_done(notify(channel("webhook", f"http://127.0.0.1:{free_port()}/x", max_attempts=1)))
    assert d.state == "dead" and "Could not connect to 127.0.0.1:" in d.last_error and "connection refused" in d.last_error


def test_a_redirect_is_not_followed(db: None, receiver: HttpReceiver, queued: list) -> None:
    receiver.statuses = [302]
    d = run_until_done(notify(channel("webhook", receiver.url, max_attempts=1)))
    assert d.state == "dead" and "answered HTTP 302, a redirect to '/moved'" in d.last_error
    assert [r.path for r in receiver.wait(1)] == ["/"]


def test_a_failing_channel_raises_one_event_per_streak(db: None, receiver: HttpReceiver, queued: list) -> None:
    receiver.statuses = [500] * 5
    ch = channel("webhook", receiver.url, max_attempts=5)
    run_until_done(notify(ch))  # five failures in a row: one event, at the third
    events = list(Event.objects.filter(kind="alerts"))
    assert len(events) == 1
    [event] = events
    assert event.severity == "error" and event.cluster == "local"
    assert event.message.startswith(f"Alert channel '{ch.name}' (webhook) failed 3 times in a row; the last error: 127.0.0.1:")
    assert "HTTP 500" in event.message and event.details["channel"] == ch.name
    ch.refresh_from_db()
    assert ch.consecutive_failures == 5 and "HTTP 500" in ch.last_error
    # A success ends the streak (and says so); the next streak raises its own event.
    run_until_done(notify(ch))
    ch.refresh_from_db()
    assert ch.consecutive_failures == 0 and ch.last_sent_at is not None
    receiver.statuses = [500] * 5
    run_until_done(notify(ch))
    assert [(e.severity, e.message.split(";")[0]) for e in Event.objects.filter(kind="alerts").order_by("id")] == [
        ("error", f"Alert channel '{ch.name}' (webhook) failed 3 times in a row"),
        ("info", f"Alert channel '{ch.name}' (webhook) delivers again."),
        ("error", f"Alert channel '{ch.name}' (webhook) failed 3 times in a row"),
    ]


def test_the_channel_event_is_on_the_events_timeline(db: None, receiver: HttpReceiver, queued: list, client_as: Any) -> None:
    receiver.statuses = [500] * 3
    ch = channel("webhook", receiver.url, max_attempts=3)
    ch.name = ODD
    ch.save()
    run_until_done(notify(ch))
    answer = client_as("viewer").get("/api/v1/clusters/local/events/", {"kind": "alerts"})
    assert answer.status_code == 200, answer.content
    [event] = [e for e in answer.json()["events"] if e["kind"] == "alerts"]
    assert event["severity"] == "error" and event["message"].startswith(f"Alert channel '{ODD}' (webhook) failed 3 times")
    page = client_as("viewer").get("/clusters/local/events/", {"kind": "alerts"})
    assert page.status_code == 200 and "Alert channel &#x27;orders/% &lt;b&gt;" in page.content.decode()


def test_a_delivery_held_by_another_worker_or_not_due_is_skipped(db: None, receiver: HttpReceiver, queued: list) -> None:
    d = notify(channel("webhook", receiver.url))
    Delivery.objects.filter(id=d.id).update(next_attempt_at=timezone.now() + timedelta(seconds=30))
    assert delivery.attempt(d.id) == "skipped" and receiver.requests == []
    assert delivery.attempt(987654) == "skipped"


def test_a_disabled_channel_sends_nothing(db: None, receiver: HttpReceiver, queued: list) -> None:
    d = notify(channel("webhook", receiver.url, enabled=False))
    assert delivery.attempt(d.id) == "dead"
    d.refresh_from_db()
    assert d.last_error == "Not sent: the channel is disabled." and receiver.requests == []


def test_a_row_with_a_url_that_is_not_http_is_never_posted(db: None, queued: list) -> None:
    d = run_until_done(notify(channel("webhook", "file:///etc/passwd", max_attempts=1)))
    assert d.state == "dead" and "must start with http:// or https://" in d.last_error


def test_the_sweep_queues_due_and_forgotten_deliveries_only(db: None, queued: list) -> None:
    ch = channel("webhook", "http://127.0.0.1:1/")
    past = timezone.now() - timedelta(seconds=10)
    due, forgotten, fresh, later, sent = (notify(ch) for _ in range(5))
    Delivery.objects.filter(id=due.id).update(next_attempt_at=past)  # a retry whose message was lost, or a dead worker's lease
    Delivery.objects.filter(id=forgotten.id).update(created_at=past)  # never queued (the broker was down)
    Delivery.objects.filter(id=later.id).update(next_attempt_at=timezone.now() + timedelta(seconds=60))
    Delivery.objects.filter(id=sent.id).update(state="sent", created_at=past)
    assert delivery.sweep() == 2
    assert sorted(i for i, _ in queued) == sorted([due.id, forgotten.id])
    assert fresh.id not in {i for i, _ in queued}


def test_enqueue_queues_each_pending_delivery_after_the_commit(db: None, queued: list, django_capture_on_commit_callbacks: Any) -> None:
    a, b = channel("webhook", "http://127.0.0.1:1/"), channel("slack", "http://127.0.0.1:1/")
    d1 = notify(a)
    Delivery.objects.create(notification=d1.notification, channel=b)
    Delivery.objects.create(notification=d1.notification, channel=channel("teams", "http://127.0.0.1:1/"), state="sent")
    with django_capture_on_commit_callbacks(execute=True):
        delivery.enqueue(str(d1.notification_id))
        assert queued == []  # not before the commit
    assert len(queued) == 2


def test_send_test_queues_one_delivery_tried_once(db: None, receiver: HttpReceiver, queued: list,
                                                  django_capture_on_commit_callbacks: Any) -> None:
    receiver.statuses = [500]
    ch = channel("webhook", receiver.url, max_attempts=5)
    with django_capture_on_commit_callbacks(execute=True):
        n = delivery.send_test(ch.id)
    assert n.kind == "test" and n.payload["id"] == str(n.id)
    [d] = Delivery.objects.filter(notification=n)
    assert queued == [(d.id, None)]
    assert delivery.attempt(d.id) == "dead"
    d.refresh_from_db()
    assert d.attempts == 1 and "HTTP 500" in d.last_error
    assert receiver.wait(1)[0].json()["kind"] == "test"


def test_send_test_to_an_unknown_channel_is_a_404_sentence(db: None) -> None:
    from console.gateway.errors import NotFound

    with pytest.raises(NotFound, match="There is no alert channel #424242."):
        delivery.send_test(424242)


def test_the_backoff_doubles_up_to_its_cap() -> None:
    with override_settings(ALERTS_DELIVERY_BACKOFF=1.0, ALERTS_DELIVERY_BACKOFF_MAX=5.0):
        waits = [delivery.backoff(n) for n in range(1, 7)]
    assert 1.0 <= waits[0] <= 1.1 and 2.0 <= waits[1] <= 2.2 and 4.0 <= waits[2] <= 4.4
    assert waits[3:] == [5.0, 5.0, 5.0]


def test_a_dead_letter_can_be_requeued_but_a_sent_delivery_cannot(db: None, receiver: HttpReceiver, queued: list,
                                                                  django_capture_on_commit_callbacks: Any) -> None:
    from console.errors import Conflict

    receiver.statuses = [500]
    d = run_until_done(notify(channel("webhook", receiver.url, max_attempts=1)))
    assert d.state == "dead"
    queued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        again = delivery.requeue(d.id)
    assert again.state == "pending" and again.attempts == 0 and queued == [(d.id, None)]
    d = run_until_done(d)
    assert d.state == "sent" and len(receiver.requests) == 2
    with pytest.raises(Conflict, match="was sent already"):
        delivery.requeue(d.id)
