"""MirrorMaker 2 replication: the page and the API. Each flow is measured on the request (connect_app/mirror.py):
the lag of every replicated topic and partition in records and seconds, and each group's offsets on the
source beside MM2's checkpoint and its translation on the target."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from connect_app import mirror
from console import snapshots
from console.auth import allow
from console.errors import BadParameter

MAX_GROUP_LENGTH = 255
FLOW = OpenApiParameter("flow", str, description="only this flow, by its id `<connect>:<source>-><target>`")
GROUP = OpenApiParameter("group", str, description="only this consumer group's offsets")


def _params(params: Mapping[str, str]) -> tuple[str | None, list[str] | None]:
    flow, group = (params.get("flow") or "").strip(), params.get("group") or ""
    if len(flow) > 400 or any(ord(ch) < 32 for ch in flow):
        raise BadParameter("A flow is named '<connect>:<source>-><target>', as the replication page lists it.")
    if len(group) > MAX_GROUP_LENGTH or any(ord(ch) < 32 for ch in group):
        raise BadParameter(f"A consumer group name is at most {MAX_GROUP_LENGTH} characters, with no control characters.")
    return flow or None, [group] if group else None


def reports(cluster: str, params: Mapping[str, str]) -> tuple[list[mirror.FlowReport], list[str]]:
    flow_id, groups = _params(params)
    if flow_id is not None:
        return [mirror.measure(mirror.find(cluster, flow_id), groups)], []
    flows, errors = mirror.flows(cluster)
    return [mirror.measure(f, groups) for f in flows], errors


def _seconds(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def flow_dict(r: mirror.FlowReport) -> dict[str, Any]:
    f = r.flow
    return {
        "id": f.id, "connect": f.connect,
        "source": {"alias": f.source, "cluster": f.source_cluster, "bootstrap_servers": f.source_bootstrap},
        "target": {"alias": f.target, "cluster": f.target_cluster, "bootstrap_servers": f.target_bootstrap},
        "connectors": [{"kind": kind, "name": name, "state": state} for kind, (name, state) in sorted(f.connectors.items())],
        "lag": {"records": r.records, "seconds": _seconds(r.seconds), "heartbeat_age_seconds": _seconds(r.heartbeat_age)},
        "topics": [{"topic": t.topic, "remote_topic": t.remote, "created": t.created, "records": t.records,
                    "seconds": _seconds(t.seconds),
                    "partitions": [{"partition": p.partition, "source_end_offset": p.source_end, "target_end_offset": p.target_end,
                                    "records": p.records, "seconds": _seconds(p.seconds)} for p in t.partitions]}
                   for t in r.topics],
        "groups": [{"group": g.group, "topic": g.topic, "remote_topic": f.remote_topic(g.topic), "partition": g.partition,
                    "source_offset": g.source_offset,
                    "checkpoint_upstream_offset": g.checkpoint.upstream_offset if g.checkpoint else None,
                    "translated_offset": g.checkpoint.downstream_offset if g.checkpoint else None,
                    "target_offset": g.target_offset} for g in r.groups],
        "checkpoints_topic": f.checkpoints_topic, "heartbeats_topic": f.heartbeats_topic,
        "measured_at": r.measured_at, "errors": r.errors,
    }


@allow(GET="replication.view")
def replication_page(request: HttpRequest, cluster: str) -> HttpResponse:
    found, errors = reports(cluster, request.GET)
    return render(request, "connect_app/replication.html", {
        "cluster": cluster, "view": "replication", "live": snapshots.live(cluster), "reports": found, "errors": errors,
        "flow": request.GET.get("flow", ""), "group": request.GET.get("group", "")})


class Replication(APIView):
    actions = {"GET": "replication.view"}

    @extend_schema(responses=OpenApiTypes.OBJECT, parameters=[FLOW, GROUP],
                   summary="MirrorMaker 2 flows found in the MM2 connectors of the cluster's Connect clusters, measured now: "
                           "`topics` (source topic -> remote topic, lag per partition in records = source end offset minus "
                           "the target's, and in seconds), `lag.heartbeat_age_seconds` (the newest replicated heartbeat's "
                           "age) and `groups` (the source group's committed offset beside MM2's checkpoint, translated)")
    def get(self, request: Request, cluster: str) -> Response:
        found, errors = reports(cluster, request.query_params)
        return Response({"flows": [flow_dict(r) for r in found], "errors": errors})
