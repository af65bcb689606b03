"""REST API of SCRAM users: list (names, mechanisms, iterations; never a secret), set a password, delete."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console import gateway
from console.api_edge import Body, StrictBooleanField, StrictCharField, StrictIntegerField, validated
from console.params import bool_param, choice_param
from security_app import users

DRY_RUN = OpenApiParameter("dry_run", bool, description="true: check everything, change nothing")


class SecurityChangeSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """What a change to SCRAM users or quotas (or its dry run) did."""

    dry_run = serializers.BooleanField()
    message = serializers.CharField()


def outcome(result: users.Outcome, status: int = 200) -> Response:
    return Response({"dry_run": result.dry_run, "message": result.message, **result.details}, status=status)


class ScramUserBody(Body):
    # Spaces are kept as sent: a password's are part of it, and a name's are refused with a sentence.
    name = StrictCharField(allow_blank=True, trim_whitespace=False, max_length=1000)
    mechanism = StrictCharField(allow_blank=True, max_length=100, help_text="SCRAM-SHA-256 or SCRAM-SHA-512")
    password = StrictCharField(allow_blank=True, trim_whitespace=False, max_length=users.MAX_PASSWORD_LENGTH * 4,
                               help_text=f"At least {users.MIN_PASSWORD_LENGTH} characters. Never logged, audited or answered.")
    iterations = StrictIntegerField(required=False, default=users.DEFAULT_ITERATIONS,
                                    help_text=f"{users.MIN_ITERATIONS}-{users.MAX_ITERATIONS}, default {users.DEFAULT_ITERATIONS}")
    dry_run = StrictBooleanField(required=False, default=False)


class ScramUserList(APIView):
    actions = {"GET": "users.view", "POST": "users.manage"}

    @extend_schema(responses=OpenApiTypes.OBJECT,
                   summary="SCRAM users under `users`: name and mechanisms with their iterations (Kafka keeps no password)")
    def get(self, request: Request, cluster: str) -> Response:
        gateway.cluster_config(cluster)
        return Response({"users": users.list_users(cluster)})

    @extend_schema(request=ScramUserBody, responses={200: SecurityChangeSerializer, 201: SecurityChangeSerializer}, parameters=[DRY_RUN],
                   summary="Create a SCRAM user (201) or change its password for one mechanism (200); dry run: checks only")
    def post(self, request: Request, cluster: str) -> Response:
        d = validated(ScramUserBody, request)
        gateway.cluster_config(cluster)
        dry_run = d["dry_run"] or bool_param(request.query_params, "dry_run")
        result = users.set_password(request.user, cluster, d["name"], d["mechanism"], d["password"], d["iterations"],
                                    dry_run=dry_run)
        return outcome(result, 201 if result.details.get("created") and not dry_run else 200)


class ScramUserDetail(APIView):
    actions = {"DELETE": "users.manage"}

    @extend_schema(responses=SecurityChangeSerializer,
                   parameters=[OpenApiParameter("mechanism", str, description="only this mechanism's credential"), DRY_RUN],
                   summary="Delete a SCRAM user's credentials: every mechanism, or the one named")
    def delete(self, request: Request, cluster: str, user: str) -> Response:
        gateway.cluster_config(cluster)
        mechanism = choice_param(request.query_params, "mechanism", set(users.MECHANISMS))
        return outcome(users.delete_user(request.user, cluster, user, mechanism,
                                         dry_run=bool_param(request.query_params, "dry_run")))
