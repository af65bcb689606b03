"""Use cases of brokers_app: the cluster overview and the events timeline (read from the snapshot),
and the changes (leader elections, reassignment jobs), each validated, carried out and audited here
once, so a page and the API record the same entry. Views and the API only parse input and render."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from brokers_app import elections
from brokers_app.models import Event, ReassignmentJob
from brokers_app.placement.model import PlanError, PlanRequest, brokers_text, layout_from_snapshot
from brokers_app.placement.planner import plan as placement_plan
from brokers_app.placement.result import plan_from_reassignment
from brokers_app.reassignment_moves import MOVING, PENDING, moves_of
from console import snapshots
from console.access import event_visible
from console.audit import audited
from console.errors import BadParameter, Conflict
from console.gateway.errors import NotFound
from console.gateway.types import TopicPartition
from console.params import choice_param, int_param, topic_param
from console.snapshots import Snapshot, TopicTally, replica_lag, tallied
from console.watcher.diff import KINDS

log = logging.getLogger(__name__)


def broker_replica_lag(snap: Snapshot, broker: int, top: int, visible: Callable[[str], bool] | None = None) -> dict[str, Any]:
    """A broker's follower replicas, most bytes behind their leader first (at most `top`), and
    since when it has not answered the watcher's read of its log dirs, if it does not."""
    state = snap.brokers.get(broker)
    if state is None:
        raise NotFound(f"Broker {broker} is not part of cluster '{snap.cluster}'; brokers: {sorted(snap.brokers)}.")
    silent = replica_lag.silent_brokers(snap.cluster)
    rows = replica_lag.broker_lags(snap, broker, replica_lag.streaks(snap.cluster), silent, top, visible)
    return {"broker": broker, "up": state.up, "reachable": state.reachable, "not_answering_since": silent.get(broker),
            "about_to_shrink": sum(r["about_to_shrink"] for r in rows), "replicas": rows, "top": top,
            "how_measured": replica_lag.HOW_MEASURED, "shrink_share": settings.REPLICA_LAG_SHRINK_SHARE,
            "shrink_after_seconds": round(settings.REPLICA_LAG_SHRINK_SHARE * settings.REPLICA_LAG_TIME_MAX_MS / 1000, 1)}


def catch_up(cluster: str, job: ReassignmentJob) -> list[dict[str, Any]]:
    """Each replica a running job is adding, with its bytes behind its partition's leader as the
    snapshot last saw them (shrinking to 0 as it catches up; None before its broker reports it)."""
    snap = snapshots.latest(cluster)
    if snap is None:
        return []
    rows = []
    for move, state in zip(moves_of(job.plan), job.moves or [], strict=False):
        p = snap.partition(move.topic, move.partition) if state == MOVING else None
        if p is None:
            continue
        lags = replica_lag.replica_lags(p)
        rows += [{"topic": move.topic, "partition": move.partition, "broker": b, "leader": p.leader,
                  "bytes_behind": lags.get(b), "size": p.replica_sizes.get(str(b)), "in_isr": b in p.isr}
                 for b in move.added]
    return rows


def overview(snap: Snapshot, visible: Callable[[str], bool] | None = None) -> dict[str, Any]:
    """The cluster's counts and broker rows; `visible`: the topics the user may see, which alone are
    counted (a scoped user's overview counts their partitions, not the cluster's)."""
    made, total = tallied(snap)
    if visible is not None:
        total = TopicTally.total(tally for name, (_, tally) in made.items() if visible(name))
    counts = snap.counts(total)
    if visible is not None:
        counts["topics"] = sum(1 for name in made if visible(name))
    quorum = snap.quorum
    return {
        "cluster_id": snap.cluster_id,
        "controller_id": snap.controller_id,
        "counts": counts,
        "brokers": snap.broker_rows(total),
        "quorum": None
        if quorum is None
        else {
            "leader_id": quorum.leader_id,
            "leader_epoch": quorum.leader_epoch,
            "high_watermark": quorum.high_watermark,
            "voters": [vars(m) for m in quorum.voters],
            "observers": [vars(m) for m in quorum.observers],
        },
        "quorum_error": snap.quorum_error,
    }


def events(cluster: str, *, kind: str | None = None, topic: str | None = None, broker: int | None = None,
           before: int | None = None, limit: int = 100, topics: Callable[[str], bool] | None = None,
           groups: Callable[[str], bool] | None = None) -> list[Event]:
    """The newest events (before an id), filtered; `topics` and `groups`: the names the user may see."""
    if topics is not None or groups is not None:
        found: list[Event] = []
        for _ in range(50):  # batches until a page of visible events (or 50 batches: a hidden flood ends the page)
            batch = events(cluster, kind=kind, topic=topic, broker=broker, before=before, limit=max(limit, 200))
            found += [e for e in batch if event_visible({"topic": e.topic, "details": e.details}, topics, groups)]
            if len(found) >= limit or len(batch) < max(limit, 200):
                break
            before = batch[-1].id
        return found[:limit]
    qs: QuerySet[Event] = Event.objects.filter(cluster=cluster)
    if kind:
        qs = qs.filter(kind=kind)
    if topic:
        qs = qs.filter(topic=topic)
    if broker is not None:
        qs = qs.filter(broker=broker)
    if before is not None:
        qs = qs.filter(id__lt=before)
    return list(qs.order_by("-id")[:limit])


def event_matches(event: dict[str, Any], kind: str | None, topic: str | None, broker: int | None) -> bool:
    return (not kind or event["kind"] == kind) and (not topic or event["topic"] == topic) and (
        broker is None or event["broker"] == broker
    )


def event_filters(params: Mapping[str, str]) -> dict[str, Any]:
    """The timeline's filters from query parameters, each checked (a bad one is a 400 naming it)."""
    return {
        "kind": choice_param(params, "kind", KINDS),
        "topic": topic_param(params, "topic"),
        "broker": int_param(params, "broker", minimum=0),
    }


# Leader elections ---------------------------------------------------------------------------------


def elect_leaders(user: Any, cluster: str, snap: Snapshot, unclean: bool, topics: list[str],
                  partitions: list[TopicPartition], confirm: str = "") -> dict[str, Any]:
    """Run an election (brokers_app/elections.py) and audit it, refusals included."""
    with audited(user, "elect_leaders", cluster=cluster, target="unclean" if unclean else "preferred",
                 details={"topics": list(topics), "partitions": [f"{t}-{p}" for t, p in partitions]}) as entry:
        result = elections.elect(cluster, snap, unclean, topics, partitions, confirm)
        entry.update({k: result[k] for k in ("elected", "not_needed", "failed")})
    return result


# Reassignment jobs --------------------------------------------------------------------------------


def make_plan(cluster: str, d: Mapping[str, Any]) -> dict[str, Any]:
    """The plan for a request (kind, topics, brokers, replication_factor; or an imported plan), from
    the watcher's snapshot; refusals as 400. Planning changes nothing in Kafka, so it is not audited."""
    snap = snapshots.latest(cluster)
    layout = layout_from_snapshot(snap)
    try:
        if d["kind"] == "import":
            if d.get("plan") is None:
                raise BadParameter("An import needs 'plan': Kafka's reassignment JSON.")
            result = plan_from_reassignment(layout, d["plan"], allow_rf_change=d.get("allow_replication_factor_change", False))
        else:
            result = placement_plan(layout, PlanRequest.from_dict(d))
    except PlanError as exc:
        raise BadParameter(str(exc)) from None
    down = sorted(b.id for b in snap.brokers.values() if not b.up)
    live = len(snap.brokers) - len(down)
    if d["kind"] == "replication_factor" and d.get("replication_factor") and d["replication_factor"] > live:
        raise BadParameter(f"Replication factor {d['replication_factor']} is more than the {live} live brokers "
                           f"({brokers_text(down)} {'is' if len(down) == 1 else 'are'} down).")
    for change in result.changes:
        onto_down = sorted(set(change.added) & set(down))
        if onto_down:
            raise BadParameter(f"The plan puts a replica of {change.topic}-{change.partition} on {brokers_text(onto_down)}, "
                               "which is down: bring it back first, or decommission it.")
    return result.to_dict()


def plan_reassignment(cluster: str, user: Any, d: Mapping[str, Any]) -> ReassignmentJob:
    """A new job in state 'planned' holding the plan for the request (nothing changes in Kafka)."""
    plan = make_plan(cluster, d)
    return ReassignmentJob.objects.create(cluster=cluster, created_by=getattr(user, "username", "") or "",
                                          kind=plan["request"]["kind"], plan=plan)


def reassignment_jobs(cluster: str, limit: int) -> list[ReassignmentJob]:
    """The cluster's jobs, newest first."""
    return list(ReassignmentJob.objects.filter(cluster=cluster)[:limit])


def reassignment_job(cluster: str, job_id: int) -> ReassignmentJob:
    job = ReassignmentJob.objects.filter(cluster=cluster, id=job_id).first() if 0 < job_id < 2**63 else None
    if job is None:
        raise NotFound(f"There is no reassignment job {job_id} on cluster '{cluster}'.")
    return job


def _job_details(job: ReassignmentJob) -> dict[str, Any]:
    return {"job": job.id, "request": job.plan.get("request"), "totals": job.plan.get("totals")}


def execute_reassignment(user: Any, job: ReassignmentJob, throttle: int | None, max_moves: int | None) -> ReassignmentJob:
    """Queue a planned job for a worker, one active job per cluster; `throttle` in bytes per second
    (None: settings). The audit entry holds the plan itself, so the log shows what was moved."""
    details = _job_details(job) | {"plan": job.plan.get("plan"), "throttle": throttle, "max_moves_per_broker": max_moves}
    with audited(user, "reassignment_execute", cluster=job.cluster, target=f"job {job.id}", details=details):
        if job.state != ReassignmentJob.PLANNED:
            raise Conflict(f"Job {job.id} is {job.state}; only a planned job can be executed (plan again to run it again).")
        if not job.plan.get("partitions"):
            raise BadParameter(f"Job {job.id} moves nothing: the cluster already matches the plan.")
        running = ReassignmentJob.objects.filter(cluster=job.cluster, active=True).exclude(id=job.id).first()
        if running is not None:
            raise Conflict(f"Job {running.id} is {running.state} on cluster '{job.cluster}'; one job runs at a time.")
        job.throttle = throttle or settings.REASSIGNMENT_THROTTLE
        job.max_moves = max_moves or settings.REASSIGNMENT_MAX_MOVES_PER_BROKER
        job.state, job.active = ReassignmentJob.QUEUED, True
        job.executed_by = getattr(user, "username", "") or ""
        job.moves = [PENDING] * len(job.plan["partitions"])
        job.progress = {"partitions_done": 0, "partitions_total": len(job.moves), "bytes_copied": 0,
                        "bytes_total": sum(m.bytes for m in moves_of(job.plan)), "rate": None, "eta_seconds": None}
        try:
            with transaction.atomic():
                job.save()
        except IntegrityError:
            running = ReassignmentJob.objects.filter(cluster=job.cluster, active=True).first()
            raise Conflict(f"Job {running.id if running else '?'} is running on cluster '{job.cluster}'; "
                           "one job runs at a time.") from None
        dispatch(job.id)
    return job


def cancel_reassignment(user: Any, job: ReassignmentJob) -> ReassignmentJob:
    """Discard a planned job, or ask the worker to stop a queued or running one (moves go back)."""
    with audited(user, "reassignment_cancel", cluster=job.cluster, target=f"job {job.id}", details=_job_details(job)):
        if job.state == ReassignmentJob.PLANNED:
            job.state, job.finished_at = ReassignmentJob.CANCELLED, timezone.now()
            job.save(update_fields=["state", "finished_at"])
            return job
        if job.state not in (ReassignmentJob.QUEUED, ReassignmentJob.RUNNING):
            raise Conflict(f"Job {job.id} is {job.state}; there is nothing to cancel.")
        updated = ReassignmentJob.objects.filter(
            id=job.id, state__in=[ReassignmentJob.QUEUED, ReassignmentJob.RUNNING]).update(state=ReassignmentJob.CANCELLING)
        if not updated:
            job.refresh_from_db()
            raise Conflict(f"Job {job.id} is {job.state}; there is nothing to cancel.")
        job.refresh_from_db()
        dispatch(job.id)
    return job


def dispatch(job_id: int) -> None:
    """Queue the job's task by its name (services never import tasks, which import them); when the
    Celery broker is down the watchdog queues it later."""
    from console.celery import app

    try:
        app.send_task("brokers_app.tasks.run_reassignment", args=(job_id,))
    except Exception:  # noqa: BLE001 - the job stays queued; the watchdog dispatches it again
        log.warning("could not hand reassignment job %s to a worker now; the watchdog will", job_id, exc_info=True)
