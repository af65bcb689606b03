"""REST API of client quotas: list, set, remove, and the quota a (user, client-id) gets by Kafka's precedence."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console import gateway
from console.api_edge import Body, StrictBooleanField, StrictCharField, validated
from console.errors import BadParameter
from console.params import bool_param
from security_app import quota_rules, quotas
from security_app.users_api import DRY_RUN, SecurityChangeSerializer, outcome

_ENTITY_KEYS = {"user": "user", "client-id": "client-id", "client_id": "client-id", "ip": "ip"}


@extend_schema_field({"type": "object", "description": 'Entity types to names; null names the default entity: '
                      '{"user": "bob", "client-id": null} is user bob with any client-id that has no quota of its own '
                      '("client_id" is taken for "client-id").',
                      "properties": {t: {"type": "string", "nullable": True} for t in ("user", "client-id", "ip")}})
class EntityField(serializers.Field):  # type: ignore[type-arg]
    default_error_messages = {"invalid": "must be an object of entity types (user, client-id, ip) to names or null."}

    def to_internal_value(self, data: Any) -> dict[str, str | None]:
        if not isinstance(data, dict):
            self.fail("invalid")
        entity: dict[str, str | None] = {}
        for key, name in data.items():
            if key not in _ENTITY_KEYS:
                raise serializers.ValidationError(f"has an unknown entity type '{str(key)[:50]}'; the types are user, "
                                                  "client-id and ip.")
            if name is not None and not isinstance(name, str):
                raise serializers.ValidationError(f"'{key}' must be a name (a string) or null for the default {key}.")
            entity[_ENTITY_KEYS[key]] = name
        return quota_rules.check_entity(entity)

    def to_representation(self, value: Any) -> Any:
        return value


@extend_schema_field({"type": "number"})
class QuotaValueField(serializers.Field):  # type: ignore[type-arg]
    default_error_messages = {"invalid": "must be a number."}

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            self.fail("invalid")
        return float(data)

    def to_representation(self, value: Any) -> Any:
        return value


class QuotaSetBody(Body):
    entity = EntityField()
    set = serializers.DictField(child=QuotaValueField(), required=False, default=dict,
                                help_text=f"Quota key -> value; keys: {', '.join(quota_rules.KEYS)} (connection_creation_rate "
                                          "on ip entities only, the others on user and client-id entities).")
    remove = serializers.ListField(child=StrictCharField(max_length=100), required=False, default=list,
                                   help_text="Quota keys to remove from the entity.")
    dry_run = StrictBooleanField(required=False, default=False)


class QuotaDeleteBody(Body):
    entity = EntityField()
    keys = serializers.ListField(child=StrictCharField(max_length=100), required=False, default=None, allow_null=True,
                                 help_text="The quota keys to remove; left out: every quota of the entity.")
    dry_run = StrictBooleanField(required=False, default=False)


class QuotaList(APIView):
    actions = {"GET": "quotas.view", "POST": "quotas.manage", "DELETE": "quotas.manage"}
    body_on_delete = True

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Client quotas under `quotas`: each entity (user, client-id, "
                   "ip; null names a default entity) with its values")
    def get(self, request: Request, cluster: str) -> Response:
        gateway.cluster_config(cluster)
        return Response({"quotas": quotas.list_quotas(cluster)})

    @extend_schema(request=QuotaSetBody, responses=SecurityChangeSerializer, parameters=[DRY_RUN],
                   summary="Set and remove quotas of one entity (Kafka validates first; dry run: its verdict only)")
    def post(self, request: Request, cluster: str) -> Response:
        d = validated(QuotaSetBody, request)
        gateway.cluster_config(cluster)
        dry_run = d["dry_run"] or bool_param(request.query_params, "dry_run")
        return outcome(quotas.alter(request.user, cluster, d["entity"], d["set"], d["remove"], dry_run=dry_run))

    @extend_schema(request=QuotaDeleteBody, responses=SecurityChangeSerializer, parameters=[DRY_RUN],
                   summary="Remove quotas of one entity: the keys named, or all it has")
    def delete(self, request: Request, cluster: str) -> Response:
        d = validated(QuotaDeleteBody, request)
        gateway.cluster_config(cluster)
        dry_run = d["dry_run"] or bool_param(request.query_params, "dry_run")
        return outcome(quotas.alter(request.user, cluster, d["entity"], {}, d["keys"], dry_run=dry_run))


def _name(params: Any, *names: str) -> str | None:
    for name in names:
        raw = params.get(name, "")
        if raw:
            if len(raw) > quota_rules.MAX_NAME_LENGTH:
                raise BadParameter(f"'{name}' is longer than {quota_rules.MAX_NAME_LENGTH} characters.")
            return str(raw)
    return None


class EffectiveQuota(APIView):
    actions = {"GET": "quotas.view"}

    @extend_schema(responses=OpenApiTypes.OBJECT,
                   parameters=[OpenApiParameter("user", str), OpenApiParameter("client_id", str),
                               OpenApiParameter("ip", str, description="also the ip's connection_creation_rate")],
                   summary="The quota of each kind a connection of this user and client-id gets, and the entity it comes "
                           "from, by Kafka's precedence (user+client-id first, default client-id last)")
    def get(self, request: Request, cluster: str) -> Response:
        gateway.cluster_config(cluster)
        p = request.query_params
        user, client_id, ip = _name(p, "user"), _name(p, "client_id", "client-id"), _name(p, "ip")
        if user is None and client_id is None and ip is None:
            raise BadParameter("Give a 'user', a 'client_id' or both (and optionally an 'ip').")
        return Response(quotas.effective(cluster, user, client_id, ip))
