"""REST API of masking policies (admin only; every change in the audit log)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console.api_edge import Body, StrictBooleanField, StrictCharField, validated
from console.errors import ConsoleError
from topics_app import masking, services
from topics_app.models import MaskingPolicy


class NotFound(ConsoleError):
    http_status = 404


_NAMES: dict[str, Any] = {"not_a_list": "must be a list of role or group names, such as [\"viewer\", \"support\"]."}


class PolicyBody(Body):
    """Lists and targets are checked by topics_app.masking, whose sentences name the field."""

    name = StrictCharField(max_length=100)
    cluster = StrictCharField(max_length=64, required=False, default="*", help_text="'*' for every cluster.")
    topic_kind = serializers.ChoiceField(choices=list(masking.TOPIC_KINDS), required=False, default="literal",
                                         error_messages={"invalid_choice": f"must be one of {', '.join(masking.TOPIC_KINDS)}."})
    topic_pattern = StrictCharField(max_length=masking.MAX_PATTERN_CHARS)
    applies_to = serializers.ListField(child=StrictCharField(max_length=150), required=False, default=list,
                                       error_messages=_NAMES, help_text="Roles or groups masked; empty: everyone.")
    exempt = serializers.ListField(child=StrictCharField(max_length=150), required=False, default=list,
                                   error_messages=_NAMES, help_text="Roles or groups that see clear values.")
    targets = serializers.JSONField(help_text='[{"kind": "json_path", "path": "$.a.b"}, {"kind": "header", "name": "h"}, '
                                              '{"kind": "key"}, {"kind": "value"}]')
    enabled = StrictBooleanField(required=False, default=True)


class PolicyPatch(PolicyBody):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for f in self.fields.values():
            f.required = False
            f.default = serializers.empty


def as_json(p: MaskingPolicy) -> dict[str, Any]:
    return {"id": p.pk, "name": p.name, **services.policy_details(p), "updated_at": p.updated_at.isoformat()}


def _policy(pk: int) -> MaskingPolicy:
    try:
        return MaskingPolicy.objects.get(pk=pk)
    except MaskingPolicy.DoesNotExist:
        raise NotFound(f"There is no masking policy {pk}.") from None


class MaskingPolicies(APIView):
    actions = {"GET": "access.manage", "POST": "access.manage"}  # who sees what is access control: admin, unscoped

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Masking policies (admin)")
    def get(self, request: Request) -> Response:
        return Response({"results": [as_json(p) for p in MaskingPolicy.objects.all()]})

    @extend_schema(request=PolicyBody, responses={201: OpenApiTypes.OBJECT}, summary="Create a masking policy (admin)")
    def post(self, request: Request) -> Response:
        policy = services.create_masking_policy(request.user, validated(PolicyBody, request))
        return Response(as_json(policy), status=201)


class MaskingPolicyDetail(APIView):
    actions = {"GET": "access.manage", "PATCH": "access.manage", "DELETE": "access.manage"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="A masking policy (admin)")
    def get(self, request: Request, pk: int) -> Response:
        return Response(as_json(_policy(pk)))

    @extend_schema(request=PolicyPatch, responses=OpenApiTypes.OBJECT, summary="Change a masking policy's fields (admin)")
    def patch(self, request: Request, pk: int) -> Response:
        policy = services.update_masking_policy(request.user, _policy(pk), validated(PolicyPatch, request))
        return Response(as_json(policy))

    @extend_schema(responses={204: None}, summary="Delete a masking policy (admin)")
    def delete(self, request: Request, pk: int) -> Response:
        services.delete_masking_policy(request.user, _policy(pk))
        return Response(status=204)
