"""REST API of topic layout (read from the watcher's snapshot)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from django.http import HttpResponseBase, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console.api_edge import (
    INT32_MAX,
    INT64_MAX,
    Body,
    ConfigValueField,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    validated,
)
from console.auth import visible
from console.errors import BadParameter
from console.params import bool_param, int_param
from console.snapshots import latest, live, require_snapshot
from topics_app import browse, reads, services, tiered, tiered_watch
from topics_app.export import to_csv, to_jsonl
from topics_app.validation import MAX_NAME_LENGTH, check_topic_name

# A console limit, not Kafka's: one form or call never asks for more partitions than this.
MAX_PARTITIONS = 10_000


@extend_schema_field({"type": "string", "minLength": 1, "maxLength": MAX_NAME_LENGTH, "pattern": "^[a-zA-Z0-9._-]+$"})
class TopicNameField(StrictCharField):
    """A name Kafka accepts (its own rules, with its sentences)."""

    def to_internal_value(self, data: Any) -> str:
        return check_topic_name(super().to_internal_value(data))


@extend_schema_field({"description": "A string; with encoding json, any JSON value; null for a tombstone.", "nullable": True})
class ProducedValueField(serializers.Field):  # type: ignore[type-arg]
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(allow_null=True, **kwargs)

    def to_internal_value(self, data: Any) -> Any:
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class TopicCreateBody(Body):
    name = TopicNameField()
    partitions = StrictIntegerField(min_value=1, max_value=MAX_PARTITIONS,
                                    error_messages={"min_value": "must be at least 1: a topic needs at least 1 partition."})
    replication_factor = StrictIntegerField(min_value=1, max_value=32767)
    configs = serializers.DictField(child=ConfigValueField(), required=False, default=dict)
    dry_run = StrictBooleanField(required=False, default=False)


class TopicDeleteBody(Body):
    confirm = StrictCharField(help_text="The topic's name, typed again.", allow_blank=True, max_length=MAX_NAME_LENGTH)


class TopicConfigsBody(Body):
    """Only the keys named change; every other override stays as it is."""

    set = serializers.DictField(child=ConfigValueField(), required=False, default=dict,
                                help_text="Config name -> new value. Lowering retention.ms or retention.bytes below what "
                                          "the topic holds, or adding a cleanup.policy, deletes records: admin only.")
    delete = serializers.ListField(child=StrictCharField(max_length=255), required=False, default=list,
                                   help_text="Config names whose topic override is removed (back to the broker's value); "
                                             "removing a retention.ms, retention.bytes or cleanup.policy override is admin only.")
    dry_run = StrictBooleanField(required=False, default=False)


class PurgeBody(Body):
    """Exactly one of `offsets` (non-empty) and `all: true`; anything else is refused and deletes nothing."""

    offsets = serializers.DictField(child=StrictIntegerField(min_value=-1, max_value=INT64_MAX), required=False, default=dict,
                                    help_text="Partition number -> delete records below this offset (-1: all of that "
                                              "partition). Only the partitions named are touched.")
    all = StrictBooleanField(required=False, default=False,
                             help_text="true: delete every record of every partition (instead of 'offsets').")
    dry_run = StrictBooleanField(required=False, default=False)

    def validate_offsets(self, value: dict[str, int]) -> dict[str, int]:
        for key in value:
            if not key.isdigit() or len(key) > 10:
                raise serializers.ValidationError("must map partition numbers to whole-number offsets.")
        return value


class PartitionsBody(Body):
    count = StrictIntegerField(min_value=1, max_value=MAX_PARTITIONS, help_text="The new total number of partitions.")
    dry_run = StrictBooleanField(required=False, default=False)


class ProduceBody(Body):
    value = ProducedValueField(required=False, default=None)
    key = StrictCharField(required=False, allow_null=True, allow_blank=True, default=None)
    headers = serializers.DictField(child=StrictCharField(allow_blank=True), required=False, default=dict)
    partition = StrictIntegerField(required=False, allow_null=True, default=None, min_value=0, max_value=INT32_MAX,
                                   help_text="null: partition by key.")
    encoding = serializers.ChoiceField(choices=sorted(browse.ENCODINGS), required=False, default="text",
                                       error_messages={"invalid_choice": f"must be one of {', '.join(sorted(browse.ENCODINGS))}."})
    value_schema = StrictIntegerField(required=False, allow_null=True, default=None, min_value=1,
                                      help_text="An uploaded value schema's id: the value (JSON) is encoded with it.")
    value_schema_id = StrictIntegerField(required=False, allow_null=True, default=None, min_value=0, max_value=INT32_MAX,
                                         help_text="With value_schema: frame the value in Confluent's wire format with this id.")
    key_schema = StrictIntegerField(required=False, allow_null=True, default=None, min_value=1,
                                    help_text="An uploaded key schema's id: the key (JSON text) is encoded with it.")
    key_schema_id = StrictIntegerField(required=False, allow_null=True, default=None, min_value=0, max_value=INT32_MAX,
                                       help_text="With key_schema: frame the key in Confluent's wire format with this id.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        value = attrs.get("value")
        if value is not None and not isinstance(value, str) and attrs.get("value_schema") is None:
            if attrs.get("encoding") != "json":
                raise serializers.ValidationError({"value": ["must be a string (or null for a tombstone)."]})
            attrs["value"] = json.dumps(value)
        return attrs


class RepublishBody(Body):
    partition = StrictIntegerField(min_value=0, max_value=INT32_MAX)
    offset = StrictIntegerField(min_value=0, max_value=INT64_MAX)
    target_topic = TopicNameField(required=False, help_text="Default: the same topic.")


class OutcomeSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """What a change (or its dry run) did; a change adds what it learned (diff, offsets)."""

    dry_run = serializers.BooleanField()
    message = serializers.CharField()


def outcome(result: services.Outcome, status: int = 200) -> Response:
    return Response({"dry_run": result.dry_run, "message": result.message, **result.details}, status=status)


class TopicList(APIView):
    actions = {"GET": "topic.view", "POST": "topic.create"}

    @extend_schema(
        responses=OpenApiTypes.OBJECT, summary="Topics: search, sort, paginate (from the snapshot)",
        parameters=[OpenApiParameter("q", str), OpenApiParameter("regex", bool), OpenApiParameter("ordering", str,
                    description="name, partitions, replication_factor, size, messages, produce_rate, under_replicated; '-' for descending"),
                    OpenApiParameter("page", int), OpenApiParameter("page_size", int), OpenApiParameter("internal", bool)],
        description="Each row's `tiered_storage` is true when the topic has remote.storage.enable=true (the watcher's "
                    "listing every TIERED_POLL_INTERVAL seconds).",
    )
    def get(self, request: Request, cluster: str) -> Response:
        snap = latest(cluster)
        p = request.query_params
        ordering = p.get("ordering", "name") or "name"
        page = reads.topics_page(
            snap, query=p.get("q", ""), regex=bool_param(p, "regex"), sort=ordering.lstrip("-"),
            descending=ordering.startswith("-"), page=int_param(p, "page", 1, minimum=1) or 1,
            per_page=int_param(p, "page_size", 50, minimum=1, maximum=1000) or 50, internal=bool_param(p, "internal"),
            visible=visible("topic.view", cluster, "topics"),
        )
        return Response({"count": page.total, "page": page.page, "pages": page.pages,
                         "results": tiered_watch.flagged(cluster, page.rows)})

    @extend_schema(request=TopicCreateBody, responses={200: OutcomeSerializer, 201: OutcomeSerializer},
                   summary="Create a topic (201), or with dry_run Kafka's verdict only (200)")
    def post(self, request: Request, cluster: str) -> Response:
        d = validated(TopicCreateBody, request)
        result = services.create_topic(request.user, cluster, d["name"], d["partitions"], d["replication_factor"],
                                       d["configs"], dry_run=d["dry_run"])
        return outcome(result, 200 if result.dry_run else 201)


class TopicDetail(APIView):
    actions = {"GET": "topic.view", "DELETE": "topic.delete"}
    body_on_delete = True

    @extend_schema(responses=OpenApiTypes.OBJECT,
                   summary="A topic: summary, partitions, consumer groups, and `tiered_storage` (null unless the watcher's listing, "
                           "every TIERED_POLL_INTERVAL seconds, found remote.storage.enable=true: "
                           "per partition earliest, earliest local and latest tiered offsets, high watermark, local bytes, remote "
                           "bytes and segments (from the remote log metadata, as of `remote_as_of`; `remote_error` says why "
                           "when they could not be read); totals; local beside total retention; `sources` names where each "
                           "figure comes from)")
    def get(self, request: Request, cluster: str, topic: str) -> Response:
        snap = latest(cluster)
        summary = reads.topic_summary(snap, topic)
        partitions = reads.partitions(snap, topic)
        return Response({**summary, "partition_count": summary["partitions"], "partitions": partitions,
                         "consumer_groups": reads.topic_group_lags(snap, topic, visible("group.view", cluster, "groups")),
                         # (Kafka is asked only about a topic the watcher found tiered: the rest stays a snapshot read)
                         "tiered_storage": tiered.read(cluster, topic, partitions)
                         if topic in tiered_watch.tiered_topics(cluster) else None})

    @extend_schema(request=TopicDeleteBody, responses=OutcomeSerializer,
                   summary="Delete a topic (admin); the body repeats its name")
    def delete(self, request: Request, cluster: str, topic: str) -> Response:
        d = validated(TopicDeleteBody, request)
        result = services.delete_topic(request.user, cluster, topic, d["confirm"])
        return outcome(result)


class TopicConfigs(APIView):
    actions = {"GET": "topic.view", "PATCH": "topic.edit_config"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Every config with its source; sensitive values masked")
    def get(self, request: Request, cluster: str, topic: str) -> Response:
        reads.topic(latest(cluster), topic)
        configs = services.topic_configs(cluster, topic)
        return Response({"configs": [{**asdict(c), "overridden": c.overridden} for c in configs]})

    @extend_schema(request=TopicConfigsBody, responses=OutcomeSerializer,
                   summary="Incremental alter: only the keys named change (set some, remove others' overrides); "
                           "dry_run first if you like")
    def patch(self, request: Request, cluster: str, topic: str) -> Response:
        d = validated(TopicConfigsBody, request)
        result = services.alter_configs(request.user, cluster, topic, d["set"], d["delete"], d["dry_run"])
        return outcome(result)


class TopicRecords(APIView):
    actions = {"DELETE": "topic.purge"}
    body_on_delete = True

    @extend_schema(request=PurgeBody, responses=OutcomeSerializer,
                   summary="Purge: {\"offsets\": {\"0\": 100}} deletes below each offset; {\"all\": true} everything; "
                           "neither is a 400")
    def delete(self, request: Request, cluster: str, topic: str) -> Response:
        d = validated(PurgeBody, request)
        before = {int(k): v for k, v in d["offsets"].items()}
        result = services.purge_records(request.user, cluster, topic, before, d["all"], d["dry_run"])
        return outcome(result)


class PartitionList(APIView):
    actions = {"GET": "topic.view", "POST": "topic.add_partitions"}

    @extend_schema(request=PartitionsBody, responses=OutcomeSerializer,
                   summary="Add partitions: the new total count; dry_run for Kafka's verdict only")
    def post(self, request: Request, cluster: str, topic: str) -> Response:
        d = validated(PartitionsBody, request)
        result = services.add_partitions(request.user, cluster, topic, d["count"], d["dry_run"])
        return outcome(result)

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="A topic's partitions: leader, replicas, ISR, offsets, and `replica_lag`: each replica's bytes behind its leader")
    def get(self, request: Request, cluster: str, topic: str) -> Response:
        current = live(cluster)
        snap = require_snapshot(current)
        t = reads.topic(snap, topic)
        return Response(
            {
                "status": current.status,
                "topic": topic,
                "internal": t.internal,
                "replication_factor": t.replication_factor,
                "min_isr": t.min_isr,
                "partitions": reads.partitions(snap, topic),
            }
        )


class TopicMessages(APIView):
    actions = {"GET": "messages.read", "POST": "messages.produce"}

    @extend_schema(
        responses={(200, "application/json"): OpenApiTypes.OBJECT, (200, "application/x-ndjson"): OpenApiTypes.STR,
                   (200, "text/csv"): OpenApiTypes.STR},
        summary="Read messages: seek (start=newest|oldest|offset|timestamp), decode, filter; format=json|jsonl|csv",
        parameters=[OpenApiParameter(name, str) for name in (
            "partitions", "start", "offset", "timestamp", "newest_n", "limit", "direction", "positions", "max_scanned",
            "decode_key", "decode_value", "q", "regex", "json_path", "json_value", "target", "case",
            "time_budget_ms")] + [OpenApiParameter("format", str, enum=["json", "jsonl", "csv"])],
    )
    def get(self, request: Request, cluster: str, topic: str) -> HttpResponseBase:
        reads.topic(latest(cluster), topic)
        params = {k: str(request.query_params.get(k, "")) for k in request.query_params}
        fmt = params.pop("format", "json")
        if fmt not in {"json", "jsonl", "csv"}:
            raise BadParameter(f"'format' must be json, jsonl or csv, not '{fmt[:20]}'.")
        req = browse.open_read(request.user, cluster, topic, params, "api" if fmt == "json" else f"export_{fmt}")
        # Bounded in time: past the budget it answers with what it found and where to resume
        # (next_positions, same direction), instead of holding a worker.
        records, progress = browse.run_scan(cluster, req, budget=browse.time_budget(params))
        if fmt in {"jsonl", "csv"}:
            lines = to_jsonl(records, req.decode_value) if fmt == "jsonl" else to_csv(records, req.decode_value)
            response = StreamingHttpResponse(lines, content_type="application/x-ndjson" if fmt == "jsonl" else "text/csv")
            response["Content-Disposition"] = f'attachment; filename="{topic}.{fmt}"'
            response["X-Scan-Budget-Exhausted"] = "true" if progress.budget_exhausted else "false"
            response["X-Scan-Next-Positions"] = browse.positions_param(progress)
            return response
        return Response({
            "records": [browse.row(r, req.decode_key, req.decode_value) for r in records],
            "progress": browse.progress_dict(progress),
            "next_positions": browse.positions_param(progress),
            "direction": req.spec.direction,
            "budget_exhausted": progress.budget_exhausted,
        })

    @extend_schema(request=ProduceBody, responses={201: OpenApiResponse(OpenApiTypes.OBJECT, description="Where it went")},
                   summary="Produce one message: value, key, headers {name: value}, partition, encoding text|json|base64|hex; "
                           "or value_schema / key_schema to encode JSON with an uploaded schema")
    def post(self, request: Request, cluster: str, topic: str) -> Response:
        d = validated(ProduceBody, request)
        reads.topic(latest(cluster), topic)
        value, key = browse.produced_parts(cluster, topic, d)
        produced = services.produce_message(request.user, cluster, topic, value, key,
                                            [(k, v.encode()) for k, v in d["headers"].items()], d["partition"])
        return Response(asdict(produced), status=201)


class RepublishMessage(APIView):
    actions = {"POST": "messages.produce"}

    @extend_schema(request=RepublishBody, responses={201: OpenApiResponse(OpenApiTypes.OBJECT, description="Where it went")},
                   summary="Republish one message (partition, offset) to target_topic (default: the same topic)")
    def post(self, request: Request, cluster: str, topic: str) -> Response:
        d = validated(RepublishBody, request)
        produced = services.republish(request.user, cluster, topic, d["partition"], d["offset"], d.get("target_topic", topic))
        return Response(asdict(produced), status=201)
