"""The topic page's schema section: upload a schema file, remove one (operator); the page lists them."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from console import error_responses
from console.auth import allow, may
from console.errors import BadParameter, ConsoleError
from topics_app import schema_formats, schemas, services

MAX_UPLOAD_BYTES = schema_formats.MAX_SCHEMA_CHARS
EXTENSIONS = {".avsc": "avro", ".avro": "avro", ".proto": "protobuf", ".json": "json_schema"}


def section_context(user: Any, cluster: str, topic: str) -> dict[str, Any]:
    """What the topic page shows of its schemas."""
    return {"schemas": [schemas.as_json(r) for r in schemas.rows_of(cluster, topic)],
            "can_schemas": may(user, "topic.schemas", cluster, topic), "schema_formats": schema_formats.FORMAT_NAMES}


def _text(request: HttpRequest) -> tuple[str, str]:
    """(file name, text) from the uploaded file, or from the text area when no file was chosen."""
    upload = request.FILES.get("file")
    if upload is None:
        return request.POST.get("name", "").strip(), request.POST.get("text", "")
    if upload.size is not None and upload.size > MAX_UPLOAD_BYTES:
        raise BadParameter(f"The schema file is larger than {MAX_UPLOAD_BYTES:,} bytes.")
    try:
        return upload.name or "", upload.read().decode("utf-8")
    except UnicodeDecodeError:
        raise BadParameter("The schema file is not UTF-8 text.") from None


def _format(chosen: str, name: str) -> str:
    if chosen and chosen != "auto":
        return chosen
    for ext, fmt in EXTENSIONS.items():
        if name.lower().endswith(ext):
            return fmt
    raise BadParameter("Choose the schema's format: the file name does not end in .avsc, .proto or .json.")


@allow(POST="topic.schemas")
def schema_upload(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    p = request.POST
    try:
        name, text = _text(request)
        row = services.upload_schema(request.user, cluster, topic, p.get("part", "value"), _format(p.get("format", ""), name),
                                     name, text, p.get("message_type", ""), p.get("schema_ids", ""))
        messages.success(request, f"Uploaded {row.name} for the {row.part}s of {topic}.")
    except ConsoleError as exc:
        messages.error(request, error_responses.message(exc))
    return redirect(reverse("topic", args=[cluster, topic]) + "#schemas")


@allow(POST="topic.schemas")
def schema_delete(request: HttpRequest, cluster: str, topic: str, schema_id: int) -> HttpResponse:
    try:
        services.delete_schema(request.user, cluster, topic, schema_id)
        messages.success(request, f"Removed schema {schema_id} of {topic}.")
    except ConsoleError as exc:
        messages.error(request, error_responses.message(exc))
    return redirect(reverse("topic", args=[cluster, topic]) + "#schemas")
