"""Kafka Connect pages: the connectors of each Connect cluster (live), one connector (state and tasks
live; config with secrets masked; pause, resume, stop, restart), and the plugins.

Lists read the watcher's last read (connect_app/state.py), never Connect; the live parts are
redrawn when the watcher broadcasts a change (`connect.update`). The detail asks Connect for the
config once per page load; when Connect does not answer, it shows why, with the last known states.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.http import RFC3986_SUBDELIMS

from connect_app import offsets_card, services
from connect_app.types import STATES, ConnectClusterState
from console import error_responses, snapshots
from console.auth import allow, may, visible
from console.converters import encode_name
from console.errors import BadParameter, ConsoleError
from console.params import bool_param, choice_param, int_param

VIEW = "connectors"  # the live view of every Connect page (console/live.py); a detail page's params name its connector
STALE_AFTER = 10.0  # seconds without a read before a page says the watcher is not reading Connect


def page_base(request: HttpRequest, cluster: str, view: str, live_params: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {"cluster": cluster, "view": view, "live": snapshots.live(cluster),
            "live_params": urlencode(live_params or {}), "can_manage": may(request.user, "connect.manage", cluster)}


def _shown_state(s: ConnectClusterState, now: float) -> dict[str, Any]:
    age = None if s.checked_at is None else max(0.0, now - s.checked_at)
    return {"state": s, "counts": s.counts(), "stale": age is not None and age > STALE_AFTER, "age": age,
            "read_ms": int(s.read_at * 1000) if s.read_at else None, "checked_ms": int(s.checked_at * 1000) if s.checked_at else None}


def list_context(cluster: str, params: Mapping[str, str], can_manage: bool) -> dict[str, Any]:
    wanted = choice_param(params, "state", set(STATES))
    query = (params.get("q") or "").strip().lower()
    now = time.time()
    shown = []
    for s in services.overview(cluster, params.get("connect") or None):
        # Each row's link from one reversed path: reversing it per row took a fifth of a 500-row page.
        base = reverse("connector", args=[cluster, s.name, "-"])[:-2]
        rows = [{"c": c, "href": base + quote(encode_name(c.name), safe=RFC3986_SUBDELIMS + "~:@") + "/",
                 "plugin": c.plugin.removeprefix("org.apache.kafka.connect.")}
                for c in s.connectors if (wanted is None or c.state == wanted) and (not query or query in c.name.lower())]
        shown.append({**_shown_state(s, now), "rows": rows})
    return {"cluster": cluster, "connects": shown, "wanted": wanted, "q": params.get("q", ""), "states": STATES,
            "can_manage": can_manage}


def detail_live_context(cluster: str, connect: str, name: str, can_manage: bool) -> dict[str, Any]:
    kept, connector = services.known_state(cluster, connect, name)
    return {"cluster": cluster, "connect": connect, "name": name, "connector": connector,
            "connect_state": _shown_state(kept, time.time()) if kept is not None else None, "can_manage": can_manage}


def live_fragment(live: Any, params: Mapping[str, str]) -> dict[str, str]:
    """The list, or (params `connector` and `connect`) one connector's state and tasks, for a live page."""
    can_manage = visible("connect.manage", live.cluster, "topics") is None
    name, connect = params.get("connector"), params.get("connect")
    if name and connect:
        return {"connector-live": render_to_string("connect_app/_connector_live.html",
                                                   detail_live_context(live.cluster, connect, name, can_manage))}
    return {"connectors-live": render_to_string("connect_app/_connectors.html", list_context(live.cluster, params, can_manage))}


def wants(params: Mapping[str, str], message: Mapping[str, Any]) -> bool:
    """A detail page wants its own Connect cluster's changes only."""
    return not params.get("connect") or params.get("connect") == message.get("connect")


@allow(GET="connect.view")
def connectors_page(request: HttpRequest, cluster: str) -> HttpResponse:
    context = list_context(cluster, request.GET, may(request.user, "connect.manage", cluster))
    params = {k: str(request.GET.get(k, "")) for k in ("state", "q", "connect") if request.GET.get(k)}
    return render(request, "connect_app/connectors.html", {**page_base(request, cluster, VIEW, params), **context})


@allow(GET="connect.view")
def plugins_page(request: HttpRequest, cluster: str) -> HttpResponse:
    context = page_base(request, cluster, "connect_plugins")
    try:
        config, found = services.plugins(cluster, request.GET.get("connect") or None)
        context.update({"connect": config.name, "plugins": found})
    except services.NotFound:
        raise
    except ConsoleError as exc:
        context.update({"connect": request.GET.get("connect", ""), "error": error_responses.message(exc)})
    context["connect_names"] = [c.name for c in services.connect_clusters(cluster)]
    return render(request, "connect_app/plugins.html", context)


def _action(request: HttpRequest, cluster: str, connect: str, connector: str) -> services.Outcome:
    p = request.POST
    action = p.get("action", "")
    task = int_param(p, "task", minimum=0) if p.get("task", "") != "" else None
    include_tasks, only_failed = bool_param(p, "include_tasks"), bool_param(p, "only_failed")
    if not action:
        raise BadParameter("Choose what to do: pause, resume, stop or restart.")
    return services.act(request.user, cluster, connect, connector, action, include_tasks, only_failed, task)


@allow(GET="connect.view", POST="connect.manage")
def connector_page(request: HttpRequest, cluster: str, connect: str, connector: str) -> HttpResponse:
    services.connect_config(cluster, connect)
    status, error = 200, None
    if request.method == "POST":
        try:
            messages.success(request, _action(request, cluster, connect, connector).message)
            return redirect(reverse("connector", args=[cluster, connect, connector]))
        except services.NotFound:
            raise
        except ConsoleError as exc:
            error, status = error_responses.form_error(exc)
    return render_detail(request, cluster, connect, connector, {"error": error}, status)


def render_detail(request: HttpRequest, cluster: str, connect: str, connector: str, extra: Mapping[str, Any],
                  status: int = 200) -> HttpResponse:
    """The detail page; `extra`: what a form posted to it left to show (an error, an offsets preview)."""
    context = page_base(request, cluster, VIEW, {"connect": connect, "connector": connector})
    context.update(detail_live_context(cluster, connect, connector, context["can_manage"]))
    context.update({"error": None, "page": "detail", **extra})
    context.update({**offsets_card.card_context(request, cluster, connect, connector, context["can_manage"]), **extra})
    try:
        detail = services.detail(cluster, connector, connect)
        context.update({"detail": detail, "config": detail.config})
    except services.NotFound:
        if context["connector"] is None:
            raise
        context["config_error"] = f"Connect no longer has connector '{connector}'."
    except ConsoleError as exc:
        context["config_error"] = error_responses.message(exc)
    return render(request, "connect_app/connector.html", context, status=status)
