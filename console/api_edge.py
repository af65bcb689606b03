"""The API's edge: typed request bodies, validated in one place, and the schema that describes them.

Every body the API accepts is a `Body` serializer: strict JSON types (a number in quotes is not a
number, `"yes"` is not a boolean), limits, required fields, and unknown fields refused (a typo such
as `dry-run` must not turn a dry run into a change). `validated()` turns any mistake into one 400
sentence naming the field. `ConsoleAutoSchema` puts those bodies into /api/schema/ (DELETE bodies
too) and declares the error answers every operation can give.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import build_basic_type, build_object_type
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request

from console.errors import BadParameter

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


class StrictBooleanField(serializers.BooleanField):
    """true or false, nothing else (DRF's own also takes "yes", "0", 1...)."""

    default_error_messages = {"invalid": "must be true or false."}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class StrictIntegerField(serializers.IntegerField):
    """A JSON whole number: not a string of digits, not 1.5, not true."""

    default_error_messages = {"invalid": "must be a whole number.", "min_value": "must be at least {min_value}.",
                              "max_value": "must be at most {max_value}.", "max_string_length": "is too large."}

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)  # type: ignore[no-any-return]


class StrictCharField(serializers.CharField):
    """A JSON string (DRF's own turns 12 into "12")."""

    default_error_messages = {"invalid": "must be a string.", "blank": "must not be empty.",
                              "max_length": "must be at most {max_length} characters long.",
                              "min_length": "must be at least {min_length} characters long."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)  # type: ignore[no-any-return]


@extend_schema_field({"oneOf": [{"type": "string"}, {"type": "number"}]})
class ConfigValueField(serializers.Field):  # type: ignore[type-arg]
    """A config value: a string, or a number written without quotes (kept as its text)."""

    default_error_messages = {"invalid": "must be a string or a number."}

    def to_internal_value(self, data: Any) -> str:
        if isinstance(data, bool) or not isinstance(data, (str, int, float)):
            self.fail("invalid")
        return str(data)

    def to_representation(self, value: Any) -> str:
        return str(value)


class Body(serializers.Serializer):  # type: ignore[type-arg]
    """A request body: a JSON object with only the declared fields."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            unknown = sorted(str(k) for k in data if k not in self.fields)
            if unknown:
                raise serializers.ValidationError(
                    {unknown[0]: [f"is not a field of this request; the fields are {', '.join(sorted(self.fields))}."]})
        return super().to_internal_value(data)


B = TypeVar("B", bound=Body)


def _first_error(errors: Any, path: str = "") -> tuple[str, str]:
    """The first (field path, message) of DRF's nested error structure."""
    if isinstance(errors, Mapping):
        for key, value in errors.items():
            name = path if key == "non_field_errors" else (f"{path}.{key}" if path else str(key))
            return _first_error(value, name)
    if isinstance(errors, list) and errors:
        if isinstance(errors[0], (Mapping, list)):
            for i, item in enumerate(errors):
                if item:
                    return _first_error(item, f"{path}[{i}]" if path else str(i))
        return path, str(errors[0])
    return path, str(errors)


def sentence(errors: Any) -> str:
    """DRF's errors as one sentence naming the first field at fault."""
    field, message = _first_error(errors)
    message = message.rstrip(".") + "."
    if not field:
        return message
    return f"'{field}' {message}" if message[:1].islower() else f"'{field}': {message}"


def validated(body: type[B], request: Request, **context: Any) -> dict[str, Any]:
    """The request's JSON body checked against `body`; any mistake is a 400 naming the field."""
    data = request.data
    if not isinstance(data, Mapping):
        raise BadParameter("The request body must be a JSON object.")
    serializer = body(data=data, context=context)
    if not serializer.is_valid():
        raise BadParameter(sentence(serializer.errors))
    return dict(serializer.validated_data)


# The schema ------------------------------------------------------------------------------------------

ERROR_SCHEMA = build_object_type(properties={"detail": build_basic_type(OpenApiTypes.STR)}, required=["detail"])
# What any operation may answer besides its success: a refusal with its sentence (400 bad input,
# 401 no or bad token, 403 role, 404 unknown cluster/topic/group, 415 a body that is not JSON),
# or Kafka's side failing (502 an error Kafka returned, 503 unreachable or no snapshot yet, 504 timeout).
ERROR_STATUSES = {
    "400": "The request is not valid; `detail` names the field or parameter.",
    "401": "No credentials, or a wrong token.",
    "403": "The user's role does not allow this.",
    "404": "No such cluster, topic or group.",
    "502": "Kafka answered with an error.",
    "503": "The cluster is unreachable, or the watcher has no snapshot of it yet.",
    "504": "Kafka did not answer in time.",
}


class ConsoleAutoSchema(AutoSchema):
    def _get_request_body(self, direction: Literal["request", "response"] = "request") -> Any:
        # A DELETE that takes a body (a typed confirmation, purge offsets) says so with
        # `body_on_delete`; drf-spectacular leaves DELETE bodies out otherwise.
        if self.method == "DELETE" and getattr(self.view, "body_on_delete", False):
            self.method = "POST"
            try:
                return super()._get_request_body(direction)
            finally:
                self.method = "DELETE"
        return super()._get_request_body(direction)

    def _get_response_bodies(self, direction: Literal["request", "response"] = "response") -> Any:
        responses = super()._get_response_bodies(direction)
        if not self.path.startswith("/api/v1/") and self.path != "/metrics":
            return responses
        codes = dict(ERROR_STATUSES)
        if self.method in {"POST", "PUT", "PATCH"} or (self.method == "DELETE" and getattr(self.view, "body_on_delete", False)):
            codes["415"] = "The body is not JSON."
        for code, description in codes.items():
            responses.setdefault(code, {"content": {"application/json": {"schema": ERROR_SCHEMA}}, "description": description})
        return responses


def strict_bodies(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """Postprocessing hook: request bodies refuse unknown fields, so the schema says so."""
    for name, schema in result.get("components", {}).get("schemas", {}).items():
        if name.endswith("Body") and schema.get("type") == "object":
            schema["additionalProperties"] = False
    return result
