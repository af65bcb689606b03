"""REST API of a connector's offsets (KIP-875: read; on a STOPPED connector alter with PATCH, reset
with DELETE, each previewed with dry_run) and of its auto-restart policy."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from connect_app import services_offsets, services_restarts
from connect_app.api import CONNECT
from console.api_edge import Body, StrictBooleanField, StrictCharField, validated
from console.params import bool_param

DRY_RUN = OpenApiParameter("dry_run", bool, description="only preview: each partition's current and new offset")
CONFIRM = OpenApiParameter("confirm", str, description="the connector's name typed again (or 'confirm' in a JSON body)")


def _connect(request: Request) -> str | None:
    return request.query_params.get("connect") or None


@extend_schema_field({"type": "array", "items": {"type": "object", "properties": {
    "partition": {"type": "object", "description": "a source's own partition, or a sink's {kafka_topic, kafka_partition}"},
    "offset": {"type": "object", "nullable": True, "description": "a source's own offset, or a sink's {kafka_offset}; null removes it"}}}})
class OffsetsField(serializers.Field):  # type: ignore[type-arg]
    """Checked by services_offsets.check_offsets, which knows whether the connector is a sink."""

    def to_internal_value(self, data: Any) -> Any:
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class ConnectorOffsetsAlterBody(Body):
    offsets = OffsetsField(help_text="the partitions to change: [{partition, offset}] as GET shows them")
    dry_run = StrictBooleanField(required=False, default=False, help_text="only preview the change")


class ConnectorOffsetsResetBody(Body):
    confirm = StrictCharField(required=False, allow_blank=True, default="", max_length=1000,
                              help_text="the connector's name typed again: required to reset (not to preview)")
    dry_run = StrictBooleanField(required=False, default=False, help_text="only preview the reset")


class ConnectorRestartPolicyBody(Body):
    enabled = serializers.JSONField(required=False, help_text="restart failed tasks (true) or not")
    max_restarts = serializers.JSONField(required=False, help_text="restarts within the window before giving up (1 or more)")
    window_seconds = serializers.JSONField(required=False, help_text="the window restarts are counted in (seconds)")
    backoff_seconds = serializers.JSONField(required=False, help_text="the wait before the first restart, doubled for each next")
    max_backoff_seconds = serializers.JSONField(required=False, help_text="the longest wait")


def _plan(plan: services_offsets.Plan, dry_run: bool, message: str | None = None) -> dict[str, Any]:
    return {"dry_run": dry_run, **plan.as_dict(), **({"message": message} if message else {})}


class ConnectorOffsets(APIView):
    actions = {"GET": "connect.view", "PATCH": "connect.offsets", "DELETE": "connect.offsets"}

    body_on_delete = True  # the DELETE's JSON body (its confirmation) is in the schema

    @extend_schema(responses=OpenApiTypes.OBJECT, parameters=[CONNECT],
                   summary="The connector's offsets as Connect keeps them (KIP-875), under `offsets` ({partition, offset}), "
                           "with its type and state")
    def get(self, request: Request, cluster: str, connector: str) -> Response:
        found = services_offsets.read(cluster, _connect(request), connector)
        return Response({"connector": found.name, "connect": found.connect, "type": found.type, "state": found.state,
                         "offsets": found.offsets})

    @extend_schema(request=ConnectorOffsetsAlterBody, parameters=[CONNECT, DRY_RUN],
                   responses={200: OpenApiResponse(OpenApiTypes.OBJECT, description="{dry_run, changes: [{partition, current, "
                                                                                     "new, change}], blocked, message}"),
                              409: OpenApiResponse(description="the connector is not STOPPED")},
                   summary="Alter some partitions' offsets of a STOPPED connector (a sink's: its consumer group's); dry_run "
                           "(body or ?dry_run=true) previews each partition's current and new offset")
    def patch(self, request: Request, cluster: str, connector: str) -> Response:
        d = validated(ConnectorOffsetsAlterBody, request)
        dry_run = d["dry_run"] or bool_param(request.query_params, "dry_run")
        if dry_run:
            return Response(_plan(services_offsets.preview_alter(cluster, _connect(request), connector, d["offsets"]), True))
        outcome, plan = services_offsets.alter(request.user, cluster, _connect(request), connector, d["offsets"])
        return Response(_plan(plan, False, outcome.message))

    @extend_schema(request=ConnectorOffsetsResetBody, parameters=[CONNECT, DRY_RUN, CONFIRM],
                   responses={200: OpenApiResponse(OpenApiTypes.OBJECT, description="{dry_run, changes, blocked, message}"),
                              409: OpenApiResponse(description="the connector is not STOPPED")},
                   summary="Reset every offset of a STOPPED connector (its name typed again as confirm); dry_run previews "
                           "the offsets that would be forgotten")
    def delete(self, request: Request, cluster: str, connector: str) -> Response:
        d = validated(ConnectorOffsetsResetBody, request)
        dry_run = d["dry_run"] or bool_param(request.query_params, "dry_run")
        if dry_run:
            return Response(_plan(services_offsets.preview_reset(cluster, _connect(request), connector), True))
        confirm = d["confirm"] or request.query_params.get("confirm", "")
        outcome, plan = services_offsets.reset(request.user, cluster, _connect(request), connector, confirm)
        return Response(_plan(plan, False, outcome.message))


class ConnectorRestartPolicy(APIView):
    actions = {"GET": "connect.view", "PUT": "connect.manage"}

    @extend_schema(responses=OpenApiTypes.OBJECT, parameters=[CONNECT],
                   summary="The connector's auto-restart policy (enabled, max_restarts within window_seconds, backoff_seconds "
                           "doubling up to max_backoff_seconds; `saved` false: none set, the defaults shown) and what it did "
                           "to each task (restarts within the window, gave_up_at)")
    def get(self, request: Request, cluster: str, connector: str) -> Response:
        return Response(services_restarts.read(cluster, _connect(request), connector).as_dict())

    @extend_schema(request=ConnectorRestartPolicyBody, responses=OpenApiTypes.OBJECT, parameters=[CONNECT],
                   summary="Set the connector's auto-restart policy (fields left out: the defaults); its tasks' counts start afresh")
    def put(self, request: Request, cluster: str, connector: str) -> Response:
        d = validated(ConnectorRestartPolicyBody, request)
        outcome, view = services_restarts.save(request.user, cluster, _connect(request), connector, d)
        return Response({"message": outcome.message, **view.as_dict()})
