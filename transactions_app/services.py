"""Transactions of a cluster: the list with each open transaction's partitions, their last stable
offsets and producers; hanging transactions; the abort of one (admin, typed confirmation, audited).

A transaction hangs when it has been open longer than its own timeout (its coordinator should have
aborted it), or when it has pinned a partition's last stable offset (LSO = the transaction's first
offset there, below the high watermark) for longer than TRANSACTION_HANGING_SECONDS: every
read_committed consumer of that partition stops at the LSO meanwhile, and its lag climbs.
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings

from console import gateway, snapshots
from console.audit import audited
from console.errors import BadParameter, ConsoleError
from console.gateway.errors import NotFound
from console.gateway.transactions import ActiveProducer, Transaction
from console.gateway.types import TopicPartition
from transactions_app import listing, stable

# States in which a transaction is open: it holds the LSO of its partitions until its markers are written.
OPEN_STATES = frozenset({"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"})
MAX_ID_LENGTH = 1000


def _producer(p: ActiveProducer) -> dict[str, Any]:
    return {"producer_id": p.producer_id, "producer_epoch": p.producer_epoch, "last_sequence": p.last_sequence,
            "last_timestamp": p.last_timestamp, "coordinator_epoch": p.coordinator_epoch,
            "current_txn_start_offset": p.txn_start_offset}


def _blocked_groups(cluster: str, stuck: dict[TopicPartition, int]) -> list[str]:
    """The groups whose committed offset sits at a stuck partition's LSO: a read_committed consumer
    can read no further, while a read_uncommitted one would have moved past it (Kafka does not say
    which isolation a consumer uses). From the watcher's last snapshot of the groups."""
    snap = snapshots.watched(cluster).snapshot
    if snap is None or not stuck:
        return []
    keys = {f"{t}:{p}": lso for (t, p), lso in stuck.items()}
    candidates = {g for t, _p in stuck for g in snap.topic_groups.get(t, [])}
    return sorted(g for g in candidates if g in snap.groups
                  and any(snap.groups[g].offsets.get(k) == lso for k, lso in keys.items()))


def _describe(cluster: str, t: Transaction, partitions: dict[TopicPartition, dict[str, Any]], now_ms: int) -> dict[str, Any]:
    is_open = t.state in OPEN_STATES and t.start_ms >= 0
    age_ms = now_ms - t.start_ms if is_open else None
    rows = [{"topic": tp[0], "partition": tp[1], **partitions.get(tp, {})} for tp in t.partitions]
    reasons: list[str] = []
    if age_ms is None:  # (most of a cluster's ids: closed, holding nothing)
        return {"transactional_id": t.transactional_id, "state": t.state, "producer_id": t.producer_id,
                "producer_epoch": t.producer_epoch, "timeout_ms": t.timeout_ms, "start_ms": None, "age_seconds": None,
                "coordinator": t.coordinator, "partitions": rows, "hanging": False, "hanging_reason": None, "blocked_groups": []}
    if age_ms > t.timeout_ms:
        reasons.append(f"open for {age_ms // 1000} s, longer than its timeout of {t.timeout_ms // 1000} s")
    stuck = {(r["topic"], r["partition"]): r["lso"] for r in rows
             if r.get("lso") is not None and r.get("high_watermark") is not None and r["lso"] < r["high_watermark"]
             and r.get("txn_start_offset") == r["lso"]}
    if stuck and age_ms > settings.TRANSACTION_HANGING_SECONDS * 1000:
        reasons.append(f"holds the last stable offset of {len(stuck)} partition(s) for more than "
                       f"{settings.TRANSACTION_HANGING_SECONDS:g} s while records arrive behind it")
    for r in rows:
        r["stuck"] = (r["topic"], r["partition"]) in stuck
    hanging = bool(reasons)
    return {
        "transactional_id": t.transactional_id, "state": t.state, "producer_id": t.producer_id,
        "producer_epoch": t.producer_epoch, "timeout_ms": t.timeout_ms, "start_ms": t.start_ms if t.start_ms >= 0 else None,
        "age_seconds": round(age_ms / 1000, 1), "coordinator": t.coordinator,
        "partitions": rows, "hanging": hanging, "hanging_reason": "; ".join(reasons) or None,
        "blocked_groups": _blocked_groups(cluster, stuck) if hanging else [],
    }


def partition_details(cluster: str, partitions: list[TopicPartition]) -> dict[TopicPartition, dict[str, Any]]:
    """LSO, high watermark and active producers of each partition (open transactions' partitions only:
    a closed transaction's hold nothing)."""
    if not partitions:
        return {}
    gw = gateway.for_cluster(cluster)
    # A transaction left open on a topic deleted since (its coordinator still lists it) would fail the
    # producers' request for every partition: ask only of topics Kafka still has.
    exists = gw.topics_exist({t for t, _p in partitions})
    partitions = [tp for tp in partitions if exists.get(tp[0])]
    if not partitions:
        return {}
    lso = gw.stable_offsets(partitions)
    hw = gw.list_offsets(partitions, "latest")
    producers = gw.producers(partitions)
    found: dict[TopicPartition, dict[str, Any]] = {}
    for tp in partitions:
        active = producers.get(tp) or []  # (None: its leader did not answer)
        found[tp] = {"lso": lso.get(tp), "high_watermark": hw.get(tp), "producers": [_producer(p) for p in active]}
    return found


def _rows(cluster: str, txns: list[Transaction]) -> list[dict[str, Any]]:
    """Rows of `txns`, each open one with its partitions' LSO, high watermark and producers."""
    open_partitions = sorted({tp for t in txns if t.state in OPEN_STATES for tp in t.partitions})
    details = partition_details(cluster, open_partitions)
    for t in txns:  # the open transaction's first offset on each partition: its producer's, by producer id
        for tp in t.partitions:
            d = details.get(tp)
            if d is not None:
                mine = [p["current_txn_start_offset"] for p in d["producers"] if p["producer_id"] == t.producer_id]
                details[tp] = {**d, "txn_start_offset": mine[0] if mine and mine[0] >= 0 else None}
    now_ms = int(time.time() * 1000)
    rows = [_describe(cluster, t, {tp: details[tp] for tp in t.partitions if tp in details}, now_ms) for t in txns]
    return sorted(rows, key=listing.order_key)


def list_transactions(cluster: str) -> list[dict[str, Any]]:
    """Every transactional id, hanging ones first, then open ones, then closed ones, each by id, as Kafka
    says now (the watcher's look)."""
    return _rows(cluster, gateway.for_cluster(cluster).transactions())


def transactions(cluster: str) -> listing.Listing:
    """The list for pages and the API: the watcher's last look (listing.stored), or, when none is
    stored, Kafka's answer now."""
    found = listing.stored(cluster)
    if found is not None:
        return found
    return listing.Listing.of(list_transactions(cluster), time.time(), from_watcher=False)


def transaction(cluster: str, transactional_id: str) -> dict[str, Any] | None:
    """One transactional id's row as Kafka says now (None: unknown to its coordinator)."""
    found = gateway.for_cluster(cluster).transaction(transactional_id)
    return _rows(cluster, [found])[0] if found is not None else None


def _check_id(transactional_id: str) -> str:
    if not transactional_id:
        raise BadParameter("The transactional id is empty.")
    if len(transactional_id) > MAX_ID_LENGTH:
        raise BadParameter(f"The transactional id is {len(transactional_id)} characters long; at most {MAX_ID_LENGTH} are accepted.")
    return transactional_id


def _reread(cluster: str, transactional_id: str) -> None:
    """Read-your-writes after a change: the id's row read afresh stands in the stored listing until the
    watcher's next look; when Kafka does not answer, the stored listing is dropped so the next answer
    asks Kafka (the change itself is done either way)."""
    try:
        fresh = transaction(cluster, transactional_id)
    except ConsoleError:
        listing.forget(cluster)
    else:
        listing.amend(cluster, transactional_id, fresh)


def abort(user: Any, cluster: str, transactional_id: str, confirm: str) -> dict[str, Any]:
    """Abort a hanging transaction as `kafka-transactions abort` does: an abort marker on each of its
    partitions. Only a hanging one: aborting a live producer's transaction would fence nothing and
    throw away its records while it carries on."""
    with audited(user, "transaction_abort", cluster=cluster, target=transactional_id) as entry:
        _check_id(transactional_id)
        if confirm != transactional_id:
            raise BadParameter(f"Type the transactional id '{transactional_id}' in `confirm` to abort its transaction.")
        found = transaction(cluster, transactional_id)
        if found is None:
            raise NotFound(f"Transactional id '{transactional_id}' is not known on cluster '{cluster}'.")
        if found["state"] not in OPEN_STATES:
            raise BadParameter(f"Transactional id '{transactional_id}' has no open transaction (state {found['state']}); "
                               "there is nothing to abort.")
        if not found["hanging"]:
            raise BadParameter(f"The transaction of '{transactional_id}' is not hanging (open {found['age_seconds']} s, "
                               f"timeout {found['timeout_ms'] // 1000} s); only a hanging transaction is aborted.")
        aborted = gateway.for_cluster(cluster).abort_transaction(transactional_id)
        stable.forget(cluster, aborted)  # (the pages stop showing its LSO and the groups it blocked at once)
        entry.update({"producer_id": found["producer_id"], "producer_epoch": found["producer_epoch"],
                      "partitions": [f"{t}:{p}" for t, p in aborted]})
    _reread(cluster, transactional_id)
    where = ", ".join(f"{t}-{p}" for t, p in aborted) or "none of its partitions (already closed)"
    return {"transactional_id": transactional_id, "aborted": [{"topic": t, "partition": p} for t, p in aborted],
            "message": f"Aborted the transaction of '{transactional_id}' on {where}."}
