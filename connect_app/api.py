"""REST API of Kafka Connect: connectors with their states (list, create), one connector (detail with
secrets masked, config, actions, delete), and the plugins. `?connect=` names the Connect cluster when
a Kafka cluster has several (default: the first; for one connector, the one whose last read lists it)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from connect_app import services
from connect_app.types import STATES, ConnectClusterState, ConnectorState
from console.api_edge import Body, ConfigValueField, StrictBooleanField, StrictCharField, StrictIntegerField, validated
from console.params import choice_param

CONNECT = OpenApiParameter("connect", str, description="the Connect cluster, when the Kafka cluster has several")
STATE = OpenApiParameter("state", str, description="only connectors in this state: " + ", ".join(STATES))


def _connect(request: Request) -> str | None:
    return request.query_params.get("connect") or None


def task_dict(t: Any) -> dict[str, Any]:
    return {"id": t.id, "state": t.state, "worker_id": t.worker_id, "trace": t.trace or None}


def connector_dict(c: ConnectorState, connect: str) -> dict[str, Any]:
    return {"name": c.name, "connect": connect, "type": c.type, "plugin": c.plugin, "state": c.state, "worker_id": c.worker_id,
            "trace": c.trace or None, "tasks": [task_dict(t) for t in c.tasks]}


def connect_dict(s: ConnectClusterState) -> dict[str, Any]:
    return {"name": s.name, "url": s.url, "reachable": s.reachable, "error": s.error or None, "version": s.version or None,
            "checked_at": s.checked_at, "read_at": s.read_at, "connectors": len(s.connectors)}


def invalid(exc: services.InvalidConfig) -> Response:
    """Connect's validation errors: the sentence, and every key's messages."""
    return Response({"detail": exc.message, "errors": exc.errors}, status=400)


class ConnectorCreateBody(Body):
    name = StrictCharField(allow_blank=True, max_length=1000)
    config = serializers.DictField(child=ConfigValueField(), help_text="the connector's config; connector.class names its plugin")


class ConnectorConfigBody(Body):
    config = serializers.DictField(child=ConfigValueField(),
                                   help_text="the whole new config; a secret sent back as ******** keeps its current value")


class ConnectorActionBody(Body):
    action = StrictCharField(help_text="pause, resume, stop or restart")
    include_tasks = StrictBooleanField(required=False, default=False, help_text="restart: the tasks too")
    only_failed = StrictBooleanField(required=False, default=False, help_text="restart: only what failed")
    task = StrictIntegerField(required=False, allow_null=True, default=None, min_value=0,
                              help_text="restart: this task only")


class ConnectorOutcomeSerializer(serializers.Serializer):  # type: ignore[type-arg]
    message = serializers.CharField()
    connect = serializers.CharField()


class ConnectorList(APIView):
    actions = {"GET": "connect.view", "POST": "connect.manage"}

    @extend_schema(responses=OpenApiTypes.OBJECT, parameters=[CONNECT, STATE],
                   summary="Connectors under `connectors` (name, connect, type, plugin, state, worker_id, tasks with their "
                           "states), as the watcher read them at most a second or so ago; `connect_clusters` says whether "
                           "each Connect cluster answered (an unreachable one keeps its last known connectors)")
    def get(self, request: Request, cluster: str) -> Response:
        wanted = choice_param(request.query_params, "state", set(STATES))
        found = services.overview(cluster, _connect(request))
        rows = [connector_dict(c, s.name) for s in found for c in s.connectors if wanted is None or c.state == wanted]
        return Response({"connect_clusters": [connect_dict(s) for s in found], "connectors": rows})

    @extend_schema(request=ConnectorCreateBody, responses={201: ConnectorOutcomeSerializer}, parameters=[CONNECT],
                   summary="Create a connector; Connect's validation errors come back per key under `errors`")
    def post(self, request: Request, cluster: str) -> Response:
        d = validated(ConnectorCreateBody, request)
        try:
            result = services.create(request.user, cluster, _connect(request), d["name"], d["config"])
        except services.InvalidConfig as exc:
            return invalid(exc)
        return Response({"message": result.message, **result.details}, status=201)


class ConnectorDetail(APIView):
    actions = {"GET": "connect.view", "PUT": "connect.manage", "POST": "connect.manage", "DELETE": "connect.manage"}

    @extend_schema(responses=OpenApiTypes.OBJECT, parameters=[CONNECT],
                   summary="A connector as Connect says now: state, tasks with their worker and failure trace, config "
                           "with secrets masked (`secrets`) and config provider references named (`references`)")
    def get(self, request: Request, cluster: str, connector: str) -> Response:
        d = services.detail(cluster, connector, _connect(request))
        return Response({**connector_dict(d.view.state, d.connect.name), "type": d.view.type, "plugin": d.view.plugin,
                         "config": {e.key: e.value for e in d.config}, "secrets": [e.key for e in d.config if e.secret],
                         "references": [e.key for e in d.config if e.reference]})

    @extend_schema(request=ConnectorConfigBody, responses=ConnectorOutcomeSerializer, parameters=[CONNECT],
                   summary="Replace the connector's config, after Connect's validation (errors per key under `errors`)")
    def put(self, request: Request, cluster: str, connector: str) -> Response:
        d = validated(ConnectorConfigBody, request)
        try:
            result = services.update(request.user, cluster, _connect(request), connector, d["config"])
        except services.InvalidConfig as exc:
            return invalid(exc)
        return Response({"message": result.message, **result.details})

    @extend_schema(request=ConnectorActionBody, responses={202: ConnectorOutcomeSerializer}, parameters=[CONNECT],
                   summary="pause, resume, stop, or restart (the connector; with include_tasks its tasks, with only_failed "
                           "only the failed ones; or one task); Connect carries it out within a few seconds")
    def post(self, request: Request, cluster: str, connector: str) -> Response:
        d = validated(ConnectorActionBody, request)
        services.check_action(d["action"], d["include_tasks"], d["only_failed"], d["task"])
        result = services.act(request.user, cluster, _connect(request), connector, d["action"], d["include_tasks"],
                              d["only_failed"], d["task"])
        return Response({"message": result.message, **result.details}, status=202)

    @extend_schema(responses=ConnectorOutcomeSerializer, parameters=[CONNECT], summary="Delete the connector")
    def delete(self, request: Request, cluster: str, connector: str) -> Response:
        result = services.delete(request.user, cluster, _connect(request), connector, None)
        return Response({"message": result.message, **result.details})


class PluginList(APIView):
    actions = {"GET": "connect.view"}

    @extend_schema(responses=OpenApiTypes.OBJECT, parameters=[CONNECT],
                   summary="The connector plugins the Connect cluster's workers have, under `plugins` (class, type, version)")
    def get(self, request: Request, cluster: str) -> Response:
        config, found = services.plugins(cluster, _connect(request))
        return Response({"connect": config.name, "plugins": found})
