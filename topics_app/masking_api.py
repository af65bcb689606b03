"""REST API of masking policies (admin only; every change in the audit log)."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console.api_edge import Body, StrictBooleanField, StrictCharField, validated
from console.audit import audited
from console.errors import BadParameter, ConsoleError
from topics_app import masking
from topics_app.admin import policy_details
from topics_app.models import MaskingPolicy

FIELDS = ("cluster", "topic_kind", "topic_pattern", "applies_to", "exempt", "targets", "enabled")


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


def _checked(d: dict[str, Any]) -> dict[str, Any]:
    """The fields as stored, each checked (a 400 naming the field when wrong)."""
    masking.check_topic_pattern(d["topic_kind"], d["topic_pattern"])
    return {**d, "cluster": masking.check_cluster(d["cluster"]), "applies_to": masking.check_names(d["applies_to"], "applies_to"),
            "exempt": masking.check_names(d["exempt"], "exempt"), "targets": masking.check_targets(d["targets"])}


def as_json(p: MaskingPolicy) -> dict[str, Any]:
    return {"id": p.pk, "name": p.name, **policy_details(p), "updated_at": p.updated_at.isoformat()}


def _save(policy: MaskingPolicy, values: dict[str, Any]) -> None:
    for name, value in values.items():
        setattr(policy, name, value)
    try:
        with transaction.atomic():
            policy.save()
    except IntegrityError:
        raise BadParameter(f"'name': a masking policy named '{values.get('name', policy.name)}' already exists.") from None


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
        d = _checked(validated(PolicyBody, request))
        with audited(request.user, "create_masking_policy", target=d["name"], details={k: d[k] for k in FIELDS}) as entry:
            policy = MaskingPolicy()
            _save(policy, d)
            entry["id"] = policy.pk
        return Response(as_json(policy), status=201)


class MaskingPolicyDetail(APIView):
    actions = {"GET": "access.manage", "PATCH": "access.manage", "DELETE": "access.manage"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="A masking policy (admin)")
    def get(self, request: Request, pk: int) -> Response:
        return Response(as_json(_policy(pk)))

    @extend_schema(request=PolicyPatch, responses=OpenApiTypes.OBJECT, summary="Change a masking policy's fields (admin)")
    def patch(self, request: Request, pk: int) -> Response:
        policy = _policy(pk)
        given = validated(PolicyPatch, request)
        d = _checked({"name": policy.name, **policy_details(policy), **given})
        with audited(request.user, "update_masking_policy", target=policy.name,
                     details={"id": pk, "before": policy_details(policy), "set": given}):
            _save(policy, d)
        return Response(as_json(policy))

    @extend_schema(responses={204: None}, summary="Delete a masking policy (admin)")
    def delete(self, request: Request, pk: int) -> Response:
        policy = _policy(pk)
        with audited(request.user, "delete_masking_policy", target=policy.name, details={"id": pk, **policy_details(policy)}):
            policy.delete()
        return Response(status=204)
