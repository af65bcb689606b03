"""Parsing of query parameters into typed values, with a clear message when they are wrong."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime

from console.errors import BadParameter

_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


def int_param(params: Mapping[str, str], name: str, default: int | None = None, *, minimum: int | None = None,
              maximum: int | None = None) -> int | None:
    raw = params.get(name, "")
    if raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadParameter(f"'{name}' must be a whole number, not '{raw[:50]}'.") from None
    if minimum is not None and value < minimum:
        raise BadParameter(f"'{name}' must be at least {minimum}, not {value}.")
    if maximum is not None and value > maximum:
        raise BadParameter(f"'{name}' must be at most {maximum}, not {value}.")
    return value


def bool_param(params: Mapping[str, str], name: str, default: bool = False) -> bool:
    raw = params.get(name, "").strip().lower()
    if raw == "":
        return default
    if raw in {"1", "true", "yes", "on"}:
        return True
    if raw in {"0", "false", "no", "off"}:
        return False
    raise BadParameter(f"'{name}' must be true or false, not '{raw[:50]}'.")


def choice_param(params: Mapping[str, str], name: str, choices: Mapping[str, str] | set[str]) -> str | None:
    raw = params.get(name, "")
    if raw == "":
        return None
    if raw not in choices:
        raise BadParameter(f"'{name}' must be one of {', '.join(sorted(choices))}, not '{raw[:50]}'.")
    return raw


def topic_param(params: Mapping[str, str], name: str) -> str | None:
    raw = params.get(name, "")
    if raw == "":
        return None
    if not _TOPIC.fullmatch(raw):
        raise BadParameter(f"'{name}' is not a valid topic name: use 1-249 letters, digits, '.', '_' or '-'.")
    return raw


def timestamp_ms(raw: str) -> int:
    """A 'timestamp' given as milliseconds since 1970 or as an ISO date and time (UTC unless it names
    its zone), in milliseconds since 1970: the one reading of a time that pages and the API share."""
    raw = raw.strip()
    if raw.isdigit():
        return int(raw)
    try:
        when = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise BadParameter(f"'timestamp' must be milliseconds since 1970 or an ISO date and time, not '{raw[:50]}'.") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)
