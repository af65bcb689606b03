"""Cluster overview and events timeline pages: parse input, call a service, render."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string

from brokers_app import services
from brokers_app.models import Event
from console import error_responses, snapshots
from console.auth import allow, visible
from console.params import int_param
from console.watcher.diff import KINDS


def overview_context(live: snapshots.Live) -> dict[str, Any]:
    shown = visible("topic.view", live.cluster, "topics")
    return {"live": live, "data": services.overview(live.snapshot, shown) if live.snapshot else None}


def overview_fragment(live: snapshots.Live, params: Mapping[str, str]) -> dict[str, str]:
    return {"live-overview": render_to_string("brokers_app/_overview.html", overview_context(live))}


@allow(GET="cluster.view")
def overview(request: HttpRequest, cluster: str) -> HttpResponse:
    live = snapshots.live(cluster)
    return render(request, "brokers_app/overview.html", {**overview_context(live), "view": "overview"})


LAG_TOP = 50  # follower replicas a broker's page lists (most behind first)


def broker_context(live: snapshots.Live, broker: int) -> dict[str, Any]:
    snap = snapshots.require_snapshot(live)
    return {"live": live, "lag": services.broker_replica_lag(snap, broker, LAG_TOP, visible("topic.view", live.cluster, "topics")),
            "brokers": sorted(snap.brokers)}


def broker_fragment(live: snapshots.Live, params: Mapping[str, str]) -> dict[str, str]:
    broker = int_param(params, "broker", minimum=0)
    if broker is None:
        return {}
    return {"live-broker": render_to_string("brokers_app/_broker.html", broker_context(live, broker))}


@allow(GET="cluster.view")
def broker(request: HttpRequest, cluster: str, broker: int) -> HttpResponse:
    live = snapshots.live(cluster)
    return render(request, "brokers_app/broker.html", {**broker_context(live, broker), "view": "broker", "broker": broker})


@allow(GET="cluster.view")
def events(request: HttpRequest, cluster: str) -> HttpResponse:
    live = snapshots.live(cluster)
    filters = services.event_filters(request.GET)
    before = int_param(request.GET, "before", minimum=1)
    rows = services.events(cluster, before=before, limit=200, **filters, topics=visible("topic.view", cluster, "topics"),
                           groups=visible("group.view", cluster, "groups"))
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


# Reassignments ------------------------------------------------------------------------------------

PLAN_KINDS = (("rebalance", "Rebalance"), ("decommission", "Decommission brokers"), ("add_brokers", "Spread onto new brokers"),
              ("replication_factor", "Change replication factor"), ("import", "Import Kafka's reassignment JSON"))


def _plan_form(params: Mapping[str, str]) -> dict[str, Any]:
    """A plan request from a form or a query string (the balance watch's links use the latter)."""
    from console.errors import BadParameter

    kind = params.get("kind", "rebalance")
    if kind not in dict(PLAN_KINDS):
        raise BadParameter(f"Unknown plan kind '{kind[:40]}': choose rebalance, decommission, add_brokers, replication_factor or import.")

    def names(field: str) -> list[str]:
        return [x.strip() for x in params.get(field, "").replace("\n", ",").split(",") if x.strip()]

    brokers = []
    for b in names("brokers"):
        if not b.isdigit() or len(b) > 10:
            raise BadParameter(f"Broker ids are whole numbers; '{b[:40]}' is not one.")
        brokers.append(int(b))
    d: dict[str, Any] = {"kind": kind, "topics": names("topics"), "brokers": brokers,
                         "replication_factor": int_param(params, "replication_factor", minimum=1, maximum=32767)}
    if kind == "import":
        import json

        try:
            d["plan"] = json.loads(params.get("plan", ""))
        except ValueError as e:
            raise BadParameter(f"The plan is not valid JSON ({e}).") from None
        d["allow_replication_factor_change"] = params.get("allow_rf") == "1"
    return d


@allow(GET="reassignments.view", POST="partitions.reassign")
def reassignments(request: HttpRequest, cluster: str) -> HttpResponse:
    from django.shortcuts import redirect
    from django.urls import reverse

    from console.errors import ConsoleError

    live = snapshots.live(cluster)
    context: dict[str, Any] = {"live": live, "view": "reassignments", "kinds": PLAN_KINDS, "form": request.POST or request.GET}
    status = 200
    try:
        if request.method == "POST" and request.POST.get("action") == "election":
            snap = snapshots.require_snapshot(live)
            context["election"] = services.elect_leaders(request.user, cluster, snap, False, [], [])
        elif request.method == "POST":
            job = services.plan_reassignment(cluster, request.user, _plan_form(request.POST))
            return redirect(reverse("reassignment", args=[cluster, job.id]))
        elif request.GET.get("preview") == "1":
            context["plan"] = services.make_plan(cluster, _plan_form(request.GET))
    except ConsoleError as exc:
        context["error"], status = error_responses.form_error(exc)
    context["jobs"] = services.reassignment_jobs(cluster, 100)
    return render(request, "brokers_app/reassignments.html", context, status=status)


def job_context(cluster: str, job_id: int) -> dict[str, Any]:
    job = services.reassignment_job(cluster, job_id)
    return {"job": job, "plan": job.as_dict(), "progress": job.progress, "catch_up": services.catch_up(cluster, job)}


def job_fragment(live: snapshots.Live, params: Mapping[str, str]) -> dict[str, str]:
    job_id = params.get("job", "")
    if not job_id.isdigit() or len(job_id) > 18:
        return {}
    return {"job-progress": render_to_string("brokers_app/_job_progress.html", job_context(live.cluster, int(job_id)))}


@allow(GET="reassignments.view", POST="partitions.reassign")
def reassignment(request: HttpRequest, cluster: str, job_id: int) -> HttpResponse:
    from django.shortcuts import redirect
    from django.urls import reverse

    from console.errors import ConsoleError

    live = snapshots.live(cluster)
    context = {"live": live, "view": "reassignment", **job_context(cluster, job_id)}
    status = 200
    if request.method == "POST":
        job = context["job"]
        action = request.POST.get("action", "")
        try:
            if action not in ("execute", "cancel"):
                from console.errors import BadParameter

                raise BadParameter("Choose execute or cancel.")
            throttle = int_param(request.POST, "throttle_mb", minimum=0, maximum=10**6)
            max_moves = int_param(request.POST, "max_moves", minimum=1, maximum=1000)
            if action == "execute":
                services.execute_reassignment(request.user, job, throttle * 1024 * 1024 if throttle else None, max_moves)
            else:
                services.cancel_reassignment(request.user, job)
            return redirect(reverse("reassignment", args=[cluster, job.id]))
        except ConsoleError as exc:
            context["error"], status = error_responses.form_error(exc)
    context["default_throttle_mb"] = max(1, settings.REASSIGNMENT_THROTTLE // (1024 * 1024))
    context["default_max_moves"] = settings.REASSIGNMENT_MAX_MOVES_PER_BROKER
    return render(request, "brokers_app/reassignment.html", context, status=status)


@allow(GET="reassignments.view")
def reassignment_json(request: HttpRequest, cluster: str, job_id: int) -> HttpResponse:
    """The plan as the file kafka-reassign-partitions --execute/--verify reads."""
    import json

    job = services.reassignment_job(cluster, job_id)
    response = HttpResponse(json.dumps(job.plan.get("plan", {}), indent=2) + "\n", content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="reassignment-{cluster}-{job.id}.json"'
    return response
