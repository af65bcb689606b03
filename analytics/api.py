"""REST API of analytics runs and lag reports."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from analytics import services
from analytics.models import AnalyticsRun, ReportSchedule
from analytics.views import report_file
from console import gateway, snapshots
from console.api_edge import Body, StrictIntegerField, validated
from console.gateway.errors import NotFound
from console.params import int_param


class RunBody(Body):
    start_ms = StrictIntegerField(required=False, allow_null=True, default=None, min_value=0, max_value=2**53,
                                  help_text="Window start, ms since the epoch (default: an hour before the end).")
    end_ms = StrictIntegerField(required=False, allow_null=True, default=None, min_value=0, max_value=2**53,
                                help_text="Window end, ms since the epoch (default: now).")


class Runs(APIView):
    actions = {"GET": "analytics.view", "POST": "analytics.run"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Analytics runs of the cluster, newest first")
    def get(self, request: Request, cluster: str) -> Response:
        gateway.cluster_config(cluster)
        return Response({"runs": [r.as_dict() for r in AnalyticsRun.objects.filter(cluster=cluster)[:100]]})

    @extend_schema(request=RunBody, responses=OpenApiTypes.OBJECT, summary="Run the Spark jobs now over a window of samples")
    def post(self, request: Request, cluster: str) -> Response:
        d = validated(RunBody, request)
        run, already = services.run_now(cluster, request.user, d["start_ms"], d["end_ms"])
        if already:  # (200, not 202: nothing new was queued)
            return Response({**run.as_dict(), "already_queued": True, "message": services.already_queued(run)})
        return Response({**run.as_dict(), "already_queued": False}, status=202)


class RunDetail(APIView):
    actions = {"GET": "analytics.view"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="One analytics run: state, stage, summary")
    def get(self, request: Request, cluster: str, run_id: int) -> Response:
        gateway.cluster_config(cluster)
        return Response(services.get_run(run_id, cluster).as_dict(full=True))


class TopicHistory(APIView):
    actions = {"GET": "topic.view"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="A topic's throughput history from the latest analytics run",
                   parameters=[OpenApiParameter("resolution", int, description="60, 300 or 3600 seconds")])
    def get(self, request: Request, cluster: str, topic: str) -> Response:
        snap = snapshots.latest(cluster)
        if topic not in snap.topics:
            raise NotFound(f"Topic '{topic}' does not exist on cluster '{cluster}'.")
        resolution = int_param(request.query_params, "resolution", 60, minimum=60, maximum=3600) or 60
        if resolution not in (60, 300, 3600):
            from console.errors import BadParameter

            raise BadParameter("'resolution' must be 60, 300 or 3600 seconds.")
        return Response({"topic": topic, "resolution_s": resolution, **services.topic_history(cluster, topic, resolution)})


class GroupHistory(APIView):
    actions = {"GET": "group.view"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="A group's lag, time lag and status history from the latest analytics run")
    def get(self, request: Request, cluster: str, group: str) -> Response:
        snap = snapshots.latest(cluster)
        history = services.group_history(cluster, group)
        if group not in snap.groups and not history["t"]:
            raise NotFound(f"Consumer group '{group}' does not exist on cluster '{cluster}'.")
        return Response({"group": group, **history})


class Reports(APIView):
    actions = {"GET": "analytics.view"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Lag reports, newest first",
                   parameters=[OpenApiParameter("cluster", str), OpenApiParameter("limit", int, description="1-500, default 50")])
    def get(self, request: Request) -> Response:
        qs = AnalyticsRun.objects.filter(kind="report")
        cluster = request.query_params.get("cluster")
        if cluster:
            gateway.cluster_config(cluster)
            qs = qs.filter(cluster=cluster)
        limit = int_param(request.query_params, "limit", 50, minimum=1, maximum=500) or 50
        return Response({"reports": [r.as_dict() for r in qs[:limit]]})


class ReportDetail(APIView):
    actions = {"GET": "analytics.view"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="One lag report: summary, status changes, download links")
    def get(self, request: Request, report_id: int) -> Response:
        run = services.get_run(report_id, kind="report")
        done = run.state == AnalyticsRun.DONE
        base = f"/api/v1/reports/{run.id}/"
        return Response({**run.as_dict(full=True), "status_changes": services.status_changes(run) if done else [],
                         "html": base + "report.html" if done else None, "csv": base + "report.csv" if done else None,
                         "page": f"/clusters/{run.cluster}/reports/{run.id}/"})


class ReportFile(APIView):
    actions = {"GET": "analytics.view"}

    @extend_schema(responses={(200, "text/csv"): OpenApiTypes.STR, (200, "text/html"): OpenApiTypes.STR},
                   summary="A lag report as a file: CSV, or HTML that works offline")
    def get(self, request: Request, report_id: int, fmt: str) -> HttpResponse:
        run = services.get_run(report_id, kind="report")
        return report_file(run, fmt)


class ScheduleBody(Body):
    every_minutes = StrictIntegerField(required=False, min_value=1, max_value=10080)
    window_minutes = StrictIntegerField(required=False, min_value=1, max_value=10080)
    enabled = serializers.BooleanField(required=False)
    email_to = serializers.ListField(child=serializers.EmailField(), required=False)


class Schedules(APIView):
    actions = {"GET": "analytics.view", "PATCH": "reports.schedule"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="The cluster's report schedules")
    def get(self, request: Request, cluster: str) -> Response:
        gateway.cluster_config(cluster)
        return Response({"schedules": [s.as_dict() for s in services.ensure_schedules(cluster)]})

    @extend_schema(request=ScheduleBody, responses=OpenApiTypes.OBJECT, summary="Change a schedule (admins)",
                   parameters=[OpenApiParameter("name", str, required=True, description="hourly or daily")])
    def patch(self, request: Request, cluster: str) -> Response:
        gateway.cluster_config(cluster)
        d = validated(ScheduleBody, request)
        services.ensure_schedules(cluster)
        name = request.query_params.get("name", "")
        schedule = services.update_schedule(request.user, cluster, {"name": name, **d})
        return Response(ReportSchedule.objects.get(id=schedule.id).as_dict())
