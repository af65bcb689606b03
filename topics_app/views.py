"""Topic layout (partition x broker grid) and at-risk pages: parse input, call a service, render."""

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
from console.gateway.errors import GatewayError
from console.params import bool_param, int_param
from console.snapshots import Live, replica_lag, require_snapshot
from security_app.acls import section
from topics_app import browse, reads, schema_views, services, tiered, tiered_watch
from topics_app.decoding import DECODINGS
from topics_app.validation import parse_configs


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
    page = reads.layout(live.snapshot, params["query"], params["page"], 20, params["internal"],
                           visible("topic.view", live.cluster, "topics")) if live.snapshot else None
    return {"live": live, "layout": page, "params": params, "lag_note": replica_lag.HOW_MEASURED}


def layout_fragment(live: Live, params: Mapping[str, str]) -> dict[str, str]:
    return {"live-layout": render_to_string("topics_app/_layout.html", layout_context(live, layout_params(params)))}


@allow(GET="cluster.view")
def layout(request: HttpRequest, cluster: str) -> HttpResponse:
    params = layout_params(request.GET)
    live = snapshots.live(cluster)
    return render(request, "topics_app/layout.html", {**layout_context(live, params), "view": "layout"})


def at_risk_context(live: Live, broker: int | None) -> dict[str, Any]:
    snap = live.snapshot
    brokers = sorted(snap.brokers) if snap else []
    if broker is None and brokers:
        broker = brokers[0]
    if snap is not None and broker is not None and broker not in snap.brokers:
        raise BadParameter(f"Broker {broker} is not part of cluster '{snap.cluster}'; brokers: {brokers}.")
    risk = snap.at_risk(broker) if snap is not None and broker is not None else None
    shown = visible("topic.view", live.cluster, "topics")
    if risk is not None and shown is not None:
        risk = {kind: [r for r in rows if shown(r["topic"])] for kind, rows in risk.items()}
    return {"live": live, "brokers": brokers, "broker": broker, "risk": risk}


def at_risk_fragment(live: Live, params: Mapping[str, str]) -> dict[str, str]:
    broker = int_param(params, "broker", minimum=0)
    return {"live-at-risk": render_to_string("topics_app/_at_risk.html", at_risk_context(live, broker))}


@allow(GET="cluster.view")
def at_risk(request: HttpRequest, cluster: str) -> HttpResponse:
    broker = int_param(request.GET, "broker", minimum=0)
    live = snapshots.live(cluster)
    return render(request, "topics_app/at_risk.html", {**at_risk_context(live, broker), "view": "at_risk"})


# Topics list and detail ------------------------------------------------------------------------------


def list_params(params: Mapping[str, str]) -> dict[str, Any]:
    return {**listing.list_params(params, reads.SORTS, "name"), "internal": bool_param(params, "internal")}


def topics_context(live: Live, params: dict[str, Any]) -> dict[str, Any]:
    page = reads.topics_page(live.snapshot, **params, visible=visible("topic.view", live.cluster, "topics")) if live.snapshot else None
    rows = tiered_watch.flagged(live.cluster, page.rows, every=False) if page else []
    rows_html = listing.rendered_rows("topics_app/_topic_row.html", live.cluster, "t", rows)
    return {"live": live, "topics": page, "params": params, "sorts": reads.SORTS, "rows_html": rows_html}


def topics_fragment(live: Live, params: Mapping[str, str]) -> dict[str, str]:
    return {"live-topics": render_to_string("topics_app/_topics.html", topics_context(live, list_params(params)))}


@allow(GET="topic.view")
def topics(request: HttpRequest, cluster: str) -> HttpResponse:
    params = list_params(request.GET)
    live = snapshots.live(cluster)
    return render(request, "topics_app/topics.html", {**topics_context(live, params), "view": "topics"})


def detail_context(live: Live, name: str) -> dict[str, Any]:
    snap = require_snapshot(live)
    t = reads.topic(snap, name)
    parts = reads.partitions(snap, name)
    return {
        "live": live,
        "topic": t,
        "partitions": parts,
        "shrinking": [{"partition": p["partition"], **r} for p in parts for r in p["replica_lag"] if r["about_to_shrink"]],
        "lag_note": replica_lag.HOW_MEASURED,
        "brokers": sorted(snap.brokers),
        "groups": reads.topic_group_lags(snap, name, visible("group.view", live.cluster, "groups")),
    }


def detail_fragment(live: Live, params: Mapping[str, str]) -> dict[str, str]:
    return {"live-topic": render_to_string("topics_app/_topic.html", detail_context(live, params.get("topic", "")))}


@allow(GET="topic.view")
def topic_detail(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    live = snapshots.live(cluster)
    context = detail_context(live, topic)
    configs, config_error = None, None
    try:
        configs = services.topic_configs(cluster, topic)
    except GatewayError as exc:
        config_error = error_responses.message(exc)  # the page still shows what the snapshot knows
    from analytics.services import history_or_none, topic_history

    history = history_or_none(topic_history, cluster, topic)
    tiered_section = tiered.tiered_storage(cluster, topic, configs, context["partitions"]) if configs else None
    return render(request, "topics_app/topic.html", {**context, "view": "topic", "configs": configs,
                                                     "acl_section": section(request.user, cluster, "TOPIC", topic),
                                                     "config_error": config_error, "analytics_history": history, "tiered": tiered_section,
                                                     "can_change": may(request.user, "topic.edit_config", cluster, topic),
                                                     "can_delete": may(request.user, "topic.delete", cluster, topic),
                                                     **schema_views.section_context(request.user, cluster, topic)})


# Changes: each form previews (Kafka's dry-run verdict) before it applies -------------------------------


def _action(request: HttpRequest, cluster: str, title: str, template: str, run: Any, extra: dict[str, Any]) -> HttpResponse:
    """POST with `apply` runs the change; any other POST is a dry run whose verdict is shown first."""
    context: dict[str, Any] = {"title": title, "cluster": cluster, "form": request.POST, **extra}
    status = 200
    if request.method == "POST":
        apply = request.POST.get("apply") == "1"
        try:
            outcome = run(apply)
            context["outcome"] = outcome
            if apply:
                messages.success(request, outcome.message)
                return redirect(extra.get("done_url") or reverse("topics", args=[cluster]))
        except ConsoleError as exc:  # a form error: the form shows it beside what was typed
            context["error"], status = error_responses.form_error(exc)
    live = snapshots.live(cluster)
    return render(request, template, {**context, "live": live, "view": "status"}, status=status)


@allow(GET="topic.create", POST="topic.create")
def topic_create(request: HttpRequest, cluster: str) -> HttpResponse:
    def run(apply: bool) -> services.Outcome:
        p = request.POST
        name = p.get("name", "").strip()
        partitions = int_param(p, "partitions", minimum=None) or 0
        replication_factor = int_param(p, "replication_factor", minimum=None) or 0
        configs = parse_configs(p.get("configs", ""))
        return services.create_topic(request.user, cluster, name, partitions, replication_factor, configs, dry_run=not apply)

    return _action(request, cluster, "Create a topic", "topics_app/create.html", run, {})


@allow(GET="topic.edit_config", POST="topic.edit_config")
def topic_configs_edit(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    """Only the keys named change: the lines set their values (a line left as it is, or taken out,
    changes nothing) and an override goes back to the broker's value only when its box is ticked."""
    current = services.topic_configs(cluster, topic)
    overridden = [c for c in current if c.overridden]
    overrides = "\n".join(f"{c.name}={c.value}" for c in overridden if c.value is not None)
    removing = request.POST.getlist("remove")

    def run(apply: bool) -> services.Outcome:
        wanted = parse_configs(request.POST.get("configs", ""))
        return services.alter_configs(request.user, cluster, topic, wanted, sorted(set(removing)), dry_run=not apply)

    done = reverse("topic", args=[cluster, topic])
    return _action(request, cluster, f"Edit configs of {topic}", "topics_app/configs.html", run,
                   {"topic": topic, "overrides": overrides, "overridden": overridden, "removing": removing,
                    "done_url": done})


@allow(GET="topic.add_partitions", POST="topic.add_partitions")
def topic_partitions_add(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    def run(apply: bool) -> services.Outcome:
        total = int_param(request.POST, "total", minimum=1)
        if total is None:
            raise BadParameter("Give the new total number of partitions.")
        return services.add_partitions(request.user, cluster, topic, total, dry_run=not apply)

    return _action(request, cluster, f"Add partitions to {topic}", "topics_app/partitions.html", run,
                   {"topic": topic, "done_url": reverse("topic", args=[cluster, topic])})


def parse_purge(text: str) -> dict[int, int]:
    """`partition=offset` lines; blank names nothing (every record is asked for with the 'all' box)."""
    return {
        int_param({"partition": k}, "partition", minimum=0) or 0: int_param({"offset": v}, "offset", minimum=-1) or 0
        for k, v in parse_configs(text).items()
    }


@allow(GET="topic.purge", POST="topic.purge")
def topic_purge(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    def run(apply: bool) -> services.Outcome:
        before = parse_purge(request.POST.get("offsets", ""))
        everything = bool_param(request.POST, "all")
        return services.purge_records(request.user, cluster, topic, before, everything, dry_run=not apply)

    return _action(request, cluster, f"Purge records of {topic}", "topics_app/purge.html", run,
                   {"topic": topic, "done_url": reverse("topic", args=[cluster, topic])})


@allow(GET="topic.delete", POST="topic.delete")
def topic_delete(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    def run(apply: bool) -> services.Outcome:
        if not apply:
            return services.Outcome(True, f"Type '{topic}' and press Delete to delete it for good.")
        return services.delete_topic(request.user, cluster, topic, request.POST.get("confirm", ""))

    return _action(request, cluster, f"Delete {topic}", "topics_app/delete.html", run, {"topic": topic})


# Messages --------------------------------------------------------------------------------------------


@allow(GET="messages.read")
def messages_page(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    """The browser: with `run=1` the first page is scanned and rendered here (within the scan time
    budget); without it the page asks its websocket for the newest messages as soon as it opens. The
    websocket then takes over for progress, stop, paging and live tail."""
    live = snapshots.live(cluster)
    t = reads.topic(live.snapshot, topic) if live.snapshot else None
    context: dict[str, Any] = {"live": live, "view": "status", "topic_name": topic, "topic": t, "form": request.GET,
                               "decodings": DECODINGS, "can_produce": may(request.user, "messages.produce", cluster, topic)}
    if context["can_produce"]:
        context["produce_schemas"] = schema_views.section_context(request.user, cluster, topic)["schemas"]
        context["schema_parts"] = ("value", "key")
    status = 200
    if request.GET.get("run") == "1":
        try:
            req = browse.open_read(request.user, cluster, topic, request.GET, "page")
            records, progress = browse.run_scan(cluster, req, budget=browse.time_budget(request.GET))
            context["rows"] = [browse.row(r, req.decode_key, req.decode_value) for r in records]
            context["progress"] = browse.progress_dict(progress)
            earlier, later = browse.page_bounds(records, progress, req.spec.direction)
            query = request.GET.copy()
            for name in ("positions", "direction"):
                query.pop(name, None)
            base = query.urlencode()
            context["earlier_url"] = f"?{base}&direction=backward&positions={earlier}" if records else None
            context["later_url"] = f"?{base}&direction=forward&positions={later}" if records else None
        except ConsoleError as exc:
            context["error"], status = error_responses.form_error(exc)  # the page still opens, with the scan's sentence
    return render(request, "topics_app/messages.html", context, status=status)


def message_rows(rows: list[dict[str, Any]]) -> str:
    return render_to_string("topics_app/_message_rows.html", {"rows": rows})


@allow(POST="messages.produce")
def message_produce(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    p = request.POST
    try:
        value, key = browse.produced_parts(cluster, topic, {
            "value": p.get("value", "") if p.get("null_value") != "1" else None, "key": p.get("key") or None,
            "encoding": p.get("encoding", "text"),
            **{name: int_param(p, name, minimum=0) for name in ("value_schema", "value_schema_id", "key_schema", "key_schema_id")}})
        partition = int_param(p, "partition", minimum=0)
        produced = services.produce_message(request.user, cluster, topic, value, key, browse.parse_headers(p.get("headers", "")),
                                          partition)
        held = (f" Kafka then held the console back for {produced.throttled_ms:,} ms: a quota applies to its principal or "
                "client id (the cluster's Security tab, Quotas)." if produced.throttled_ms else "")
        messages.success(request, f"Produced to partition {produced.partition} at offset {produced.offset}.{held}")
    except ConsoleError as exc:
        messages.error(request, error_responses.message(exc))
    return redirect(reverse("topic_messages", args=[cluster, topic]))


@allow(POST="messages.produce")
def message_republish(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    p = request.POST
    try:
        partition = int_param(p, "partition", minimum=0)
        offset = int_param(p, "offset", minimum=0)
        if partition is None or offset is None:
            raise BadParameter("Give the partition and offset of the message to republish.")
        target = (p.get("target") or topic).strip()
        produced = services.republish(request.user, cluster, topic, partition, offset, target)
        messages.success(request, f"Republished {topic}-{partition}@{offset} to {target}, partition {produced.partition} "
                                  f"at offset {produced.offset}.")
    except ConsoleError as exc:
        messages.error(request, error_responses.message(exc))
    return redirect(reverse("topic_messages", args=[cluster, topic]))
