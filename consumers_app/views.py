"""Consumer group pages: list, detail (with lag chart), offset reset with preview, delete."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse

from brokers_app.services import Live
from brokers_app.services import live as live_snapshot
from console import listing
from console.auth import has_role, role_required
from console.errors import BadParameter, ConsoleError
from console.params import int_param
from consumers_app import services
from topics_app.browse import _timestamp_ms


def list_params(params: Mapping[str, str]) -> dict[str, Any]:
    return {**listing.list_params(params, services.SORTS, "group"), **services.filter_params(params)}


def groups_context(live: Live, params: dict[str, Any]) -> dict[str, Any]:
    page = services.groups_page(live.snapshot, **params) if live.snapshot else None
    return {"live": live, "groups": page, "params": params, "sorts": services.SORTS, "states": services.STATES,
            "kinds": services.KINDS}


def groups_fragment(live: Live, params: Mapping[str, str]) -> dict[str, str]:
    return {"live-groups": render_to_string("consumers_app/_groups.html", groups_context(live, list_params(params)))}


def groups(request: HttpRequest, cluster: str) -> HttpResponse:
    params = list_params(request.GET)
    live = live_snapshot(cluster)
    return render(request, "consumers_app/groups.html", {**groups_context(live, params), "view": "groups",
                                                         "busiest": services.most_rebalancing(cluster)})


def detail_context(live: Live, group_id: str) -> dict[str, Any]:
    if live.snapshot is None:
        raise BadParameter(f"There is no snapshot of cluster '{live.cluster}' yet.")
    from consumers_app.models import Rebalance

    rebalances = Rebalance.objects.filter(cluster=live.cluster, group=group_id).order_by("-started_at")[:20]
    return {"live": live, "group": services.group_detail(live.snapshot, group_id), "rebalances": list(rebalances),
            "history": services.lag_history(live.cluster, group_id)}


def detail_fragment(live: Live, params: Mapping[str, str]) -> dict[str, str]:
    return {"live-group": render_to_string("consumers_app/_group.html", detail_context(live, params.get("group", "")))}


def group_detail(request: HttpRequest, cluster: str, group: str) -> HttpResponse:
    live = live_snapshot(cluster)
    return render(request, "consumers_app/group.html", {**detail_context(live, group), "view": "group",
                                                        "can_change": has_role(request.user, "operator")})


def reset_spec(p: Mapping[str, str]) -> services.ResetSpec:
    """Form or query fields into a reset specification."""
    to = p.get("to", "")
    if to not in services.RESET_TO:
        raise BadParameter(f"'to' must be one of {', '.join(sorted(services.RESET_TO))}.")
    topics = [t.strip() for t in p.get("topics", "").split(",") if t.strip()]
    partitions: dict[str, list[int]] = {}
    for item in [x.strip() for x in p.get("partitions", "").split(",") if x.strip()]:
        topic, sep, number = item.rpartition(":")
        if not sep or not number.isdigit():
            raise BadParameter("'partitions' must look like topic:0,topic:3.")
        partitions.setdefault(topic, []).append(int(number))
    return services.ResetSpec(
        to=to, topics=topics, partitions=partitions,
        timestamp_ms=_timestamp_ms(p["timestamp"]) if p.get("timestamp", "").strip() else None,
        offset=int_param(p, "offset", minimum=0), shift=int_param(p, "shift"),
        from_group=p.get("from_group") or None,
    )


@role_required("operator")
def group_reset(request: HttpRequest, cluster: str, group: str) -> HttpResponse:
    """Preview first (always); apply only from the preview, and only while the group is empty."""
    live = live_snapshot(cluster)
    if live.snapshot is None:
        raise BadParameter(f"There is no snapshot of cluster '{cluster}' yet.")
    services.group(live.snapshot, group)
    context: dict[str, Any] = {"live": live, "view": "status", "group_id": group, "form": request.POST or request.GET}
    status = 200
    if request.method == "POST":
        try:
            spec = reset_spec(request.POST)
            if request.POST.get("apply") == "1":
                plan = services.apply_reset(request.user, cluster, live.snapshot, group, spec)
                messages.success(request, f"Reset {len(plan)} partition offsets of group '{group}'.")
                return redirect(reverse("group", args=[cluster, group]))
            context["plan"] = services.plan_reset(cluster, live.snapshot, group, spec)
        except ConsoleError as exc:
            context["error"] = exc.message
            status = exc.http_status if exc.http_status < 500 else 400
    return render(request, "consumers_app/reset.html", context, status=status)


@role_required("operator")
def group_delete(request: HttpRequest, cluster: str, group: str) -> HttpResponse:
    if request.method != "POST":
        return redirect(reverse("group", args=[cluster, group]))
    live = live_snapshot(cluster)
    try:
        if live.snapshot is None:
            raise BadParameter(f"There is no snapshot of cluster '{cluster}' yet.")
        topic = request.POST.get("topic", "").strip()
        if topic:
            n = services.delete_group_topic_offsets(request.user, cluster, live.snapshot, group, topic)
            messages.success(request, f"Deleted the offsets of group '{group}' on '{topic}' ({n} partitions).")
            return redirect(reverse("group", args=[cluster, group]))
        if request.POST.get("confirm") != group:
            raise BadParameter(f"To delete group '{group}', type its name exactly; nothing was deleted.")
        services.delete_group(request.user, cluster, live.snapshot, group)
        messages.success(request, f"Deleted consumer group '{group}'.")
        return redirect(reverse("groups", args=[cluster]))
    except ConsoleError as exc:
        messages.error(request, exc.message)
        return redirect(reverse("group", args=[cluster, group]))
