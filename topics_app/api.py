"""REST API of topic layout (read from the watcher's snapshot)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from django.http import HttpResponseBase, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from brokers_app.api import require_snapshot
from brokers_app.services import live
from console.auth import IsOperatorRole, has_role
from console.errors import BadParameter
from console.params import bool_param, int_param
from topics_app import browse, services
from topics_app.messages import to_csv, to_jsonl


def body(request: Request) -> dict[str, Any]:
    data = request.data
    if not isinstance(data, dict):
        raise BadParameter("The request body must be a JSON object.")
    return data


def _dry_run(data: Any) -> bool:
    value = data.get("dry_run", False)
    if isinstance(value, bool):
        return value
    raise BadParameter("'dry_run' must be true or false.")


def _int(data: Any, name: str) -> int:
    value = data.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadParameter(f"'{name}' must be a whole number.")
    return value


def _str_map(data: Any, name: str) -> dict[str, str]:
    value = data.get(name, {})
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, (str, int, float)) and not isinstance(v, bool)
                                              for k, v in value.items()):
        raise BadParameter(f"'{name}' must be an object of config names to values.")
    return {k: str(v) for k, v in value.items()}


def outcome(result: services.Outcome, status: int = 200) -> Response:
    return Response({"dry_run": result.dry_run, "message": result.message, **result.details}, status=status)


class OperatorForWrites(BasePermission):
    """Anyone logged in may read; changing needs the operator role; deleting a topic needs admin."""

    message = "This needs the operator role."

    def has_permission(self, request: Request, view: APIView) -> bool:
        if request.method in SAFE_METHODS:
            return bool(request.user and request.user.is_authenticated)
        needed = "admin" if request.method == "DELETE" and isinstance(view, TopicDetail) else "operator"
        self.message = f"This needs the {needed} role."
        return has_role(request.user, needed)


class TopicList(APIView):
    permission_classes = [OperatorForWrites]

    @extend_schema(
        responses=OpenApiTypes.OBJECT, summary="Topics: search, sort, paginate (from the snapshot)",
        parameters=[OpenApiParameter("q", str), OpenApiParameter("regex", bool), OpenApiParameter("ordering", str,
                    description="name, partitions, replication_factor, size, messages, produce_rate, under_replicated; '-' for descending"),
                    OpenApiParameter("page", int), OpenApiParameter("page_size", int), OpenApiParameter("internal", bool)],
    )
    def get(self, request: Request, cluster: str) -> Response:
        snap = require_snapshot(live(cluster))
        p = request.query_params
        ordering = p.get("ordering", "name") or "name"
        page = services.topics_page(
            snap, query=p.get("q", ""), regex=bool_param(p, "regex"), sort=ordering.lstrip("-"),
            descending=ordering.startswith("-"), page=int_param(p, "page", 1, minimum=1) or 1,
            per_page=int_param(p, "page_size", 50, minimum=1, maximum=1000) or 50, internal=bool_param(p, "internal"),
        )
        return Response({"count": page.total, "page": page.page, "pages": page.pages, "results": page.rows})

    @extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT,
                   summary="Create a topic: name, partitions, replication_factor, configs, dry_run")
    def post(self, request: Request, cluster: str) -> Response:
        d = body(request)
        name = d.get("name")
        if not isinstance(name, str):
            raise BadParameter("'name' must be a string.")
        result = services.create_topic(request.user, cluster, name, _int(d, "partitions"), _int(d, "replication_factor"),
                                       _str_map(d, "configs"), dry_run=_dry_run(d))
        return outcome(result, 200 if result.dry_run else 201)


class TopicDetail(APIView):
    permission_classes = [OperatorForWrites]

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="A topic: summary, partitions, consumer groups")
    def get(self, request: Request, cluster: str, topic: str) -> Response:
        snap = require_snapshot(live(cluster))
        summary = services.topic_summary(snap, topic)
        return Response({**summary, "partition_count": summary["partitions"], "partitions": services.partitions(snap, topic),
                         "consumer_groups": services.topic_group_lags(snap, topic)})

    @extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT,
                   summary="Delete a topic (admin); body {\"confirm\": \"<topic name>\"}")
    def delete(self, request: Request, cluster: str, topic: str) -> Response:
        confirm = body(request).get("confirm", "")
        return outcome(services.delete_topic(request.user, cluster, topic, str(confirm)))


class TopicConfigs(APIView):
    permission_classes = [OperatorForWrites]

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Every config with its source; sensitive values masked")
    def get(self, request: Request, cluster: str, topic: str) -> Response:
        services.topic(require_snapshot(live(cluster)), topic)
        configs = services.topic_configs(cluster, topic)
        return Response({"configs": [{**asdict(c), "overridden": c.overridden} for c in configs]})

    @extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT,
                   summary="Incremental alter: {\"set\": {k: v}, \"delete\": [k], \"dry_run\": bool}")
    def patch(self, request: Request, cluster: str, topic: str) -> Response:
        d = body(request)
        delete = d.get("delete", [])
        if not isinstance(delete, list) or not all(isinstance(k, str) for k in delete):
            raise BadParameter("'delete' must be a list of config names.")
        return outcome(services.alter_configs(request.user, cluster, topic, _str_map(d, "set"), delete, _dry_run(d)))


class TopicRecords(APIView):
    permission_classes = [OperatorForWrites]

    @extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT,
                   summary="Purge: {\"offsets\": {\"0\": 100}} deletes below each offset; {\"all\": true} everything")
    def delete(self, request: Request, cluster: str, topic: str) -> Response:
        d = body(request)
        if d.get("all") is True:
            before = None
        else:
            raw = d.get("offsets")
            if not isinstance(raw, dict) or not raw:
                raise BadParameter("Give 'offsets' as {\"partition\": offset} or 'all': true.")
            before = {}
            for k, v in raw.items():
                if not str(k).isdigit() or isinstance(v, bool) or not isinstance(v, int):
                    raise BadParameter("'offsets' must map partition numbers to whole-number offsets.")
                before[int(k)] = v
        return outcome(services.purge_records(request.user, cluster, topic, before, _dry_run(d)))


class PartitionList(APIView):
    permission_classes = [OperatorForWrites]

    @extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT,
                   summary="Add partitions: {\"count\": new total, \"dry_run\": bool}")
    def post(self, request: Request, cluster: str, topic: str) -> Response:
        d = body(request)
        return outcome(services.add_partitions(request.user, cluster, topic, _int(d, "count"), _dry_run(d)))

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


class TopicMessages(APIView):
    permission_classes = [OperatorForWrites]

    @extend_schema(
        responses=OpenApiTypes.OBJECT,
        summary="Read messages: seek (start=newest|oldest|offset|timestamp), decode, filter; format=json|jsonl|csv",
        parameters=[OpenApiParameter(name, str) for name in (
            "partitions", "start", "offset", "timestamp", "newest_n", "limit", "direction", "positions", "max_scanned",
            "decode_key", "decode_value", "q", "regex", "json_path", "json_value", "target", "case", "format")],
    )
    def get(self, request: Request, cluster: str, topic: str) -> HttpResponseBase:
        services.topic(require_snapshot(live(cluster)), topic)
        params = {k: str(request.query_params.get(k, "")) for k in request.query_params}
        fmt = params.pop("format", "json")
        if fmt not in {"json", "jsonl", "csv"}:
            raise BadParameter(f"'format' must be json, jsonl or csv, not '{fmt[:20]}'.")
        req = browse.parse_request(topic, params)
        records, progress = browse.run_scan(cluster, req)
        if fmt == "jsonl":
            response = StreamingHttpResponse(to_jsonl(records, req.decode_value), content_type="application/x-ndjson")
            response["Content-Disposition"] = f'attachment; filename="{topic}.jsonl"'
            return response
        if fmt == "csv":
            response = StreamingHttpResponse(to_csv(records, req.decode_value), content_type="text/csv")
            response["Content-Disposition"] = f'attachment; filename="{topic}.csv"'
            return response
        return Response({
            "records": [browse.row(r, req.decode_key, req.decode_value) for r in records],
            "progress": browse.progress_dict(progress),
            "next_positions": browse.positions_param(progress),
        })

    @extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT,
                   summary="Produce: {value, key, headers: {name: value}, partition, encoding: text|json|base64|hex}")
    def post(self, request: Request, cluster: str, topic: str) -> Response:
        d = body(request)
        services.topic(require_snapshot(live(cluster)), topic)
        encoding = d.get("encoding", "text")
        if encoding not in browse.ENCODINGS:
            raise BadParameter(f"'encoding' must be one of {', '.join(sorted(browse.ENCODINGS))}.")
        value = d.get("value")
        if value is not None and not isinstance(value, str):
            value = json.dumps(value) if encoding == "json" else None
            if value is None:
                raise BadParameter("'value' must be a string (or null for a tombstone).")
        key = d.get("key")
        if key is not None and not isinstance(key, str):
            raise BadParameter("'key' must be a string or null.")
        headers_raw = d.get("headers", {})
        if not isinstance(headers_raw, dict) or not all(isinstance(v, str) for v in headers_raw.values()):
            raise BadParameter("'headers' must be an object of names to string values.")
        partition = d.get("partition")
        if partition is not None and (isinstance(partition, bool) or not isinstance(partition, int) or partition < 0):
            raise BadParameter("'partition' must be a partition number, or null to partition by key.")
        produced = browse.produce_message(
            request.user, cluster, topic, browse.encode(value, encoding, "value"),
            key.encode() if key is not None else None, [(k, v.encode()) for k, v in headers_raw.items()], partition,
        )
        return Response(asdict(produced), status=201)


class RepublishMessage(APIView):
    permission_classes = [IsOperatorRole]

    @extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT,
                   summary="Republish one message: {partition, offset, target_topic}")
    def post(self, request: Request, cluster: str, topic: str) -> Response:
        d = body(request)
        target = d.get("target_topic", topic)
        if not isinstance(target, str) or not target:
            raise BadParameter("'target_topic' must be a topic name.")
        produced = browse.republish(request.user, cluster, topic, _int(d, "partition"), _int(d, "offset"), target)
        return Response(asdict(produced), status=201)
