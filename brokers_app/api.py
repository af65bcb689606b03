"""REST API of clusters, brokers and events (read from the watcher's snapshot)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from brokers_app import services
from brokers_app.services import require_snapshot
from brokers_app.views import event_filters
from console import gateway
from console.params import int_param


class ClusterList(APIView):
    roles = {"GET": "viewer"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Configured clusters and their state")
    def get(self, request: Request) -> Response:
        result = []
        for config in gateway.cluster_configs():
            live = services.live(config.name)
            result.append({"name": config.name, "bootstrap_servers": config.bootstrap_servers, **live.status})
        return Response({"clusters": result})


class ClusterDetail(APIView):
    roles = {"GET": "viewer"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Cluster overview: counts, brokers, KRaft quorum")
    def get(self, request: Request, cluster: str) -> Response:
        live = services.live(cluster)
        return Response({"status": live.status, **services.overview(require_snapshot(live))})


class BrokerList(APIView):
    roles = {"GET": "viewer"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Brokers with up/down, leaders and replicas")
    def get(self, request: Request, cluster: str) -> Response:
        live = services.live(cluster)
        return Response({"status": live.status, "brokers": require_snapshot(live).broker_rows()})


class EventList(APIView):
    roles = {"GET": "viewer"}

    @extend_schema(
        responses=OpenApiTypes.OBJECT,
        summary="Events timeline, newest first",
        parameters=[
            OpenApiParameter("kind", str),
            OpenApiParameter("topic", str),
            OpenApiParameter("broker", int),
            OpenApiParameter("before", int, description="only events with a smaller id (paging)"),
            OpenApiParameter("limit", int, description="1-1000, default 100"),
        ],
    )
    def get(self, request: Request, cluster: str) -> Response:
        gateway.cluster_config(cluster)
        filters = event_filters(request.query_params)
        before = int_param(request.query_params, "before", minimum=1)
        limit = int_param(request.query_params, "limit", 100, minimum=1, maximum=1000) or 100
        rows = services.events(cluster, before=before, limit=limit, **filters)
        return Response({"events": [e.as_dict() for e in rows], "next_before": rows[-1].id if len(rows) == limit else None})
