"""What a channel may be: the one check of a channel's fields, for the API, the pages and the
delivery alike. Pure: no database, no network."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from alerts_app.models import CHANNEL_KINDS
from console.errors import BadParameter

FIELDS = ("name", "kind", "url", "to", "secret", "max_attempts", "enabled")
URL_KINDS = ("webhook", "slack", "teams", "alertmanager")
MAX_NAME_LENGTH = 100
MAX_URL_LENGTH = 2000
MAX_SECRET_LENGTH = 200
MAX_RECIPIENTS = 50
MAX_ATTEMPTS = 20


def validate_channel(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The channel's fields, cleaned: name, kind, url, to, secret, max_attempts, enabled. Pass the
    whole channel (an edit merged into the stored fields), since what is required follows from the kind.
    Raises BadParameter with a sentence for the first field the console cannot use."""
    if not isinstance(fields, Mapping):
        raise BadParameter("A channel is a JSON object with 'name', 'kind' and 'url' (or 'to' for e-mail).")
    unknown = sorted(str(k) for k in fields if k not in FIELDS)
    if unknown:
        raise BadParameter(f"Unknown channel field '{unknown[0]}'; the fields are {', '.join(FIELDS)}.")
    kind = fields.get("kind")
    if kind not in CHANNEL_KINDS:
        shown = "nothing" if kind in (None, "") else f"'{str(kind)[:50]}'"
        raise BadParameter(f"'kind' must be one of {', '.join(CHANNEL_KINDS)}; {shown} is not.")
    cleaned: dict[str, Any] = {"name": _name(fields.get("name")), "kind": kind}
    if kind == "email":
        if fields.get("url"):
            raise BadParameter("An e-mail channel sends to addresses: give 'to', not 'url'.")
        if fields.get("secret"):
            raise BadParameter("A secret signs HTTP requests; an e-mail channel has none.")
        cleaned.update(url="", to=_recipients(fields.get("to")), secret="")
    else:
        if fields.get("to"):
            raise BadParameter(f"A {kind} channel posts to a URL: give 'url', not 'to'.")
        cleaned.update(url=validate_url(fields.get("url")), to=[], secret=_secret(fields.get("secret")))
    cleaned["max_attempts"] = _max_attempts(fields.get("max_attempts", 5))
    enabled = fields.get("enabled", True)
    if not isinstance(enabled, bool):
        raise BadParameter("'enabled' must be true or false.")
    cleaned["enabled"] = enabled
    return cleaned


def validate_url(value: Any) -> str:
    """An absolute http(s) URL with a host: anything else (ftp:, javascript:, file:, a bare path) is refused,
    since the worker would post the alert there."""
    if not isinstance(value, str) or not value.strip():
        raise BadParameter("'url' is required: the http:// or https:// address to post notifications to.")
    url = value.strip()
    if len(url) > MAX_URL_LENGTH:
        raise BadParameter(f"'url' must be at most {MAX_URL_LENGTH} characters long.")
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url):
        raise BadParameter("'url' must not contain spaces or control characters.")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise BadParameter(f"'url' is not a valid URL: '{url[:100]}'.") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        shown = f"'{scheme}:'" if scheme else "none"
        raise BadParameter(f"'url' must start with http:// or https://; its scheme is {shown}.")
    if not parts.hostname:
        raise BadParameter(f"'url' must name a host, as in https://hooks.example.com/alerts; '{url[:100]}' does not.")
    if port == 0:
        raise BadParameter("'url' names port 0, which nothing listens on.")
    if parts.username is not None or parts.password is not None:
        raise BadParameter("'url' must not carry a user name or password: the page would show it; use 'secret' to sign requests.")
    return url


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BadParameter("'name' is required: a short name for the channel, such as ops-webhook.")
    if value != value.strip():
        raise BadParameter("'name' must not start or end with a space.")
    if len(value) > MAX_NAME_LENGTH:
        raise BadParameter(f"'name' must be at most {MAX_NAME_LENGTH} characters long.")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise BadParameter("'name' must not contain control characters.")
    return value


def _recipients(value: Any) -> list[str]:
    if isinstance(value, str):
        value = [part for part in value.replace(";", ",").split(",") if part.strip()]
    if not isinstance(value, list) or not value:
        raise BadParameter("'to' is required for an e-mail channel: one or more addresses, such as [\"ops@example.com\"].")
    if len(value) > MAX_RECIPIENTS:
        raise BadParameter(f"'to' may hold at most {MAX_RECIPIENTS} addresses; it holds {len(value)}.")
    addresses: list[str] = []
    for item in value:
        if not isinstance(item, str):
            raise BadParameter("'to' must be a list of e-mail addresses (strings).")
        address = item.strip()
        try:
            validate_email(address)
        except ValidationError:
            raise BadParameter(f"'{address[:200]}' in 'to' is not an e-mail address.") from None
        if address not in addresses:
            addresses.append(address)
    return addresses


def _secret(value: Any) -> str:
    if value in (None, ""):
        return ""
    if not isinstance(value, str):
        raise BadParameter("'secret' must be a string: the key the receiver checks the signature with.")
    if len(value) > MAX_SECRET_LENGTH:
        raise BadParameter(f"'secret' must be at most {MAX_SECRET_LENGTH} characters long.")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise BadParameter("'secret' must not contain control characters.")
    return value


def _max_attempts(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        else:
            raise BadParameter(f"'max_attempts' must be a whole number from 1 to {MAX_ATTEMPTS}.")
    if not 1 <= value <= MAX_ATTEMPTS:
        raise BadParameter(f"'max_attempts' must be from 1 to {MAX_ATTEMPTS}, not {value}.")
    return int(value)
