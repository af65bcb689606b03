"""REST API of ACLs and of the effective-permission check."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console.api_edge import Body, StrictBooleanField, StrictCharField, validated
from console.params import int_param
from security_app import acls
from security_app.acl_rules import PRESETS, make_acl


class AclFields(Body):
    principal = StrictCharField(max_length=1000, help_text="Type:name, such as User:alice; User:* is everyone.")
    host = StrictCharField(max_length=255, required=False, default="*", help_text="An IP address, or * (default).")
    operation = StrictCharField(max_length=40, required=False, default="", help_text="READ, WRITE, DESCRIBE, ALL...")
    permission = StrictCharField(max_length=10, required=False, default="ALLOW", help_text="ALLOW (default) or DENY.")
    resource_type = StrictCharField(max_length=40, required=False, default="",
                                    help_text="TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN or USER.")
    resource_name = StrictCharField(max_length=1000, help_text="The name, the prefix, or * for every resource of the type.")
    pattern_type = StrictCharField(max_length=20, required=False, default="LITERAL", help_text="LITERAL (default) or PREFIXED.")
    dry_run = StrictBooleanField(required=False, default=False, help_text="Only say what would change.")


class AclCreateBody(AclFields):
    preset = serializers.ChoiceField(choices=list(PRESETS), required=False, allow_blank=True, default="",
                                     error_messages={"invalid_choice": f"must be one of {', '.join(PRESETS)}."},
                                     help_text="A set of ACLs instead of one: resource_name is then the topic (or prefix).")
    group = StrictCharField(max_length=1000, required=False, default="", help_text="With preset consumer: the group.")
    transactional_id = StrictCharField(max_length=1000, required=False, default="",
                                       help_text="With preset transactional_producer: the transactional id.")


class AclCheckBody(Body):
    principal = StrictCharField(max_length=1000)
    operation = StrictCharField(max_length=40)
    resource_type = StrictCharField(max_length=40)
    resource_name = StrictCharField(max_length=1000)
    host = StrictCharField(max_length=255, help_text="The client's address, as the broker sees it.")


LIST_PARAMETERS = [OpenApiParameter(name, str) for name in
                   ("principal", "host", "operation", "permission", "resource_type", "resource_name")] + [
    OpenApiParameter("pattern_type", str, description="LITERAL, PREFIXED, ANY (default; either, with that exact name) or "
                                                      "MATCH (every ACL that covers resource_name)"),
    OpenApiParameter("offset", int), OpenApiParameter("limit", int, description="1-1000, default 200")]


class Acls(APIView):
    actions = {"GET": "acls.view", "POST": "acls.manage", "DELETE": "acls.manage"}
    body_on_delete = True

    @extend_schema(responses=OpenApiTypes.OBJECT, parameters=LIST_PARAMETERS,
                   summary="The cluster's ACLs, filtered (as kafka-acls --list), under `acls`")
    def get(self, request: Request, cluster: str) -> Response:
        offset = int_param(request.query_params, "offset", 0, minimum=0) or 0
        limit = int_param(request.query_params, "limit", 200, minimum=1, maximum=1000) or 200
        return Response(acls.listing(cluster, request.query_params, offset, limit))

    @extend_schema(request=AclCreateBody, responses=OpenApiTypes.OBJECT,
                   summary="Create one ACL or a preset's set (producer, consumer, transactional producer, prefix admin)")
    def post(self, request: Request, cluster: str) -> Response:
        d = validated(AclCreateBody, request)
        return Response(acls.create(request.user, cluster, acls.wanted_acls(d), d["dry_run"]))

    @extend_schema(request=AclFields, responses=OpenApiTypes.OBJECT, summary="Delete one ACL, named by all its fields")
    def delete(self, request: Request, cluster: str) -> Response:
        d = validated(AclFields, request)
        acl = make_acl(principal_name=d["principal"], host=d["host"], operation=d["operation"], permission=d["permission"],
                       resource_type=d["resource_type"], resource_name=d["resource_name"], pattern_type=d["pattern_type"])
        return Response(acls.delete(request.user, cluster, acl, d["dry_run"]))


class AclCheck(APIView):
    actions = {"POST": "acls.view"}

    @extend_schema(request=AclCheckBody, responses=OpenApiTypes.OBJECT,
                   summary="May this principal do this operation on this resource from this host? With the deciding ACLs")
    def post(self, request: Request, cluster: str) -> Response:
        d = validated(AclCheckBody, request)
        decision = acls.check(cluster, principal_name=d["principal"], operation=d["operation"],
                              resource_type=d["resource_type"], resource_name=d["resource_name"], host=d["host"])
        return Response(decision.as_dict())
