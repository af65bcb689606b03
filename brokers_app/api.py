"""REST API of clusters, brokers and events (read from the watcher's snapshot)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from brokers_app import services
from console import gateway, snapshots
from console.api_edge import INT32_MAX, Body, StrictCharField, StrictIntegerField, validated
from console.auth import access_for, may, visible
from console.errors import Forbidden
from console.params import int_param
from console.snapshots import require_snapshot


class ClusterList(APIView):
    actions = {"GET": "console.view"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Configured clusters and their state")
    def get(self, request: Request) -> Response:
        result = []
        shown = access_for(request.user).clusters("cluster.view")
        for config in gateway.cluster_configs():
            live = snapshots.live(config.name)
            if not shown(config.name):
                continue
            result.append({"name": config.name, "bootstrap_servers": config.bootstrap_servers, **live.status})
        return Response({"clusters": result})


class ClusterDetail(APIView):
    actions = {"GET": "cluster.view"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Cluster overview: counts, brokers, KRaft quorum")
    def get(self, request: Request, cluster: str) -> Response:
        live = snapshots.live(cluster)
        return Response({"status": live.status,
                         **services.overview(require_snapshot(live), visible("topic.view", cluster, "topics"))})


class BrokerList(APIView):
    actions = {"GET": "cluster.view"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Brokers with up/down, leaders and replicas")
    def get(self, request: Request, cluster: str) -> Response:
        live = snapshots.live(cluster)
        return Response({"status": live.status, "brokers": require_snapshot(live).broker_rows()})


class BrokerReplicaLag(APIView):
    actions = {"GET": "cluster.view"}

    @extend_schema(
        responses=OpenApiTypes.OBJECT,
        summary="A broker's follower replicas, most bytes behind their leader first (`replicas`: topic, partition, leader, "
                "in_isr, bytes_behind, level, growing_since, not_answering_since, about_to_shrink); `how_measured` says how",
        parameters=[OpenApiParameter("top", int, description="1-1000, default 50")],
    )
    def get(self, request: Request, cluster: str, broker: int) -> Response:
        live = snapshots.live(cluster)
        top = int_param(request.query_params, "top", 50, minimum=1, maximum=1000) or 50
        return Response({"status": live.status, **services.broker_replica_lag(require_snapshot(live), broker, top,
                                                                               visible("topic.view", cluster, "topics"))})


class EventList(APIView):
    actions = {"GET": "cluster.view"}

    @extend_schema(
        responses=OpenApiTypes.OBJECT,
        summary="Events timeline, newest first",
        parameters=[
            OpenApiParameter("kind", str),
            OpenApiParameter("topic", str),
            OpenApiParameter("broker", int),
            OpenApiParameter("before", int, description="only events with a smaller id (paging)"),
            OpenApiParameter("limit", int, description="1-1000, default 100"),
        ],
    )
    def get(self, request: Request, cluster: str) -> Response:
        gateway.cluster_config(cluster)
        filters = services.event_filters(request.query_params)
        before = int_param(request.query_params, "before", minimum=1)
        limit = int_param(request.query_params, "limit", 100, minimum=1, maximum=1000) or 100
        rows = services.events(cluster, before=before, limit=limit, **filters, topics=visible("topic.view", cluster, "topics"),
                               groups=visible("group.view", cluster, "groups"))
        return Response({"events": [e.as_dict() for e in rows], "next_before": rows[-1].id if len(rows) == limit else None})


class PartitionRef(Body):
    topic = StrictCharField(max_length=249)
    partition = StrictIntegerField(min_value=0, max_value=INT32_MAX)


class ElectionBody(Body):
    type = serializers.ChoiceField(choices=["preferred", "unclean"], required=False, default="preferred",
                                   error_messages={"invalid_choice": "must be preferred or unclean."})
    topics = serializers.ListField(child=StrictCharField(max_length=249), required=False, default=list,
                                   help_text="Every partition of these topics.")
    partitions = serializers.ListField(child=PartitionRef(), required=False, default=list,
                                       help_text="These partitions. Nothing named: every partition of the cluster.")
    confirm = StrictCharField(required=False, allow_blank=True, default="", max_length=255,
                              help_text="With type=unclean (admins only): the cluster's name, typed again.")


class LeaderElections(APIView):
    actions = {"POST": "leaders.elect"}  # an unclean election is its own action, checked below

    @extend_schema(request=ElectionBody, responses=OpenApiTypes.OBJECT,
                   summary="Elect leaders: preferred (the first replica leads again) or unclean (admin, confirmed)")
    def post(self, request: Request, cluster: str) -> Response:
        d = validated(ElectionBody, request)
        unclean = d["type"] == "unclean"
        if unclean and not may(request.user, "leaders.elect_unclean", cluster):
            raise Forbidden("An unclean leader election needs the admin role (the leaders.elect_unclean action).")
        snap = snapshots.latest(cluster)
        parts = [(p["topic"], p["partition"]) for p in d["partitions"]]
        return Response(services.elect_leaders(request.user, cluster, snap, unclean, d["topics"], parts, d["confirm"]))


class PlanBody(Body):
    kind = serializers.ChoiceField(choices=["rebalance", "decommission", "add_brokers", "replication_factor", "import"],
                                   error_messages={"invalid_choice": "must be rebalance, decommission, add_brokers, "
                                                                     "replication_factor or import."})
    topics = serializers.ListField(child=StrictCharField(max_length=249), required=False, default=list,
                                   help_text="Only these topics (rebalance, add_brokers, replication_factor).")
    brokers = serializers.ListField(child=StrictIntegerField(min_value=0, max_value=INT32_MAX), required=False, default=list,
                                    help_text="The brokers to retire (decommission) or to fill (add_brokers).")
    replication_factor = StrictIntegerField(required=False, allow_null=True, default=None, min_value=1, max_value=32767,
                                            help_text="With kind=replication_factor: the new factor.")
    plan = serializers.JSONField(required=False, default=None,
                                 help_text='With kind=import: Kafka\'s reassignment JSON {"version": 1, "partitions": [...]}.')
    allow_replication_factor_change = serializers.BooleanField(required=False, default=False,
                                                               help_text="With kind=import: replica lists may change length.")


class Reassignments(APIView):
    actions = {"GET": "reassignments.view", "POST": "partitions.reassign"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Reassignment jobs of the cluster, newest first",
                   parameters=[OpenApiParameter("limit", int, description="1-500, default 50")])
    def get(self, request: Request, cluster: str) -> Response:
        gateway.cluster_config(cluster)
        limit = int_param(request.query_params, "limit", 50, minimum=1, maximum=500) or 50
        return Response({"jobs": [j.summary() for j in services.reassignment_jobs(cluster, limit)]})

    @extend_schema(request=PlanBody, responses=OpenApiTypes.OBJECT,
                   summary="Plan a reassignment with as little data moved as possible, or import Kafka's JSON; the plan "
                           "is stored (state 'planned', nothing changes in Kafka) and answered with its id and Kafka's "
                           "reassignment JSON under 'plan'")
    def post(self, request: Request, cluster: str) -> Response:
        d = validated(PlanBody, request)
        job = services.plan_reassignment(cluster, request.user, d)
        return Response({"id": job.id, "state": job.state, **job.plan}, status=201)


class JobAction(Body):
    action = serializers.ChoiceField(choices=["execute", "cancel"], error_messages={"invalid_choice": "must be execute or cancel."})
    throttle_bytes_per_second = StrictIntegerField(required=False, allow_null=True, default=None, min_value=1024,
                                                   max_value=2**62,
                                                   help_text="With execute: the replication throttle (default from settings).")
    max_moves_per_broker = StrictIntegerField(required=False, allow_null=True, default=None, min_value=1, max_value=1000,
                                              help_text="With execute: concurrent movements per broker (default 5).")


class ReassignmentDetail(APIView):
    actions = {"GET": "reassignments.view", "POST": "partitions.reassign"}

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="A job: its plan, progress, verification, and `catch_up`: each "
                                                          "replica being added with its bytes behind the leader")
    def get(self, request: Request, cluster: str, job_id: int) -> Response:
        gateway.cluster_config(cluster)
        job = services.reassignment_job(cluster, job_id)
        return Response({**job.as_dict(), "catch_up": services.catch_up(cluster, job)})

    @extend_schema(request=JobAction, responses=OpenApiTypes.OBJECT,
                   summary="Execute a planned job (in the background, throttled) or cancel one (moves go back)")
    def post(self, request: Request, cluster: str, job_id: int) -> Response:
        gateway.cluster_config(cluster)
        d = validated(JobAction, request)
        job = services.reassignment_job(cluster, job_id)
        if d["action"] == "execute":
            job = services.execute_reassignment(request.user, job, d["throttle_bytes_per_second"], d["max_moves_per_broker"])
        else:
            job = services.cancel_reassignment(request.user, job)
        return Response(job.as_dict(), status=202 if job.active else 200)
