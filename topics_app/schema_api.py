"""REST API of the schemas a topic's records are decoded with (topics_app/schemas.py): list, upload, remove."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console.api_edge import Body, StrictCharField, StrictIntegerField, validated
from console.snapshots import latest
from topics_app import reads, schema_formats, schema_wire, schemas, services


class SchemaBody(Body):
    """The schema's text is checked by its format's own library; a bad one is a 400 naming the problem."""

    part = serializers.ChoiceField(choices=list(schemas.PARTS), error_messages={"invalid_choice": "must be key or value."})
    format = serializers.ChoiceField(choices=list(schema_formats.FORMATS),
                                     error_messages={"invalid_choice": f"must be one of {', '.join(schema_formats.FORMATS)}."})
    text = StrictCharField(max_length=schema_formats.MAX_SCHEMA_CHARS, help_text="The .avsc, .proto or JSON Schema file's text.")
    name = StrictCharField(max_length=200, required=False, default="", allow_blank=True, help_text="The file's name.")
    message_type = StrictCharField(max_length=500, required=False, default="", allow_blank=True,
                                   help_text="Protobuf: the full name of the message type (default: the file's first).")
    schema_ids = serializers.ListField(child=StrictIntegerField(min_value=0, max_value=schema_wire.MAX_SCHEMA_ID), required=False,
                                       default=list, max_length=100,
                                       help_text="Confluent schema ids whose framed records this schema decodes.")


class TopicSchemas(APIView):
    actions = {"GET": "topic.view", "POST": "topic.schemas"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="The schemas uploaded for a topic's keys and values",
                   operation_id="api_v1_clusters_topics_schemas_list")
    def get(self, request: Request, cluster: str, topic: str) -> Response:
        return Response({"schemas": [schemas.as_json(r) for r in schemas.rows_of(cluster, topic)]})

    @extend_schema(request=SchemaBody, responses={201: OpenApiTypes.OBJECT},
                   summary="Upload an Avro, Protobuf or JSON Schema for a topic's key or value (operator)")
    def post(self, request: Request, cluster: str, topic: str) -> Response:
        d = validated(SchemaBody, request)
        reads.topic(latest(cluster), topic)
        row = services.upload_schema(request.user, cluster, topic, d["part"], d["format"], d["name"], d["text"],
                                     d["message_type"], d["schema_ids"])
        return Response(schemas.as_json(row), status=201)


class TopicSchemaDetail(APIView):
    actions = {"GET": "topic.view", "DELETE": "topic.schemas"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="One uploaded schema", operation_id="api_v1_clusters_topics_schema_retrieve")
    def get(self, request: Request, cluster: str, topic: str, schema_id: int) -> Response:
        return Response(schemas.as_json(schemas.schema_row(cluster, topic, schema_id)))

    @extend_schema(responses={204: None}, summary="Remove an uploaded schema (operator)")
    def delete(self, request: Request, cluster: str, topic: str, schema_id: int) -> Response:
        services.delete_schema(request.user, cluster, topic, schema_id)
        return Response(status=204)
