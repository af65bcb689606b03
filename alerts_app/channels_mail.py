"""E-mail: the notification as plain text (and the same as escaped HTML), sent with Django's mail settings."""

from __future__ import annotations

import smtplib
from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection
from django.utils.html import escape

from alerts_app.models import AlertChannel

MAX_LISTED = 200  # alerts listed one by one in a message; the rest are counted


def subject(payload: Mapping[str, Any]) -> str:
    # A header must be one line: a title with a line break would otherwise be refused (or inject headers).
    title = " ".join(str(payload.get("title") or "Alert").split())
    return title[:250]


def alert_line(alert: Mapping[str, Any]) -> str:
    state = str(alert.get("state") or "").upper()
    line = f"[{state}] {alert.get('key', '')}: {alert.get('message', '')}" if state else f"{alert.get('key', '')}: {alert.get('message', '')}"
    if alert.get("value") is not None:
        line += f" (value {alert['value']:g})" if isinstance(alert["value"], int | float) else f" (value {alert['value']})"
    since = alert.get("fired_at") or alert.get("since")
    if since:
        line += f", since {since}"
    if alert.get("resolved_at"):
        line += f", resolved {alert['resolved_at']}"
    return line


def rule_line(payload: Mapping[str, Any]) -> str:
    rule = payload.get("rule") or {}
    if not rule:
        return ""
    parts = [f"Rule: {rule.get('name', '')} ({rule.get('condition', '')} on {rule.get('target', '*')}"]
    if rule.get("threshold") is not None:
        parts.append(f", threshold {rule['threshold']}")
    if rule.get("for_seconds"):
        parts.append(f", for {rule['for_seconds']} s")
    return "".join(parts) + ")"


def lines(payload: Mapping[str, Any], external_url: str = "") -> list[str]:
    """The message as lines of text: what happened, where, and every alert (up to MAX_LISTED)."""
    alerts = list(payload.get("alerts") or [])
    out = [subject(payload), "",
           f"Kind: {payload.get('kind', '')}   Cluster: {payload.get('cluster', '')}   Severity: {payload.get('severity', '')}"]
    if rule_line(payload):
        out.append(rule_line(payload))
    out += ["", f"Alerts ({len(alerts)}):"]
    out += [f"- {alert_line(a)}" for a in alerts[:MAX_LISTED]]
    if len(alerts) > MAX_LISTED:
        out.append(f"- ... and {len(alerts) - MAX_LISTED} more")
    if external_url and payload.get("cluster"):
        out += ["", f"{external_url}/clusters/{payload['cluster']}/alerts/"]
    out += ["", f"Notification {payload.get('id', '')}, created {payload.get('created_at', '')}."]
    return out


def text_body(payload: Mapping[str, Any], external_url: str = "") -> str:
    return "\n".join(lines(payload, external_url)) + "\n"


def html_body(payload: Mapping[str, Any], external_url: str = "") -> str:
    """The text's lines as HTML, every value escaped (names of topics and groups may hold < & ")."""
    alerts = list(payload.get("alerts") or [])
    items = "".join(f"<li>{escape(alert_line(a))}</li>" for a in alerts[:MAX_LISTED])
    if len(alerts) > MAX_LISTED:
        items += f"<li>... and {len(alerts) - MAX_LISTED} more</li>"
    head = escape(f"Kind: {payload.get('kind', '')} · Cluster: {payload.get('cluster', '')} · Severity: {payload.get('severity', '')}")
    link = ""
    if external_url and payload.get("cluster"):
        href = escape(f"{external_url}/clusters/{payload['cluster']}/alerts/")
        link = f'<p><a href="{href}">{href}</a></p>'
    return (f"<html><body><h2>{escape(subject(payload))}</h2><p>{head}</p>"
            + (f"<p>{escape(rule_line(payload))}</p>" if rule_line(payload) else "")
            + f"<p>Alerts ({len(alerts)}):</p><ul>{items}</ul>{link}"
            + f"<p><small>Notification {escape(str(payload.get('id', '')))}</small></p></body></html>")


def send_email(channel: AlertChannel, payload: Mapping[str, Any], timeout: float, fail: Callable[[str], Exception]) -> None:
    to = [str(a) for a in channel.to or []]
    if not to:
        raise fail("The e-mail channel has no addresses to send to.")
    external = settings.ALERTS_EXTERNAL_URL
    message = EmailMultiAlternatives(
        subject=subject(payload), body=text_body(payload, external), from_email=settings.DEFAULT_FROM_EMAIL, to=to,
        headers={"X-Console-Delivery": str(payload.get("id", ""))},
        connection=get_connection(fail_silently=False, timeout=timeout))
    message.attach_alternative(html_body(payload, external), "text/html")
    server = f"{settings.EMAIL_HOST}:{settings.EMAIL_PORT}"
    try:
        message.send(fail_silently=False)
    except smtplib.SMTPRecipientsRefused as exc:
        raise fail(f"The mail server {server} refused the recipients {', '.join(sorted(exc.recipients))}.") from None
    except smtplib.SMTPAuthenticationError:
        raise fail(f"The mail server {server} refused the console's login (EMAIL_HOST_USER, EMAIL_HOST_PASSWORD).") from None
    except smtplib.SMTPResponseException as exc:
        words = exc.smtp_error.decode(errors="replace") if isinstance(exc.smtp_error, bytes) else str(exc.smtp_error)
        raise fail(f"The mail server {server} answered {exc.smtp_code}: {words[:200]}.") from None
    except (smtplib.SMTPException, OSError) as exc:
        words = "connection refused" if isinstance(exc, ConnectionRefusedError) else (str(exc) or type(exc).__name__)
        raise fail(f"Could not send mail through {server}: {words[:200]}.") from None
