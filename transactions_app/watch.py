"""The watcher's side loop for transactions: every TRANSACTION_POLL_INTERVAL seconds, while the
watcher holds the cluster's lease, the transactions are listed (services.list_transactions); the
whole list is stored for the page and the API (`listing`: they ask Kafka only when none is stored),
the hanging ones are kept in Redis (read by alerts_app's `transaction_hanging` condition through
`hanging`), the partitions open ones hold with their LSO too (`stable`, read by the topic and
group pages), and a transaction that starts or stops hanging is an event on the timeline.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import close_old_connections

from console import snapshots
from console.realtime import cluster_group, group_send
from console.watcher import registry
from transactions_app import listing, services, stable

log = logging.getLogger(__name__)


def key(cluster: str) -> str:
    return f"transactions:hanging:{cluster}"


def hanging(cluster: str) -> list[dict[str, Any]]:
    """The hanging transactions of the watcher's last look (empty when it has not looked lately)."""
    raw = snapshots.redis_client().get(key(cluster))
    return list(json.loads(raw)) if raw else []


def _event(cluster: str, kind: str, severity: str, t: dict[str, Any], message: str) -> registry.EventRow:
    stuck = [p for p in t["partitions"] if p.get("stuck")] or t["partitions"]
    first = stuck[0] if stuck else {}
    return registry.EventRow(
        cluster=cluster, at=datetime.now(tz=UTC), kind=kind, severity=severity, message=message,
        topic=first.get("topic"), partition=first.get("partition"),
        details={"transactional_id": t["transactional_id"], "producer_id": t["producer_id"],
                 "partitions": [f"{p['topic']}:{p['partition']}" for p in stuck], "blocked_groups": t["blocked_groups"]})


def look(cluster: str, before: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """One look: the hanging transactions now, by id; kept in Redis; events for what changed since `before`."""
    started = time.time()
    listed = services.list_transactions(cluster)
    stable.save(cluster, listed)
    listing.save(cluster, listed, started)  # (what the page and the API read: as of the look's start)
    now = {t["transactional_id"]: t for t in listed if t["hanging"]}
    snapshots.redis_client().set(key(cluster), json.dumps(list(now.values())), ex=int(settings.TRANSACTION_POLL_INTERVAL * 3 + 30))
    rows = []
    for tid, t in now.items():
        if tid not in before:
            groups = f"; it blocks read_committed group(s) {', '.join(t['blocked_groups'])}" if t["blocked_groups"] else ""
            rows.append(_event(cluster, "transaction_hanging", "warning", t,
                               f"Transaction of '{tid}' (producer {t['producer_id']}) hangs: {t['hanging_reason']}{groups}."))
    for tid, t in before.items():
        if tid not in now:
            rows.append(_event(cluster, "transaction_ended", "info", t, f"Transaction of '{tid}' no longer hangs."))
    if rows:
        try:
            saved = registry.events().save(rows)
            group_send(cluster_group(cluster), {"type": "events.added", "events": saved, "at": time.time()})
        except Exception:  # noqa: BLE001 - the next look says it again only if it changes; the log keeps it
            log.warning("could not record the transaction events of %s", cluster, exc_info=True)
    return now


def watch(cluster: str, stop: threading.Event, active: threading.Event) -> None:
    """The side loop: a look per TRANSACTION_POLL_INTERVAL while the lease is held."""
    before: dict[str, dict[str, Any]] = {}
    while not stop.is_set():
        if active.is_set():
            try:
                close_old_connections()
                before = look(cluster, before)
            except Exception:  # noqa: BLE001 - an unanswering cluster is the watcher's to say; look again later
                log.info("listing the transactions of %s failed", cluster, exc_info=True)
        stop.wait(settings.TRANSACTION_POLL_INTERVAL)
