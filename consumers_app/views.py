"""Consumer group pages: list, detail (with lag chart), offset reset with preview, delete."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse

from console import error_responses, listing, snapshots
from console.auth import allow, may, visible
from console.errors import BadParameter, ConsoleError
from console.params import int_param, timestamp_ms
from console.snapshots import Live, require_snapshot
from consumers_app import group_history, group_rows, partition_html, services, streams
from security_app.acls import section


def list_params(params: Mapping[str, str]) -> dict[str, Any]:
    return {**listing.list_params(params, group_rows.SORTS, "group"), **group_rows.filter_params(params)}


def groups_context(live: Live, params: dict[str, Any]) -> dict[str, Any]:
    page = group_rows.groups_page(live.snapshot, **params, visible=visible("group.view", live.cluster, "groups")) if live.snapshot else None
    rows_html = listing.rendered_rows("consumers_app/_group_row.html", live.cluster, "g", page.rows) if page else []
    # The column heads (links that keep the query) and the rows come from the rendered-row cache.
    head_html = listing.rendered_rows("consumers_app/_groups_head.html", live.cluster, "head",
                                      [{"params": params, "sorts": group_rows.SORTS}], kept=False)[0]
    return {"live": live, "groups": page, "params": params, "sorts": group_rows.SORTS, "states": group_rows.STATES,
            "kinds": group_rows.KINDS, "rows_html": rows_html, "head_html": head_html}


def groups_fragment(live: Live, params: Mapping[str, str]) -> dict[str, str]:
    return {"live-groups": render_to_string("consumers_app/_groups.html", groups_context(live, list_params(params)))}


@allow(GET="group.view")
def groups(request: HttpRequest, cluster: str) -> HttpResponse:
    params = list_params(request.GET)
    live = snapshots.live(cluster)
    busiest = listing.rendered_rows("consumers_app/_busiest.html", cluster, "busiest",
                                    [{"rows": group_history.most_rebalancing(cluster, visible=visible("group.view", cluster, "groups"))}],
                                    kept=False)[0]
    return render(request, "consumers_app/groups.html", {**groups_context(live, params), "view": "groups",
                                                         "busiest_html": busiest})


def detail_context(live: Live, group_id: str) -> dict[str, Any]:
    snap = require_snapshot(live)
    group = group_rows.group_detail(snap, group_id)
    return {"live": live, "group": group, "partition_rows_html": partition_html.partition_rows(group["partitions"]),
            "rebalances": group_history.recent_rebalances(live.cluster, group_id),
            "history": group_history.lag_history(live.cluster, group_id)}


def detail_fragment(live: Live, params: Mapping[str, str]) -> dict[str, str]:
    return {"live-group": render_to_string("consumers_app/_group.html", detail_context(live, params.get("group", "")))}


@allow(GET="group.view")
def group_detail(request: HttpRequest, cluster: str, group: str) -> HttpResponse:
    from analytics.services import group_history, history_or_none

    live = snapshots.live(cluster)
    context = detail_context(live, group)
    return render(request, "consumers_app/group.html", {**context, **streams_context(live, context["group"]), "view": "group",
                                                        "acl_section": section(request.user, cluster, "GROUP", group),
                                                        "analytics_history": history_or_none(group_history, cluster, group),
                                                        "can_change": may(request.user, "group.reset_offsets", cluster, group=group)})


def streams_context(live: Live, summary: Mapping[str, Any]) -> dict[str, Any]:
    """A streams group's topology, tasks and input lag, asked of Kafka; when Kafka cannot say now, the
    page still shows what the snapshot has, with the sentence why the rest is missing."""
    if summary.get("group_type") != "streams":
        return {}
    try:
        return {"streams": streams.describe(live.cluster, require_snapshot(live), summary["group"])}
    except ConsoleError as exc:
        return {"streams_error": error_responses.message(exc)}


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
        timestamp_ms=timestamp_ms(p["timestamp"]) if p.get("timestamp", "").strip() else None,
        offset=int_param(p, "offset", minimum=0), shift=int_param(p, "shift"),
        from_group=p.get("from_group") or None,
    )


@allow(GET="group.reset_offsets", POST="group.reset_offsets")
def group_reset(request: HttpRequest, cluster: str, group: str) -> HttpResponse:
    """Preview first (always); apply only from the preview, and only while the group is empty."""
    live = snapshots.live(cluster)
    snap = require_snapshot(live)
    group_rows.group(snap, group)
    context: dict[str, Any] = {"live": live, "view": "status", "group_id": group, "form": request.POST or request.GET}
    status = 200
    if request.method == "POST":
        try:
            spec = reset_spec(request.POST)
            if request.POST.get("apply") == "1":
                plan = services.reset_offsets(request.user, cluster, snap, group, spec, request.POST.get("confirm", ""))
                messages.success(request, f"Reset {len(plan)} partition offsets of group '{group}'.")
                return redirect(reverse("group", args=[cluster, group]))
            context["plan"] = services.preview_reset(request.user, cluster, snap, group, spec)
        except ConsoleError as exc:  # a form error: the form shows it beside what was chosen
            context["error"], status = error_responses.form_error(exc)
    return render(request, "consumers_app/reset.html", context, status=status)


@allow(POST="group.delete")
def group_delete(request: HttpRequest, cluster: str, group: str) -> HttpResponse:
    snap = snapshots.latest(cluster)
    try:  # a refusal is the form's error: shown as a message on the group's page
        topic = request.POST.get("topic", "").strip()
        confirm = request.POST.get("confirm", "")
        if topic:
            n = services.delete_group_offsets(request.user, cluster, snap, group, topic, confirm)
            messages.success(request, f"Deleted the offsets of group '{group}' on '{topic}' ({n} partitions).")
            return redirect(reverse("group", args=[cluster, group]))
        topics = services.delete_group(request.user, cluster, snap, group, confirm, internal_topics=request.POST.get("internal_topics") == "1")
        messages.success(request, f"Deleted consumer group '{group}'" + (f" and its internal topics {', '.join(topics)}." if topics else "."))
        return redirect(reverse("groups", args=[cluster]))
    except ConsoleError as exc:
        messages.error(request, error_responses.message(exc))
        return redirect(reverse("group", args=[cluster, group]))
