"""The worker's side of a reassignment job: `Runner` carries a stored plan out in batches, under a
throttle, and `verify` checks the result.

A runner holds a lease on its job (renewed every step); when the worker dies the lease runs out,
the watchdog (Celery beat) hands the job to another worker, and that runner carries on from the
database and Kafka's list of ongoing reassignments. Throttles are removed at the end, on cancel and
on failure; the throttles a job set are recorded before they are set, so a successor removes them too.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.db.models import Q
from django.utils import timezone

from brokers_app.models import ReassignmentJob
from brokers_app.reassignment_moves import (
    BROKER_RATE_KEYS,
    DONE,
    MOVING,
    PENDING,
    REVERTED,
    REVERTING,
    SKIPPED,
    THROTTLE_KEYS,
    TOPIC_REPLICA_KEYS,
    Move,
    baseline_key,
    moves_of,
    next_batch,
    rate_and_eta,
    refusal,
    sized,
    throttle_configs,
)
from console import gateway, snapshots
from console.gateway.errors import GatewayError, NotFound

log = logging.getLogger(__name__)

LEASE_SECONDS = 15.0
STEP_SECONDS = 1.0
ISR_WAIT_SECONDS = 60.0
STRAY_SECONDS = 15.0  # a partition neither moving nor at its target for this long was changed by someone else


def orphans() -> list[int]:
    """Active jobs no worker holds (never picked up, or their worker died)."""
    now = timezone.now()
    return list(ReassignmentJob.objects.filter(active=True).filter(
        lease_expired(now)).values_list("id", flat=True))


def lease_expired(now: Any) -> Q:
    """Jobs whose lease is free: never taken, or not renewed in time (their worker died)."""
    return Q(lease_until__isnull=True) | Q(lease_until__lt=now)


def notify(cluster: str, job_id: int) -> None:
    """Tell open job pages to redraw their progress (best effort: the page also reads it on load)."""
    from console.realtime import cluster_group, group_send

    try:
        group_send(cluster_group(cluster), {"type": "reassignment.progress", "job": job_id})
    except Exception:  # noqa: BLE001 - Redis down: the page shows the state on its next load
        log.debug("could not push reassignment progress", exc_info=True)


class LeaseLost(Exception):
    pass


class Runner:
    """Carries one job to its end: completed (and verified), cancelled or failed."""

    def __init__(self, job_id: int, sleep: Callable[[float], None] = time.sleep) -> None:
        self.job_id = job_id
        self.owner = uuid.uuid4().hex
        self.sleep = sleep
        self.stray_since: dict[int, float] = {}
        self.samples: list[tuple[float, int]] = []

    # lease
    def acquire(self) -> bool:
        now = timezone.now()
        return bool(ReassignmentJob.objects.filter(id=self.job_id, active=True).filter(
            lease_expired(now) | Q(lease_owner=self.owner)
        ).update(lease_owner=self.owner, lease_until=now + timedelta(seconds=LEASE_SECONDS)))

    def renew(self) -> None:
        now = timezone.now()
        if not ReassignmentJob.objects.filter(id=self.job_id, lease_owner=self.owner).update(
                lease_until=now + timedelta(seconds=LEASE_SECONDS)):
            raise LeaseLost()

    def wait(self, seconds: float) -> None:
        """Sleep while keeping the lease (verification may wait a minute for ISRs)."""
        self.renew()
        self.sleep(seconds)

    def release(self) -> None:
        ReassignmentJob.objects.filter(id=self.job_id, lease_owner=self.owner).update(lease_owner="", lease_until=None)

    def run(self) -> str:
        if not self.acquire():
            return "held elsewhere or finished"
        try:
            while True:
                self.renew()
                job = ReassignmentJob.objects.get(id=self.job_id)
                if not job.active:
                    return job.state
                try:
                    finished = self.step(job)
                except GatewayError as exc:
                    job.progress = {**job.progress, "last_error": exc.message, "last_error_at": time.time()}
                    job.save(update_fields=["progress"])
                    notify(job.cluster, job.id)
                    self.sleep(2 * STEP_SECONDS)
                    continue
                notify(job.cluster, job.id)
                if finished:
                    return job.state
                self.sleep(STEP_SECONDS)
        except LeaseLost:
            return "lease lost"
        finally:
            self.release()

    # one step
    def step(self, job: ReassignmentJob) -> bool:
        gw = gateway.for_cluster(job.cluster)
        moves = moves_of(job.plan)
        if job.state == ReassignmentJob.QUEUED:
            self.start(job, gw, moves)
        moves = [sized(m, job.baseline) for m in moves]
        ongoing = gw.ongoing_reassignments()
        current = gw.describe_partitions({m.topic for m in moves})
        if job.state == ReassignmentJob.CANCELLING:
            return self.step_cancel(job, gw, moves, ongoing, current)
        return self.step_run(job, gw, moves, ongoing, current)

    def start(self, job: ReassignmentJob, gw: Any, moves: list[Move]) -> None:
        """Offsets before the first move (for the data check), then the throttles, then running."""
        keys = [m.key for m in moves]
        if not job.baseline:
            ends = gw.list_offsets(keys, "latest")
            starts = gw.list_offsets(keys, "earliest")
            # Sizes now, from the log dirs of the current replicas: the plan's may be older than the data.
            on = gw.log_dir_sizes(sorted({b for m in moves for b in m.before}))
            job.baseline = {baseline_key(t, p): [starts.get((t, p)), ends.get((t, p)), max(on.get((t, p), {}).values(), default=None)]
                            for t, p in keys}
        broker_cfg, topic_cfg = throttle_configs(moves, job.throttle)
        # Recorded first: whoever finishes the job removes exactly these, even if this worker dies now.
        job.throttles = {"brokers": sorted(broker_cfg), "topics": sorted(topic_cfg), "rate": job.throttle}
        job.save(update_fields=["baseline", "throttles"])
        for broker, cfg in broker_cfg.items():
            gw.alter_configs("broker", str(broker), cfg, [])
        for topic, cfg in topic_cfg.items():
            with contextlib.suppress(NotFound):  # deleted since the plan: its moves fail below with a sentence
                gw.alter_configs("topic", topic, cfg, [])
        job.state, job.started_at = ReassignmentJob.RUNNING, job.started_at or timezone.now()
        job.save(update_fields=["state", "started_at"])

    def step_run(self, job: ReassignmentJob, gw: Any, moves: list[Move], ongoing: dict, current: dict) -> bool:
        states = list(job.moves)
        now = time.monotonic()
        for i, m in enumerate(moves):
            part = current.get(m.key)
            if part is None:
                return self.fail(job, gw, f"Partition {m.topic}-{m.partition} no longer exists (topic deleted?).")
            if states[i] == MOVING or states[i] == PENDING:
                if m.key not in ongoing and part.replicas == m.after:
                    states[i] = DONE
                    self.stray_since.pop(i, None)
                elif states[i] == PENDING and m.key in ongoing and _target(ongoing[m.key]) == set(m.after):
                    states[i] = MOVING  # submitted by a worker that died before it could write so
                elif states[i] == MOVING and m.key not in ongoing:
                    since = self.stray_since.setdefault(i, now)
                    if now - since > STRAY_SECONDS:
                        return self.fail(job, gw, f"Partition {m.topic}-{m.partition} stopped moving without reaching its "
                                                  f"planned replicas {list(m.after)}: someone changed it outside this job.")
        for i in next_batch(moves, states, job.max_moves):
            if moves[i].key in ongoing:
                continue  # somebody else's reassignment of this partition: wait for it to end
            states[i] = MOVING
        started = [i for i, s in enumerate(states) if s == MOVING and job.moves[i] == PENDING and moves[i].key not in ongoing]
        if started:
            job.moves = states
            job.save(update_fields=["moves"])  # before asking Kafka: a successor then looks for them as moving
            why = refusal(gw.alter_reassignments({moves[i].key: list(moves[i].after) for i in started}))
            if why:
                return self.fail(job, gw, f"Kafka refused to move partition {why}.")
        job.moves = states
        self.update_progress(job, gw, moves, states)
        if all(s == DONE for s in states):
            self.remove_throttles(job, gw)
            job.verification = verify(job, gw, moves, sleep=self.wait)
            self.finish(job, ReassignmentJob.COMPLETED)
            return True
        job.save(update_fields=["moves", "progress"])
        return False

    def step_cancel(self, job: ReassignmentJob, gw: Any, moves: list[Move], ongoing: dict, current: dict) -> bool:
        states = list(job.moves)
        in_flight = [i for i, s in enumerate(states) if s == MOVING and moves[i].key in ongoing]
        if in_flight:
            gw.alter_reassignments({moves[i].key: None for i in in_flight})  # Kafka puts the original replicas back
        for i, m in enumerate(moves):
            part = current.get(m.key)
            if states[i] == PENDING:
                states[i] = SKIPPED
            elif states[i] == MOVING:
                # In flight: cancelled above. Finished meanwhile: copied back below like any done move.
                states[i] = DONE if m.key not in ongoing and part is not None and part.replicas == m.after else REVERTING
            elif part is not None and states[i] == REVERTING and m.key not in ongoing:
                if set(part.replicas) == set(m.before):
                    states[i] = REVERTED  # (another order than before only changes the preferred leader)
                elif set(part.replicas) == set(m.after):
                    states[i] = DONE  # its copy back was recorded but never reached Kafka (worker died): again
        # Moves that had completed are copied back, under the same limits.
        back = [i for i in next_batch(moves, states, job.max_moves, startable=DONE) if moves[i].key not in ongoing]
        if back:
            for i in back:
                states[i] = REVERTING
            job.moves = states
            job.save(update_fields=["moves"])
            why = refusal(gw.alter_reassignments({moves[i].key: list(moves[i].before) for i in back}))
            if why:
                return self.fail(job, gw, f"Kafka refused to move partition {why} back.")
        job.moves = states
        self.update_progress(job, gw, moves, states)
        if all(s in (REVERTED, SKIPPED) for s in states):
            self.remove_throttles(job, gw)
            job.verification = verify(job, gw, moves, target="before", sleep=self.wait)
            self.finish(job, ReassignmentJob.CANCELLED)
            return True
        job.save(update_fields=["moves", "progress"])
        return False

    def update_progress(self, job: ReassignmentJob, gw: Any, moves: list[Move], states: list[str]) -> None:
        copying = {b for m, s in zip(moves, states, strict=True) if s in (MOVING, REVERTING) for b in m.added}
        sizes = gw.log_dir_sizes(sorted(copying)) if copying else {}
        copied = 0
        for m, s in zip(moves, states, strict=True):
            if s == DONE:
                copied += m.bytes
            elif s == MOVING:
                on = sizes.get(m.key, {})
                copied += sum(min(on.get(b, 0), m.size) for b in m.added)
        total = sum(m.bytes for m in moves)
        self.samples = [*self.samples, (time.time(), copied)][-10:]
        rate, eta = rate_and_eta(self.samples, total - copied)
        job.progress = {
            "partitions_done": sum(1 for s in states if s == DONE),
            "partitions_moving": sum(1 for s in states if s in (MOVING, REVERTING)),
            "partitions_reverted": sum(1 for s in states if s in (REVERTED, SKIPPED)),
            "partitions_total": len(states),
            "bytes_copied": copied,
            "bytes_total": total,
            "rate": rate,
            "eta_seconds": eta,
            "updated_at": time.time(),
        }

    def remove_throttles(self, job: ReassignmentJob, gw: Any) -> None:
        remove_throttles(gw, job.throttles)
        job.throttles = {**job.throttles, "removed": True}
        job.save(update_fields=["throttles"])

    def fail(self, job: ReassignmentJob, gw: Any, why: str) -> bool:
        """Stop: cancel what is in flight (Kafka returns those partitions to their replicas), keep what
        completed (each is a valid layout), remove the throttles, and say why."""
        with contextlib.suppress(GatewayError):
            ongoing = gw.ongoing_reassignments()
            mine = [m.key for m, s in zip(moves_of(job.plan), job.moves, strict=True) if s in (MOVING, REVERTING) and m.key in ongoing]
            if mine:
                gw.alter_reassignments(dict.fromkeys(mine))
        self.remove_throttles(job, gw)
        job.error = why
        self.finish(job, ReassignmentJob.FAILED)
        return True

    def finish(self, job: ReassignmentJob, state: str) -> None:
        from console.audit import record

        job.state, job.active, job.finished_at = state, False, timezone.now()
        job.save()
        if state in (ReassignmentJob.COMPLETED, ReassignmentJob.CANCELLED) and (job.verification or {}).get("ok"):
            note_replicas(job, target="after" if state == ReassignmentJob.COMPLETED else "before")
        record(None, "reassignment_" + state, cluster=job.cluster, target=f"job {job.id}",
               details={"job": job.id, "progress": job.progress, "verification": job.verification, "error": job.error or None},
               outcome="ok" if state != ReassignmentJob.FAILED else "failed")


def note_replicas(job: ReassignmentJob, target: str) -> None:
    """Whoever reads the job as ended reads its partitions' replica sets as it left them: the next
    reads wait for the watcher's snapshot to show them (snapshots.note_change "replicas:<topic>:<p>";
    the first snapshots.PARTITIONS_NOTED moves, as elections note their leaders)."""
    moves = moves_of(job.plan)[:snapshots.PARTITIONS_NOTED]
    if moves:
        snapshots.note_change(job.cluster, {f"replicas:{m.topic}:{m.partition}": sorted(m.after if target == "after" else m.before)
                                        for m in moves})


def remove_throttles(gw: Any, throttles: dict[str, Any]) -> None:
    for broker in throttles.get("brokers", []):
        gw.alter_configs("broker", str(broker), {}, list(BROKER_RATE_KEYS))
    for topic in throttles.get("topics", []):
        with contextlib.suppress(NotFound):
            gw.alter_configs("topic", topic, {}, list(TOPIC_REPLICA_KEYS))


def verify(job: ReassignmentJob, gw: Any, moves: list[Move], target: str = "after",
           sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Replica sets equal the plan, ISRs complete, no throttle left, and no data lost: every partition's
    offsets still cover what it held before the job; one that took no writes is exactly as it was."""
    keys = [m.key for m in moves]
    topics = {m.topic for m in moves}
    deadline = time.monotonic() + ISR_WAIT_SECONDS
    while True:
        current = gw.describe_partitions(topics)
        incomplete = [k for k in keys if k in current and set(current[k].isr) != set(current[k].replicas)]
        if not incomplete or time.monotonic() > deadline:
            break
        sleep(1.0)
    wrong = []
    for m in moves:
        want = m.after if target == "after" else m.before
        got = current.get(m.key)
        if got is None or (got.replicas != want and not (target == "before" and set(got.replicas) == set(want))):
            wrong.append({"topic": m.topic, "partition": m.partition, "expected": list(want),
                          "actual": None if got is None else list(got.replicas)})
    # Brokers apply a config change from the metadata log a moment after the controller accepted it:
    # read the throttles back until they are gone, for a few seconds.
    config_deadline = time.monotonic() + 15
    while True:
        left = {f"broker {b}": v for b, v in gw.dynamic_configs("broker", [str(b) for b in job.throttles.get("brokers", [])],
                                                                 THROTTLE_KEYS).items() if v}
        left |= {f"topic {t}": v for t, v in gw.dynamic_configs("topic", job.throttles.get("topics", []), THROTTLE_KEYS).items() if v}
        if not left or time.monotonic() > config_deadline:
            break
        sleep(1.0)
    ends = gw.list_offsets(keys, "latest")
    starts = gw.list_offsets(keys, "earliest")
    lost = []
    written = 0
    for t, p in keys:
        start_before, end_before = (job.baseline.get(baseline_key(t, p)) or [None, None])[:2]
        start, end = starts.get((t, p)), ends.get((t, p))
        if start_before is None or end_before is None or start is None or end is None:
            continue
        if end < end_before:
            lost.append({"topic": t, "partition": p, "why": f"end offset went back from {end_before} to {end}"})
        elif end == end_before and start != start_before:
            lost.append({"topic": t, "partition": p, "why": f"took no writes but its log start moved from {start_before} to {start}"})
        if end > end_before:
            written += 1
    ok = not wrong and not incomplete and not left and not lost
    sentences = []
    if wrong:
        sentences.append(f"{len(wrong)} partition(s) do not have the planned replicas.")
    if incomplete:
        sentences.append(f"{len(incomplete)} partition(s) still have replicas out of sync.")
    if left:
        sentences.append(f"Throttle configs are left on {', '.join(sorted(left))}.")
    if lost:
        sentences.append(f"{len(lost)} partition(s) lost data.")
    return {
        "ok": ok,
        "summary": " ".join(sentences) or (
            f"All {len(keys)} partitions have the {'planned' if target == 'after' else 'original'} replicas, every ISR is "
            f"complete, no throttle is left, and no offsets were lost ({written} partition(s) took writes meanwhile)."),
        "replicas_mismatched": wrong,
        "isr_incomplete": [{"topic": t, "partition": p} for t, p in incomplete],
        "throttles_left": left,
        "data_lost": lost,
        "partitions_written_meanwhile": written,
        "checked_at": time.time(),
    }


def _target(o: Any) -> set[int]:
    """The replica set an ongoing reassignment is heading for."""
    return set(o.replicas) - set(o.removing)
