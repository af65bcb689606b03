"""Chat incoming webhooks: Slack's (text plus Block Kit blocks) and Microsoft Teams' (an Adaptive Card
in a message, what a Teams workflow's "post to a channel when a webhook request is received" takes)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings

from alerts_app.channels_mail import alert_line, rule_line, subject

MAX_CHAT_ALERTS = 20  # alerts listed in a chat message (Slack allows 50 blocks); the rest are counted
ICONS = {"critical": ":red_circle:", "warning": ":large_orange_circle:", "info": ":large_blue_circle:"}


def slack_escape(text: str) -> str:
    """Slack reads <...> as links and mentions (<!channel>): a name holding them must show as typed."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _link(payload: Mapping[str, Any]) -> str:
    base = settings.ALERTS_EXTERNAL_URL
    return f"{base}/clusters/{payload['cluster']}/alerts/" if base and payload.get("cluster") else ""


def _header(payload: Mapping[str, Any]) -> str:
    kind = str(payload.get("kind") or "").upper()
    return f"[{kind}] {subject(payload)}" if kind else subject(payload)


def slack_body(payload: Mapping[str, Any]) -> dict[str, Any]:
    alerts = list(payload.get("alerts") or [])
    icon = ICONS.get(str(payload.get("severity")), ":white_circle:")
    facts = f"*Cluster:* {payload.get('cluster', '')}   *Severity:* {payload.get('severity', '')}   *Alerts:* {len(alerts)}"
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": _header(payload)[:150], "emoji": True}},
        {"type": "section", "text": {"type": "mrkdwn", "text": slack_escape(facts)[:3000]}},
    ]
    if rule_line(payload):
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": slack_escape(rule_line(payload))[:3000]}]})
    listed = "\n".join(f"• {slack_escape(alert_line(a))}" for a in alerts[:MAX_CHAT_ALERTS])
    if len(alerts) > MAX_CHAT_ALERTS:
        listed += f"\n• ... and {len(alerts) - MAX_CHAT_ALERTS} more"
    if listed:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": listed[:3000]}})
    if _link(payload):
        blocks.append({"type": "actions", "elements": [
            {"type": "button", "text": {"type": "plain_text", "text": "Open the alerts page"}, "url": _link(payload)}]})
    return {"text": f"{icon} {slack_escape(_header(payload))}", "blocks": blocks}


def teams_body(payload: Mapping[str, Any]) -> dict[str, Any]:
    alerts = list(payload.get("alerts") or [])
    colour = {"critical": "Attention", "warning": "Warning"}.get(str(payload.get("severity")), "Accent")
    body: list[dict[str, Any]] = [
        {"type": "TextBlock", "text": _header(payload), "weight": "Bolder", "size": "Medium", "wrap": True, "color": colour},
        {"type": "FactSet", "facts": [
            {"title": "Cluster", "value": str(payload.get("cluster", ""))},
            {"title": "Severity", "value": str(payload.get("severity", ""))},
            {"title": "Alerts", "value": str(len(alerts))},
        ]},
    ]
    if rule_line(payload):
        body.append({"type": "TextBlock", "text": rule_line(payload), "wrap": True, "isSubtle": True})
    body += [{"type": "TextBlock", "text": alert_line(a), "wrap": True, "spacing": "Small"} for a in alerts[:MAX_CHAT_ALERTS]]
    if len(alerts) > MAX_CHAT_ALERTS:
        body.append({"type": "TextBlock", "text": f"... and {len(alerts) - MAX_CHAT_ALERTS} more", "wrap": True})
    card: dict[str, Any] = {"$schema": "http://adaptivecards.io/schemas/adaptive-card.json", "type": "AdaptiveCard",
                            "version": "1.4", "body": body}
    if _link(payload):
        card["actions"] = [{"type": "Action.OpenUrl", "title": "Open the alerts page", "url": _link(payload)}]
    return {"type": "message", "summary": _header(payload)[:250],
            "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": None, "content": card}]}
