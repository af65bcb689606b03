"""What the connector detail page shows of its offsets (KIP-875) and its auto-restart policy: read
once per page load from Connect and the database; a Connect that does not answer leaves the reason."""

from __future__ import annotations

from typing import Any

import orjson
from django.http import HttpRequest

from connect_app import services_offsets, services_restarts
from console import error_responses
from console.auth import may
from console.errors import ConsoleError


def pretty(value: Any) -> str:
    """JSON as the page shows and takes it: keys sorted, two-space indent."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2).decode()


def card_context(request: HttpRequest, cluster: str, connect: str, name: str, can_manage: bool) -> dict[str, Any]:
    context: dict[str, Any] = {"can_offsets": may(request.user, "connect.offsets", cluster)}
    try:
        found = services_offsets.read(cluster, connect, name)
        context.update({"offsets": found, "offsets_text": pretty(found.offsets),
                        "offset_rows": [{"partition": pretty(o["partition"]), "offset": pretty(o["offset"])} for o in found.offsets]})
    except ConsoleError as exc:
        context["offsets_error"] = error_responses.message(exc)
    try:
        context["policy"] = services_restarts.read(cluster, connect, name)
    except ConsoleError as exc:
        context["policy_error"] = error_responses.message(exc)
    return context


def preview_rows(plan: services_offsets.Plan) -> list[dict[str, Any]]:
    return [{"partition": pretty(c["partition"]), "current": None if c["current"] is None else pretty(c["current"]),
             "new": None if c["new"] is None else pretty(c["new"]), "change": c["change"]} for c in plan.changes]
