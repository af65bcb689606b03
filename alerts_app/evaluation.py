"""What rules match on a cluster's live data: `preview` (a rule's fields on the latest snapshot, for
the rule form) and the per-cluster evaluator the watcher and the sampler call (evaluator.py)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from alerts_app.conditions import (
    CONNECT_CONDITIONS,
    GROUP_CONDITIONS,
    JOB_CONDITIONS,
    METADATA_CONDITIONS,
    TRANSACTION_CONDITIONS,
    WHOLE_CLUSTER,
    Found,
    GroupIndex,
    Match,
    MetadataIndex,
    Spec,
    passes,
    snapshot_end_of,
)
from alerts_app.models import CONDITIONS
from alerts_app.targets import Target
from console import snapshots
from console.errors import BadParameter

PREVIEW_LIMIT = 500  # matches a preview lists (its count says how many there are)


def spec_of(fields: Mapping[str, Any]) -> tuple[Spec, Target]:
    """A rule's matching fields (condition, threshold, status) and its target; BadParameter if unusable."""
    condition = fields.get("condition")
    if condition not in CONDITIONS:
        raise BadParameter(f"'condition' must be one of {', '.join(CONDITIONS)}.")
    threshold = fields.get("threshold")
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, int | float)):
        raise BadParameter("'threshold' must be a number.")
    status = fields.get("status") or ""
    if not isinstance(status, str):
        raise BadParameter("'status' must be a string.")
    target = fields.get("target") or "*"
    if not isinstance(target, str):
        raise BadParameter("'target' must be a string.")
    return Spec(str(condition), None if threshold is None else float(threshold), status.upper()), Target(target)


def rule_matches(spec: Spec, target: Target, found: Found) -> list[Match]:
    """The matches of one rule among its condition's (every subject: no index)."""
    if spec.condition in WHOLE_CLUSTER or target.every:
        return [m for m in found.matches() if passes(spec, m)]
    if target.exact is not None:
        return [m for m in found.by_subject.get(target.exact, ()) if passes(spec, m)]
    return [m for subject, listed in found.by_subject.items() if target.matches(subject) for m in listed if passes(spec, m)]


def found_now(snap: snapshots.Snapshot, condition: str, now: float) -> Found | None:
    """One condition's matches in a snapshot (None: the snapshot cannot say)."""
    if condition in METADATA_CONDITIONS:
        return MetadataIndex().update(snap, now, (condition,)).get(condition)
    if condition in GROUP_CONDITIONS:
        if not snap.reachable or snap.groups_at is None:
            return None
        return GroupIndex().update(snap.groups, snapshot_end_of(snap), (condition,)).get(condition)
    if condition in JOB_CONDITIONS:
        from alerts_app.jobs import job_matches

        found = Found()
        found.put_all(job_matches(snap.cluster, now))
        return found
    if condition in CONNECT_CONDITIONS:
        from alerts_app.connect_tasks import task_matches

        found = Found()
        found.put_all(task_matches(snap.cluster))
        return found
    if condition in TRANSACTION_CONDITIONS:
        from alerts_app.transactions import transaction_matches

        found = Found()
        found.put_all(transaction_matches(snap.cluster))
        return found
    return None


def preview(cluster: str, spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What a rule with these fields (condition, target, threshold, status) matches right now in the
    cluster's latest snapshot: each {"key", "value", "message"}, by key, at most PREVIEW_LIMIT."""
    checked, target = spec_of(spec)
    snap = snapshots.latest(cluster)
    found = found_now(snap, checked.condition, time.time())
    if found is None:
        return []
    matches = sorted(rule_matches(checked, target, found), key=lambda m: m.key)
    return [{"key": m.key, "value": m.value, "message": m.message} for m in matches[:PREVIEW_LIMIT]]
