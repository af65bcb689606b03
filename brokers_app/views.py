"""Cluster overview and events timeline pages: parse input, call a service, render."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string

from brokers_app import services
from brokers_app.models import Event
from console.auth import allow
from console.params import choice_param, int_param, topic_param
from console.watcher.diff import KINDS


def overview_context(live: services.Live) -> dict[str, Any]:
    return {"live": live, "data": services.overview(live.snapshot) if live.snapshot else None}


def overview_fragment(live: services.Live, params: Mapping[str, str]) -> dict[str, str]:
    return {"live-overview": render_to_string("brokers_app/_overview.html", overview_context(live))}


@allow(GET="viewer")
def overview(request: HttpRequest, cluster: str) -> HttpResponse:
    live = services.live(cluster)
    return render(request, "brokers_app/overview.html", {**overview_context(live), "view": "overview"})


def event_filters(params: Mapping[str, str]) -> dict[str, Any]:
    return {
        "kind": choice_param(params, "kind", KINDS),
        "topic": topic_param(params, "topic"),
        "broker": int_param(params, "broker", minimum=0),
    }


@allow(GET="viewer")
def events(request: HttpRequest, cluster: str) -> HttpResponse:
    live = services.live(cluster)
    filters = event_filters(request.GET)
    before = int_param(request.GET, "before", minimum=1)
    rows = services.events(cluster, before=before, limit=200, **filters)
    return render(
        request,
        "brokers_app/events.html",
        {
            "live": live,
            "view": "events",
            "events": rows,
            "filters": filters,
            "kinds": sorted(KINDS.items(), key=lambda kv: kv[1]),
            "older": rows[-1].id if len(rows) == 200 else None,
        },
    )


def event_rows(events: list[dict[str, Any]]) -> str:
    rows = [
        Event(**{**e, "at": datetime.fromisoformat(e["at"])})
        for e in events
    ]
    return render_to_string("brokers_app/_event_rows.html", {"events": rows})
