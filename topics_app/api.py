"""REST API of topic layout (read from the watcher's snapshot)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from brokers_app.api import require_snapshot
from brokers_app.services import live
from topics_app import services


class PartitionList(APIView):
    @extend_schema(responses=OpenApiTypes.OBJECT, summary="A topic's partitions: leader, replicas, ISR, offsets")
    def get(self, request: Request, cluster: str, topic: str) -> Response:
        current = live(cluster)
        snap = require_snapshot(current)
        t = services.topic(snap, topic)
        return Response(
            {
                "status": current.status,
                "topic": topic,
                "internal": t.internal,
                "replication_factor": t.replication_factor,
                "min_isr": t.min_isr,
                "partitions": services.partitions(snap, topic),
            }
        )
