"""The channels: one renderer and one sender per kind, behind one call, `send`. Every failure is a
DeliveryFailed with a sentence for the page (the delivery decides whether to try again).
The check of a channel's fields is channel_fields.validate_channel, named here too."""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import orjson
import requests
from django.conf import settings

from alerts_app import channels_chat, channels_mail
from alerts_app.channel_fields import validate_channel, validate_url
from alerts_app.channels_alertmanager import alertmanager_body
from alerts_app.models import AlertChannel

__all__ = ["DeliveryFailed", "body_for", "send", "signature", "validate_channel", "validate_url"]

USER_AGENT = "kafka-console-alerts/1"


class DeliveryFailed(Exception):
    """One attempt failed; `message` says why in a sentence."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def send(channel: AlertChannel, payload: Mapping[str, Any]) -> None:
    """Carry the notification's payload to the channel once; raise DeliveryFailed on any failure.
    Every attempt of one notification carries its id (X-Console-Delivery), so a receiver drops repeats."""
    if channel.kind == "email":
        channels_mail.send_email(channel, payload, timeout=settings.ALERTS_DELIVERY_TIMEOUT, fail=DeliveryFailed)
        return
    post(channel, body_for(channel, payload), delivery_id=str(payload.get("id", "")))


def body_for(channel: AlertChannel, payload: Mapping[str, Any]) -> bytes:
    """The bytes one HTTP channel posts: the payload itself to a webhook, or the receiver's own shape."""
    if channel.kind == "webhook":
        return orjson.dumps(dict(payload))
    if channel.kind == "slack":
        return orjson.dumps(channels_chat.slack_body(payload))
    if channel.kind == "teams":
        return orjson.dumps(channels_chat.teams_body(payload))
    if channel.kind == "alertmanager":
        return orjson.dumps(alertmanager_body(payload, receiver=channel.name, external_url=settings.ALERTS_EXTERNAL_URL))
    raise DeliveryFailed(f"The console cannot send to a channel of kind '{channel.kind}'.")


def signature(secret: str, body: bytes) -> str:
    """The X-Console-Signature header's value: the body's HMAC-SHA256 under the channel's secret."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def post(channel: AlertChannel, body: bytes, delivery_id: str) -> None:
    headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT, "X-Console-Delivery": delivery_id,
               "X-Console-Timestamp": str(int(time.time()))}
    if channel.secret:
        headers["X-Console-Signature"] = signature(channel.secret, body)
    url = channel.url
    host = urlsplit(url).netloc
    timeout = settings.ALERTS_DELIVERY_TIMEOUT
    try:
        # The URL is checked again here: a row saved by other means must not send alerts to a file: or ftp: address.
        validate_url(url)
        # Redirects are not followed: requests would turn the POST into a GET, and the target could be any address.
        answer = requests.post(url, data=body, headers=headers, timeout=timeout, allow_redirects=False)
    except requests.Timeout:
        raise DeliveryFailed(f"{host} did not answer within {timeout:g} s.") from None
    except requests.ConnectionError as exc:
        raise DeliveryFailed(f"Could not connect to {host}: {_reason(exc)}.") from None
    except requests.RequestException as exc:
        raise DeliveryFailed(f"The request to {host} failed: {_reason(exc)}.") from None
    except Exception as exc:  # noqa: BLE001 - validate_url's BadParameter, with its own sentence
        raise DeliveryFailed(getattr(exc, "message", str(exc))) from None
    if 200 <= answer.status_code < 300:
        return
    if 300 <= answer.status_code < 400:
        where = answer.headers.get("Location", "")[:200]
        raise DeliveryFailed(f"{host} answered HTTP {answer.status_code}, a redirect to '{where}': set the channel's URL "
                             "to the address it points to (redirects are not followed).")
    text = " ".join(answer.text[:300].split())
    raise DeliveryFailed(f"{host} answered HTTP {answer.status_code}" + (f": {text}" if text else "."))


def _reason(exc: Exception) -> str:
    """The innermost cause's words (connection refused, name not known), not urllib3's whole chain."""
    inner: BaseException = exc
    while inner.__cause__ is not None or (inner.args and isinstance(inner.args[0], BaseException)):
        inner = inner.__cause__ if inner.__cause__ is not None else inner.args[0]
    words = str(getattr(inner, "reason", None) or inner)
    if "Connection refused" in words:
        return "connection refused"
    if "Name or service not known" in words or "nodename nor servname" in words or "NameResolutionError" in words:
        return "the host name is not known"
    return words[:200].rstrip(".")
