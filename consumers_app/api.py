"""REST API of consumer groups: list, detail, offset reset (with dry_run), rebalances, delete."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from brokers_app.api import require_snapshot
from brokers_app.services import live
from console.auth import has_role
from console.errors import BadParameter
from console.params import bool_param, int_param
from consumers_app import services
from consumers_app.views import reset_spec


class OperatorForChanges(BasePermission):
    message = "This needs the operator role."

    def has_permission(self, request: Request, view: APIView) -> bool:
        if request.method in SAFE_METHODS:
            return bool(request.user and request.user.is_authenticated)
        return has_role(request.user, "operator")


class GroupList(APIView):
    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Consumer groups with state, members, lag (from the snapshot)",
                   parameters=[OpenApiParameter("q", str), OpenApiParameter("regex", bool),
                               OpenApiParameter("state", str, enum=services.STATES), OpenApiParameter("type", str, enum=services.KINDS), OpenApiParameter("ordering", str),
                               OpenApiParameter("page", int), OpenApiParameter("page_size", int)])
    def get(self, request: Request, cluster: str) -> Response:
        snap = require_snapshot(live(cluster))
        p = request.query_params
        ordering = p.get("ordering", "group") or "group"
        page = services.groups_page(snap, query=p.get("q", ""), regex=bool_param(p, "regex"), sort=ordering.lstrip("-"),
                                    descending=ordering.startswith("-"), page=int_param(p, "page", 1, minimum=1) or 1,
                                    per_page=int_param(p, "page_size", 50, minimum=1, maximum=1000) or 50,
                                    **services.filter_params(p))
        return Response({"count": page.total, "page": page.page, "pages": page.pages, "results": page.rows})


class GroupDetail(APIView):
    permission_classes = [OperatorForChanges]

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="A group: partitions (committed, end, lag, owner) and members")
    def get(self, request: Request, cluster: str, group: str) -> Response:
        return Response(services.group_detail(require_snapshot(live(cluster)), group))

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Delete a group (it must be empty)")
    def delete(self, request: Request, cluster: str, group: str) -> Response:
        services.delete_group(request.user, cluster, require_snapshot(live(cluster)), group)
        return Response({"deleted": group})


def _body(request: Request) -> dict[str, Any]:
    if not isinstance(request.data, dict):
        raise BadParameter("The request body must be a JSON object.")
    return request.data


class GroupOffsets(APIView):
    permission_classes = [OperatorForChanges]

    @extend_schema(
        request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT,
        summary="Reset offsets: {to: earliest|latest|timestamp|offset|shift|group, topics, partitions, timestamp, offset, "
                "shift, from_group, dry_run}",
    )
    def post(self, request: Request, cluster: str, group: str) -> Response:
        d = _body(request)
        dry_run = d.get("dry_run", False)
        if not isinstance(dry_run, bool):
            raise BadParameter("'dry_run' must be true or false.")
        fields: dict[str, str] = {}
        for name in ("to", "timestamp", "offset", "shift", "from_group"):
            if d.get(name) is not None:
                fields[name] = str(d[name])
        topics = d.get("topics", [])
        if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
            raise BadParameter("'topics' must be a list of topic names.")
        fields["topics"] = ",".join(topics)
        partitions = d.get("partitions", {})
        if not isinstance(partitions, dict) or not all(isinstance(v, list) for v in partitions.values()):
            raise BadParameter("'partitions' must map topic names to lists of partition numbers.")
        fields["partitions"] = ",".join(f"{t}:{p}" for t, ps in partitions.items() for p in ps)
        spec = reset_spec(fields)
        snap = require_snapshot(live(cluster))
        if dry_run:
            plan = services.plan_reset(cluster, snap, group, spec)
        else:
            plan = services.apply_reset(request.user, cluster, snap, group, spec)
        return Response({"dry_run": dry_run, "offsets": plan})

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Delete the group's committed offsets on one topic: ?topic=")
    def delete(self, request: Request, cluster: str, group: str) -> Response:
        topic = request.query_params.get("topic", "")
        if not topic:
            raise BadParameter("Give the 'topic' whose offsets to delete.")
        n = services.delete_group_topic_offsets(request.user, cluster, require_snapshot(live(cluster)), group, topic)
        return Response({"deleted_partitions": n})


class MostRebalancing(APIView):
    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Groups that rebalanced most often in the last ?hours= (24)")
    def get(self, request: Request, cluster: str) -> Response:
        from console import gateway as gw

        gw.cluster_config(cluster)
        hours = int_param(request.query_params, "hours", 24, minimum=1, maximum=24 * 30) or 24
        rows = services.most_rebalancing(cluster, hours=hours, limit=50)
        return Response({"groups": [{**r, "last": r["last"].isoformat() if r["last"] else None} for r in rows]})


class GroupRebalances(APIView):
    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Rebalance history of a group, newest first")
    def get(self, request: Request, cluster: str, group: str) -> Response:
        snap = require_snapshot(live(cluster))
        services.group(snap, group)
        from consumers_app.models import Rebalance

        rows = Rebalance.objects.filter(cluster=cluster, group=group).order_by("-started_at")[:500]
        return Response({"rebalances": [r.as_dict() for r in rows]})


class Metrics(APIView):
    """`GET /metrics`: Prometheus text format; needs a login (session or `Authorization: Token <key>`)."""

    @extend_schema(responses=OpenApiTypes.STR, summary="Prometheus metrics: lag, time lag, status per group/partition")
    def get(self, request: Request) -> HttpResponse:
        from console import gateway
        from consumers_app.metrics import exposition

        snapshots = [s for s in (live(c.name).snapshot for c in gateway.cluster_configs()) if s is not None]
        return HttpResponse("".join(exposition(snapshots)), content_type="text/plain; version=0.0.4; charset=utf-8")
