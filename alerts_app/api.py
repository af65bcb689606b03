"""REST API of alerting: channels (global), a cluster's rules with their preview, its alerts (active
and past) with acknowledgement, and silences. Bodies are checked field by field in alerts_app/rules.py
and alerts_app/channels.py, so the API and the forms refuse with the same sentences."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from alerts_app import services
from alerts_app.models import CHANNEL_KINDS, CONDITIONS, SEVERITIES
from alerts_app.rules import ALERT_STATES, GROUP_STATUSES
from console import gateway
from console.auth import access_for, may, require
from console.errors import BadParameter
from console.params import bool_param, int_param


def body(request: Request) -> Mapping[str, Any]:
    data = request.data
    if not isinstance(data, Mapping):
        raise BadParameter("The request body must be a JSON object.")
    return data


# The schema's description of the bodies (the checks themselves are in rules.py and channels.py, shared with the forms).


class ChannelBody(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField(max_length=100)
    kind = serializers.ChoiceField(choices=list(CHANNEL_KINDS))
    url = serializers.CharField(required=False, help_text="webhook, slack, teams, alertmanager: an http(s) URL")
    to = serializers.ListField(child=serializers.EmailField(), required=False, help_text="email: the addresses")
    secret = serializers.CharField(required=False, help_text="webhook: the HMAC key of the signature header; never shown back")
    max_attempts = serializers.IntegerField(required=False, help_text="attempts before a delivery is a dead letter")
    enabled = serializers.BooleanField(required=False)


class MatcherBody(serializers.Serializer):  # type: ignore[type-arg]
    field = serializers.ChoiceField(choices=["rule", "condition", "key", "severity", "target"])
    value = serializers.CharField()
    regex = serializers.BooleanField(required=False, default=False)


class RuleBody(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField(max_length=200)
    condition = serializers.ChoiceField(choices=list(CONDITIONS))
    target = serializers.CharField(required=False, default="*", help_text="a name, a glob (orders-*), * or re:<regex>")
    threshold = serializers.FloatField(required=False, allow_null=True,
                                       help_text="group_lag, partition_lag, quorum_lag: records; time_lag: seconds")
    status = serializers.ChoiceField(choices=list(GROUP_STATUSES), required=False, help_text="group_status: the least status")
    for_seconds = serializers.IntegerField(required=False, default=0, help_text="how long the condition holds before it fires")
    severity = serializers.ChoiceField(choices=list(SEVERITIES), required=False, default="warning")
    channels = serializers.ListField(child=serializers.CharField(), required=False, help_text="channel names")
    repeat_seconds = serializers.IntegerField(required=False, default=3600, help_text="sent again while firing (0: never)")
    enabled = serializers.BooleanField(required=False, default=True)


class SilenceBody(serializers.Serializer):  # type: ignore[type-arg]
    cluster = serializers.CharField(required=False, default="*", help_text="a cluster, or * for every cluster")
    matchers = MatcherBody(many=True)
    ends_at = serializers.DateTimeField(required=False)
    duration_seconds = serializers.IntegerField(required=False, help_text="instead of ends_at: from now")
    comment = serializers.CharField(help_text="why these alerts are silenced")


# Channels ------------------------------------------------------------------------------------------


def _full(request: Request) -> bool:
    return may(request.user, "alert_channels.manage")


class Channels(APIView):
    actions = {"GET": "alerts.view", "POST": "alert_channels.manage"}

    @extend_schema(responses=OpenApiTypes.OBJECT,
                   summary="Alert channels under `channels` (a secret is never shown: `secret_set` says whether one is)",
                   operation_id="alert_channels_list")
    def get(self, request: Request) -> Response:
        return Response({"channels": [services.channel_dict(c, _full(request)) for c in services.channels()]})

    @extend_schema(request=ChannelBody, responses={201: OpenApiTypes.OBJECT}, summary="Create an alert channel")
    def post(self, request: Request) -> Response:
        return Response(services.channel_dict(services.create_channel(request.user, body(request)), True), status=201)


class ChannelDetail(APIView):
    actions = {"GET": "alerts.view", "PATCH": "alert_channels.manage", "DELETE": "alert_channels.manage"}

    @extend_schema(responses=OpenApiTypes.OBJECT, parameters=[OpenApiParameter("deliveries", int, description="0-200, default 20")],
                   summary="One channel, with its recent deliveries and dead letters")
    def get(self, request: Request, channel: str) -> Response:
        ch = services.channel(channel)
        limit = int_param(request.query_params, "deliveries", 20, minimum=0, maximum=200) or 0
        return Response({**services.channel_dict(ch, _full(request)), "deliveries": services.deliveries(ch, limit=limit),
                         "dead_letters": services.deliveries(ch, "dead", limit=limit)})

    @extend_schema(request=ChannelBody, responses=OpenApiTypes.OBJECT, summary="Change a channel (only the fields sent)")
    def patch(self, request: Request, channel: str) -> Response:
        return Response(services.channel_dict(services.update_channel(request.user, channel, body(request)), True))

    @extend_schema(responses={204: None}, summary="Delete a channel (rules that named it keep their other channels)")
    def delete(self, request: Request, channel: str) -> Response:
        services.delete_channel(request.user, channel)
        return Response(status=204)


class ChannelTest(APIView):
    actions = {"POST": "alert_channels.manage"}

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT, summary="Send a test message through the channel")
    def post(self, request: Request, channel: str) -> Response:
        return Response(services.test_channel(request.user, channel), status=202)


class DeliveryRetry(APIView):
    actions = {"POST": "alert_channels.manage"}

    @extend_schema(request=None, responses={202: OpenApiTypes.OBJECT},
                   summary="Send a dead letter again from its first attempt (a sent delivery is never sent twice)")
    def post(self, request: Request, channel: str, delivery_id: int) -> Response:
        return Response(services.retry_delivery(request.user, channel, delivery_id), status=202)


# Rules ---------------------------------------------------------------------------------------------


class Rules(APIView):
    actions = {"GET": "alerts.view", "POST": "alerts.manage"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="The cluster's alert rules under `rules`",
                   operation_id="alert_rules_list")
    def get(self, request: Request, cluster: str) -> Response:
        gateway.cluster_config(cluster)
        return Response({"rules": [services.rule_dict(r) for r in services.rules_of(cluster)]})

    @extend_schema(request=RuleBody, responses={201: OpenApiTypes.OBJECT}, summary="Create an alert rule")
    def post(self, request: Request, cluster: str) -> Response:
        return Response(services.rule_dict(services.create_rule(request.user, cluster, body(request))), status=201)


class RuleDetail(APIView):
    actions = {"GET": "alerts.view", "PATCH": "alerts.manage", "DELETE": "alerts.manage"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="One alert rule")
    def get(self, request: Request, cluster: str, rule_id: int) -> Response:
        gateway.cluster_config(cluster)
        return Response(services.rule_dict(services.rule(cluster, rule_id)))

    @extend_schema(request=RuleBody, responses=OpenApiTypes.OBJECT, summary="Change an alert rule (only the fields sent)")
    def patch(self, request: Request, cluster: str, rule_id: int) -> Response:
        return Response(services.rule_dict(services.update_rule(request.user, cluster, rule_id, body(request))))

    @extend_schema(responses={204: None}, summary="Delete an alert rule and its alerts' history")
    def delete(self, request: Request, cluster: str, rule_id: int) -> Response:
        services.delete_rule(request.user, cluster, rule_id)
        return Response(status=204)


class RulePreview(APIView):
    actions = {"POST": "alerts.view"}

    @extend_schema(request=RuleBody, responses=OpenApiTypes.OBJECT,
                   summary="What a rule would match on the latest snapshot, under `matches` (its duration not counted)")
    def post(self, request: Request, cluster: str) -> Response:
        return Response(services.preview(cluster, body(request)))


# Alerts --------------------------------------------------------------------------------------------

ALERT_PARAMETERS = [
    OpenApiParameter("state", str, description=f"{', '.join(ALERT_STATES)} (active: pending or firing)"),
    OpenApiParameter("rule", str, description="a rule's name or id"), OpenApiParameter("severity", str),
    OpenApiParameter("key", str, description="the subject contains this (broker:2, group:g1, partition:orders:3)"),
    OpenApiParameter("since", str, description="first seen at or after: ISO time or ms since 1970"),
    OpenApiParameter("until", str, description="first seen at or before"),
    OpenApiParameter("offset", int), OpenApiParameter("limit", int, description="1-1000, default 100")]


class Alerts(APIView):
    actions = {"GET": "alerts.view"}

    @extend_schema(responses=OpenApiTypes.OBJECT, parameters=ALERT_PARAMETERS,
                   summary="Alerts, active and past, newest first, under `alerts` (state pending, firing or resolved)")
    def get(self, request: Request, cluster: str) -> Response:
        offset = int_param(request.query_params, "offset", 0, minimum=0) or 0
        limit = int_param(request.query_params, "limit", 100, minimum=1, maximum=1000) or 100
        return Response(services.listing(cluster, request.query_params, offset, limit))


class Acknowledge(APIView):
    actions = {"POST": "alerts.manage"}

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT, summary="Acknowledge an active alert: someone is on it")
    def post(self, request: Request, cluster: str, alert_id: int) -> Response:
        return Response(services.alert_dict(services.acknowledge(request.user, cluster, alert_id)))


# Silences ------------------------------------------------------------------------------------------


def _silence_clusters(request: Request) -> list[str] | None:
    shown = access_for(request.user).clusters("alerts.view")
    names = [c.name for c in gateway.cluster_configs()]
    return None if all(shown(n) for n in names) and shown("*") else [n for n in names if shown(n)]


class Silences(APIView):
    actions = {"GET": "alerts.view", "POST": "alerts.manage"}

    @extend_schema(responses=OpenApiTypes.OBJECT,
                   parameters=[OpenApiParameter("expired", bool, description="true: ended ones too (default false)")],
                   summary="Silences under `silences`: active and pending ones, or all with expired=true", operation_id="silences_list")
    def get(self, request: Request) -> Response:
        rows = services.silences(_silence_clusters(request), bool_param(request.query_params, "expired"))
        return Response({"silences": [services.silence_dict(s) for s in rows[:1000]]})

    @extend_schema(request=SilenceBody, responses={201: OpenApiTypes.OBJECT},
                   summary="Silence alerts: matchers, an end (ends_at or duration_seconds) and why (comment); by the caller")
    def post(self, request: Request) -> Response:
        data = body(request)
        cluster = data.get("cluster") if isinstance(data.get("cluster"), str) and data.get("cluster") else "*"
        require(request.user, "alerts.manage", cluster)  # ("*": a grant on every cluster)
        return Response(services.silence_dict(services.create_silence(request.user, data)), status=201)


class SilenceDetail(APIView):
    actions = {"GET": "alerts.view", "DELETE": "alerts.manage"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="One silence")
    def get(self, request: Request, silence_id: int) -> Response:
        s = services.silence(silence_id)
        require(request.user, "alerts.view", s.cluster)
        return Response(services.silence_dict(s))

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Expire a silence now (it stays listed, with who ended it)")
    def delete(self, request: Request, silence_id: int) -> Response:
        s = services.expire_silence(request.user, silence_id, lambda c: require(request.user, "alerts.manage", c))
        return Response(services.silence_dict(s))
