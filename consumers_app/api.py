"""REST API of consumer groups: list, detail, a streams group's topology and tasks, offset reset (with dry_run),
rebalances, delete."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console.api_edge import INT32_MAX, INT64_MAX, Body, StrictBooleanField, StrictCharField, StrictIntegerField, validated
from console.auth import visible
from console.errors import BadParameter
from console.params import bool_param, int_param, timestamp_ms
from console.snapshots import latest, live
from console.tokens import MetricsTokenMixin
from consumers_app import group_history, group_rows, services, streams


@extend_schema_field({"oneOf": [{"type": "string", "description": "ISO date and time (UTC unless it says)"},
                                {"type": "integer", "minimum": 0, "description": "milliseconds since 1970"}]})
class TimestampField(serializers.Field):  # type: ignore[type-arg]
    default_error_messages = {"invalid": "must be milliseconds since 1970 or an ISO date and time."}

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, (str, int)) or (isinstance(data, int) and not 0 <= data <= 2**53):
            self.fail("invalid")
        return timestamp_ms(str(data))

    def to_representation(self, value: Any) -> Any:
        return value


class ResetBody(Body):
    to = serializers.ChoiceField(choices=sorted(services.RESET_TO),
                                 error_messages={"invalid_choice": f"must be one of {', '.join(sorted(services.RESET_TO))}."})
    topics = serializers.ListField(child=StrictCharField(max_length=249), required=False, default=list,
                                   help_text="Only these topics (default: every topic the group has offsets for; for a streams "
                                             "group, its topology's input topics).")
    partitions = serializers.DictField(child=serializers.ListField(child=StrictIntegerField(min_value=0, max_value=INT32_MAX)),
                                       required=False, default=dict, help_text="Topic -> only these partitions.")
    timestamp = TimestampField(required=False, allow_null=True, default=None, help_text="With to=timestamp.")
    offset = StrictIntegerField(required=False, allow_null=True, default=None, min_value=0, max_value=INT64_MAX,
                                help_text="With to=offset.")
    shift = StrictIntegerField(required=False, allow_null=True, default=None, min_value=-INT64_MAX, max_value=INT64_MAX,
                               help_text="With to=shift: added to the committed offset.")
    from_group = StrictCharField(required=False, allow_null=True, default=None, max_length=255, help_text="With to=group.")
    dry_run = StrictBooleanField(required=False, default=False)
    confirm = StrictCharField(required=False, allow_blank=True, default="", max_length=255,
                              help_text="The group's id typed again: required to apply (not for dry_run).")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Each target names what it needs, before anything is asked of Kafka."""
        needs = {"timestamp": "timestamp", "offset": "offset", "shift": "shift", "group": "from_group"}.get(attrs["to"])
        if needs and attrs.get(needs) in (None, ""):
            raise serializers.ValidationError({needs: [f"is required with to={attrs['to']}."]})
        return attrs

    @staticmethod
    def spec(d: dict[str, Any]) -> services.ResetSpec:
        return services.ResetSpec(to=d["to"], topics=d["topics"], partitions=d["partitions"], timestamp_ms=d["timestamp"],
                                  offset=d["offset"], shift=d["shift"], from_group=d["from_group"] or None)


class GroupDeleteBody(Body):
    confirm = StrictCharField(required=False, allow_blank=True, default="", max_length=255,
                              help_text="The group's id typed again (or ?confirm=); without it nothing is deleted.")


class StreamsGroupDeleteBody(GroupDeleteBody):
    internal_topics = StrictBooleanField(required=False, default=False,
                                         help_text="A streams group's repartition and changelog topics too (admin), as "
                                                   "kafka-streams-groups --delete-all-internal-topics.")


CONFIRM_PARAM = OpenApiParameter("confirm", str, description="The group's id typed again (or 'confirm' in a JSON body).")


def confirmation(request: Request) -> str:
    """The group's id typed again: the JSON body's `confirm`, else the `confirm` query parameter."""
    return str(validated(GroupDeleteBody, request)["confirm"] or request.query_params.get("confirm", ""))


class GroupList(APIView):
    actions = {"GET": "group.view"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Consumer groups with state, members, lag (from the snapshot)",
                   parameters=[OpenApiParameter("q", str), OpenApiParameter("regex", bool),
                               OpenApiParameter("state", str, enum=group_rows.STATES), OpenApiParameter("type", str, enum=group_rows.KINDS), OpenApiParameter("ordering", str),
                               OpenApiParameter("page", int), OpenApiParameter("page_size", int)])
    def get(self, request: Request, cluster: str) -> Response:
        snap = latest(cluster)
        p = request.query_params
        ordering = p.get("ordering", "group") or "group"
        page = group_rows.groups_page(snap, query=p.get("q", ""), regex=bool_param(p, "regex"), sort=ordering.lstrip("-"),
                                    descending=ordering.startswith("-"), page=int_param(p, "page", 1, minimum=1) or 1,
                                    per_page=int_param(p, "page_size", 50, minimum=1, maximum=1000) or 50,
                                    **group_rows.filter_params(p), visible=visible("group.view", cluster, "groups"))
        return Response({"count": page.total, "page": page.page, "pages": page.pages, "results": page.rows})


class GroupDetail(APIView):
    actions = {"GET": "group.view", "DELETE": "group.delete"}

    body_on_delete = True  # the DELETE's JSON body (its confirmation) is in the schema

    @extend_schema(responses=OpenApiTypes.OBJECT,
                   summary="A group: partitions (committed, last stable offset, end, lag, readable lag up to the LSO, "
                           "the transaction blocking it, owner), `blocked_by`, members, and `as_of`: when the sample they come from began "
                           "(epoch seconds)")
    def get(self, request: Request, cluster: str, group: str) -> Response:
        return Response(group_rows.group_detail(latest(cluster), group))

    @extend_schema(request=StreamsGroupDeleteBody, responses=OpenApiTypes.OBJECT, parameters=[CONFIRM_PARAM],
                   summary="Delete a group (it must be empty); its id typed again as confirm; a streams group's internal "
                           "topics too with internal_topics")
    def delete(self, request: Request, cluster: str, group: str) -> Response:
        body = validated(StreamsGroupDeleteBody, request)
        confirm = str(body["confirm"] or request.query_params.get("confirm", ""))
        topics = services.delete_group(request.user, cluster, latest(cluster), group, confirm, internal_topics=body["internal_topics"])
        return Response({"deleted": group, "deleted_topics": topics})


class GroupStreams(APIView):
    actions = {"GET": "group.view"}

    @extend_schema(responses=OpenApiTypes.OBJECT,
                   summary="A streams group (KIP-1071): state, group, assignment and topology epochs, members with their "
                           "active/standby/warm-up tasks, subtopologies with their source, repartition and changelog topics, "
                           "and the lag of each subtopology's inputs. Reset and delete it as any group (it must be empty).")
    def get(self, request: Request, cluster: str, group: str) -> Response:
        return Response(streams.describe(cluster, latest(cluster), group))


class GroupOffsets(APIView):
    actions = {"POST": "group.reset_offsets", "DELETE": "group.reset_offsets"}

    body_on_delete = True  # the DELETE's JSON body (its confirmation) is in the schema

    @extend_schema(
        request=ResetBody, responses=OpenApiResponse(OpenApiTypes.OBJECT, description="{dry_run, offsets: [rows]}"),
        summary="Reset offsets (the group must be empty; its id typed again as confirm); dry_run previews the new offsets",
    )
    def post(self, request: Request, cluster: str, group: str) -> Response:
        d = validated(ResetBody, request)
        spec, dry_run = ResetBody.spec(d), d["dry_run"]
        snap = latest(cluster)
        if dry_run:
            plan = services.preview_reset(request.user, cluster, snap, group, spec)
        else:
            plan = services.reset_offsets(request.user, cluster, snap, group, spec, d["confirm"])
        return Response({"dry_run": dry_run, "offsets": plan})

    @extend_schema(request=GroupDeleteBody, responses=OpenApiTypes.OBJECT,
                   summary="Delete the group's committed offsets on one topic; the group's id typed again as confirm",
                   parameters=[OpenApiParameter("topic", str, required=True), CONFIRM_PARAM])
    def delete(self, request: Request, cluster: str, group: str) -> Response:
        topic = request.query_params.get("topic", "")
        if not topic:
            raise BadParameter("Give the 'topic' whose offsets to delete.")
        confirm = confirmation(request)
        n = services.delete_group_offsets(request.user, cluster, latest(cluster), group, topic, confirm)
        return Response({"deleted_partitions": n})


class MostRebalancing(APIView):
    actions = {"GET": "group.view"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Groups that rebalanced most often in the last ?hours= (24)")
    def get(self, request: Request, cluster: str) -> Response:
        from console import gateway as gw

        gw.cluster_config(cluster)
        hours = int_param(request.query_params, "hours", 24, minimum=1, maximum=24 * 30) or 24
        rows = group_history.most_rebalancing(cluster, hours=hours, limit=50, visible=visible("group.view", cluster, "groups"))
        return Response({"groups": [{**r, "last": r["last"].isoformat() if r["last"] else None} for r in rows]})


class GroupRebalances(APIView):
    actions = {"GET": "group.view"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Rebalance history of a group, newest first")
    def get(self, request: Request, cluster: str, group: str) -> Response:
        snap = latest(cluster)
        group_rows.group(snap, group)
        from consumers_app.models import Rebalance

        rows = Rebalance.objects.filter(cluster=cluster, group=group).order_by("-started_at")[:500]
        return Response({"rebalances": [r.as_dict() for r in rows]})


class Metrics(MetricsTokenMixin, APIView):
    """`GET /metrics`: Prometheus text format; needs a login (session or `Authorization: Token <key>`)
    or the metrics-only secret (`Authorization: Bearer <CONSOLE_METRICS_TOKEN>`)."""

    actions = {"GET": "metrics.view"}

    @extend_schema(responses=OpenApiTypes.STR, summary="Prometheus metrics: lag, time lag, status per group/partition")
    def get(self, request: Request) -> HttpResponse:
        from console import gateway
        from consumers_app.metrics import exposition

        snapshots = [s for s in (live(c.name).snapshot for c in gateway.cluster_configs()) if s is not None]
        return HttpResponse("".join(exposition(snapshots)), content_type="text/plain; version=0.0.4; charset=utf-8")
