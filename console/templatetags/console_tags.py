"""Small template helpers: byte sizes and query strings that keep the current filters."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from django import template

register = template.Library()


@register.filter
def bytes(value: int | None) -> str:  # noqa: A001 - the template filter's name
    if value is None or value == "":
        return "–"
    size = float(value)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1024 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TB"


@register.filter
def clock(value: float | None) -> str:
    """Epoch seconds as the UTC time of day (what "since" columns show)."""
    if value is None or value == "":
        return "–"
    return datetime.fromtimestamp(float(value), tz=UTC).strftime("%H:%M:%S UTC")


def _query(params: dict[str, Any], **changes: Any) -> str:
    merged = {
        "q": params.get("query", ""),
        "regex": "1" if params.get("regex") else "",
        "internal": "1" if params.get("internal") else "",
        "state": params.get("state", ""),
        "type": params.get("kind", ""),
        "sort": params.get("sort", ""),
        "desc": "1" if params.get("descending") else "",
        "page": params.get("page", ""),
    }
    merged.update(changes)
    return urlencode({k: v for k, v in merged.items() if v not in ("", None)})


@register.simple_tag
def sort_query(params: dict[str, Any], key: str) -> str:
    descending = "" if params.get("sort") == key and params.get("descending") else ("1" if params.get("sort") == key else "")
    return _query(params, sort=key, desc=descending, page="")


@register.simple_tag
def page_query(params: dict[str, Any], page: int) -> str:
    return _query(params, page=page)
