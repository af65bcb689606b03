"""What each channel kind renders from a notification's payload, on its own (no receiver)."""

from __future__ import annotations

from typing import Any

from django.test import override_settings

from alerts_app.channels_alertmanager import ZERO_TIME, alertmanager_body
from alerts_app.channels_chat import slack_body, teams_body
from alerts_app.channels_mail import html_body, subject, text_body


def payload(states: list[str], kind: str = "firing", **extra: Any) -> dict[str, Any]:
    return {"id": "n-1", "cluster": "prod", "kind": kind, "severity": "warning", "title": "Group <!channel> lagging\nX-Evil: 1",
            "rule": {"name": "lag", "condition": "group_lag", "target": "g*", "threshold": 1000, "for_seconds": 120},
            "alerts": [{"key": f"group:g{i}", "state": s, "message": f"g{i} lag 5000", "value": 5000,
                        "since": "2026-12-02T10:00:00+00:00", "fired_at": "2026-12-02T10:02:00+00:00",
                        "resolved_at": "2026-12-02T10:09:00+00:00" if s == "resolved" else None} for i, s in enumerate(states)],
            "created_at": "2026-12-02T10:02:00+00:00", **extra}


def test_an_alertmanager_group_with_one_alert_still_firing_is_firing() -> None:
    body = alertmanager_body(payload(["firing", "resolved"]), receiver="am", external_url="")
    assert body["status"] == "firing" and [a["status"] for a in body["alerts"]] == ["firing", "resolved"]
    assert body["alerts"][0]["endsAt"] == ZERO_TIME and body["alerts"][1]["endsAt"] == "2026-12-02T10:09:00Z"
    assert body["alerts"][0]["startsAt"] == "2026-12-02T10:02:00Z"
    assert body["commonLabels"] == {"alertname": "lag", "cluster": "prod", "severity": "warning", "condition": "group_lag",
                                    "target": "g*", "source": "kafka-console"}
    assert body["alerts"][0]["generatorURL"] == ""


def test_an_alertmanager_fingerprint_is_stable_and_per_subject() -> None:
    one = alertmanager_body(payload(["firing", "firing"]), receiver="am", external_url="")
    two = alertmanager_body(payload(["firing", "firing"]), receiver="am", external_url="")
    assert [a["fingerprint"] for a in one["alerts"]] == [a["fingerprint"] for a in two["alerts"]]
    assert one["alerts"][0]["fingerprint"] != one["alerts"][1]["fingerprint"]


def test_a_test_notification_is_labelled_as_one() -> None:
    body = alertmanager_body(payload(["firing"], kind="test", rule={}), receiver="am", external_url="")
    assert body["alerts"][0]["labels"]["test"] == "true"


def test_a_slack_message_lists_twenty_alerts_and_counts_the_rest_escaping_mentions() -> None:
    body = slack_body(payload(["firing"] * 45))
    listed = body["blocks"][-1]["text"]["text"]
    assert listed.count("•") == 21 and listed.endswith("... and 25 more")
    # mrkdwn reads <!channel> as a mention: escaped there; a plain_text header shows it as typed.
    mrkdwn = [body["text"]] + [b["text"]["text"] for b in body["blocks"] if b["type"] == "section"]
    assert not [t for t in mrkdwn if "<!channel>" in t] and "&lt;!channel&gt;" in body["text"]
    assert body["blocks"][0]["text"]["type"] == "plain_text" and "<!channel>" in body["blocks"][0]["text"]["text"]
    assert len(body["blocks"][0]["text"]["text"]) <= 150


def test_links_to_the_console_appear_when_its_address_is_set() -> None:
    with override_settings(ALERTS_EXTERNAL_URL="https://kc.example.com"):
        slack, teams = slack_body(payload(["firing"])), teams_body(payload(["firing"]))
        text = text_body(payload(["firing"]), "https://kc.example.com")
    assert slack["blocks"][-1]["elements"][0]["url"] == "https://kc.example.com/clusters/prod/alerts/"
    assert teams["attachments"][0]["content"]["actions"][0]["url"] == "https://kc.example.com/clusters/prod/alerts/"
    assert "https://kc.example.com/clusters/prod/alerts/" in text


def test_an_email_subject_is_one_line_and_its_html_is_escaped() -> None:
    p = payload(["firing", "resolved"])
    assert subject(p) == "Group <!channel> lagging X-Evil: 1"
    text = text_body(p)
    assert "[FIRING] group:g0: g0 lag 5000 (value 5000), since 2026-12-02T10:02:00+00:00" in text
    assert "[RESOLVED] group:g1" in text and "resolved 2026-12-02T10:09:00+00:00" in text
    assert "Rule: lag (group_lag on g*, threshold 1000, for 120 s)" in text
    html = html_body(p)
    assert "&lt;!channel&gt;" in html and "<!channel>" not in html
