"""Topic layout (partition x broker grid) and at-risk pages: parse input, call a service, render."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string

from brokers_app.services import Live
from brokers_app.services import live as live_snapshot
from console.errors import BadParameter
from console.params import bool_param, int_param
from topics_app import services


def layout_params(params: Mapping[str, str]) -> dict[str, Any]:
    query = params.get("q", "").strip()
    if len(query) > 249:
        raise BadParameter("'q' is longer than any topic name can be (249 characters).")
    return {
        "query": query,
        "page": int_param(params, "page", 1, minimum=1),
        "internal": bool_param(params, "internal"),
    }


def layout_context(live: Live, params: dict[str, Any]) -> dict[str, Any]:
    page = services.layout(live.snapshot, params["query"], params["page"], 20, params["internal"]) if live.snapshot else None
    return {"live": live, "layout": page, "params": params}


def layout_fragment(live: Live, params: Mapping[str, str]) -> dict[str, str]:
    return {"live-layout": render_to_string("topics_app/_layout.html", layout_context(live, layout_params(params)))}


def layout(request: HttpRequest, cluster: str) -> HttpResponse:
    params = layout_params(request.GET)
    live = live_snapshot(cluster)
    return render(request, "topics_app/layout.html", {**layout_context(live, params), "view": "layout"})


def at_risk_context(live: Live, broker: int | None) -> dict[str, Any]:
    snap = live.snapshot
    brokers = sorted(snap.brokers) if snap else []
    if broker is None and brokers:
        broker = brokers[0]
    if snap is not None and broker is not None and broker not in snap.brokers:
        raise BadParameter(f"Broker {broker} is not part of cluster '{snap.cluster}'; brokers: {brokers}.")
    risk = snap.at_risk(broker) if snap is not None and broker is not None else None
    return {"live": live, "brokers": brokers, "broker": broker, "risk": risk}


def at_risk_fragment(live: Live, params: Mapping[str, str]) -> dict[str, str]:
    broker = int_param(params, "broker", minimum=0)
    return {"live-at-risk": render_to_string("topics_app/_at_risk.html", at_risk_context(live, broker))}


def at_risk(request: HttpRequest, cluster: str) -> HttpResponse:
    broker = int_param(request.GET, "broker", minimum=0)
    live = live_snapshot(cluster)
    return render(request, "topics_app/at_risk.html", {**at_risk_context(live, broker), "view": "at_risk"})
