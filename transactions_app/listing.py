"""The watcher's last listing of a cluster's transactions, kept in Redis for the page and the API.

Pages read what the watcher stored and ask Kafka nothing (kafka-ui's rule: lists read a cache
refreshed in the background); listing 10,000 transactional ids takes a DescribeTransactions of each.
Most ids of a busy cluster are closed and hold nothing, so a closed one is kept as five values (id,
state, producer id, epoch, timeout) and made a row only when drawn; an open one is kept whole.

A change made through the console (an abort) is kept beside the listing as an amendment: a row read
afresh from Kafka, newer than the look, which replaces the listed one until a look that started after
it is stored. A watcher's look already under way when the change was made cannot undo it that way.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.conf import settings

from console import snapshots

log = logging.getLogger(__name__)

# A closed transaction as stored: [id, state, producer id, producer epoch, timeout ms].
Compact = list[Any]
Entry = dict[str, Any] | Compact


def key(cluster: str) -> str:
    return f"transactions:list:{cluster}"


def amended_key(cluster: str) -> str:
    return f"transactions:amended:{cluster}"


def keep_seconds() -> int:
    """Stored listings expire when the watcher stops looking: the pages then ask Kafka again."""
    return int(settings.TRANSACTION_POLL_INTERVAL * 3 + 30)


def _order(entry: Entry) -> tuple[bool, str]:
    """Hanging ones first, then by id (services.list_transactions' order)."""
    if isinstance(entry, list):
        return True, entry[0]
    return not entry["hanging"], entry["transactional_id"]


def compact(row: dict[str, Any]) -> Entry:
    """A listed row as stored: closed and holding nothing, five values; otherwise the row itself."""
    if row["start_ms"] is None and not row["partitions"] and not row["hanging"]:
        return [row["transactional_id"], row["state"], row["producer_id"], row["producer_epoch"], row["timeout_ms"]]
    return row


def expand(entry: Entry) -> dict[str, Any]:
    """A stored entry as services.list_transactions gives its row."""
    if not isinstance(entry, list):
        return entry
    tid, state, pid, epoch, timeout = entry
    return {"transactional_id": tid, "state": state, "producer_id": pid, "producer_epoch": epoch, "timeout_ms": timeout,
            "start_ms": None, "age_seconds": None, "coordinator": None, "partitions": [], "hanging": False,
            "hanging_reason": None, "blocked_groups": []}


def entry_id(entry: Entry) -> str:
    return entry[0] if isinstance(entry, list) else entry["transactional_id"]


def _hanging(entries: list[Entry]) -> int:
    return sum(1 for e in entries if not isinstance(e, list) and e["hanging"])


@dataclass
class Listing:
    """Transactional ids in the page's order (hanging first), as of `as_of` (epoch seconds);
    `from_watcher` False when Kafka was asked for this request; `every`: the watcher's seconds between looks."""

    entries: list[Entry]
    as_of: float
    from_watcher: bool
    every: float
    hanging: int = field(default=0)

    @classmethod
    def of(cls, rows: Iterable[dict[str, Any]], as_of: float, from_watcher: bool) -> Listing:
        entries = [compact(r) for r in rows]
        return cls(entries, as_of, from_watcher, settings.TRANSACTION_POLL_INTERVAL, _hanging(entries))

    def matching(self, q: str) -> list[Entry]:
        return [e for e in self.entries if q in entry_id(e)] if q else self.entries

    def rows(self) -> list[dict[str, Any]]:
        return [expand(e) for e in self.entries]


def save(cluster: str, rows: Iterable[dict[str, Any]], as_of: float) -> None:
    """Keep a look's rows (in services.list_transactions' order), read by the pages until the next one."""
    body = orjson.dumps({"as_of": as_of, "every": settings.TRANSACTION_POLL_INTERVAL, "entries": [compact(r) for r in rows]})
    snapshots.redis_client().set(key(cluster), body, ex=keep_seconds())


def amend(cluster: str, transactional_id: str, row: dict[str, Any] | None) -> None:
    """Note a transactional id's row as just read from Kafka (None: no longer known) after a change
    made through the console, so the next answers show it before the watcher looks again. Best
    effort: with Redis away the pages ask Kafka themselves."""
    try:
        pipe = snapshots.redis_client().pipeline(transaction=False)
        pipe.hset(amended_key(cluster), transactional_id, orjson.dumps({"at": time.time(), "row": row}))
        pipe.expire(amended_key(cluster), keep_seconds())
        pipe.execute()
    except Exception:  # noqa: BLE001 - the next look shows the change anyway
        log.warning("could not note the change of transactional id %r on %s", transactional_id, cluster, exc_info=True)


def forget(cluster: str) -> None:
    """Drop the stored listing (best effort): the next answer asks Kafka."""
    try:
        snapshots.redis_client().delete(key(cluster))
    except Exception:  # noqa: BLE001 - it expires by itself after the watcher's next looks
        log.warning("could not drop the stored transactions of %s", cluster, exc_info=True)


def amended(listing: Listing, amendments: dict[bytes, bytes]) -> Listing:
    """The listing with the rows changed through the console since its look put in (a pure function)."""
    newer = {}
    for tid, raw in amendments.items():
        note = orjson.loads(raw)
        if note["at"] > listing.as_of:
            newer[tid.decode()] = note["row"]
    if not newer:
        return listing
    kept = [e for e in listing.entries if entry_id(e) not in newer]
    entries = sorted(kept + [compact(r) for r in newer.values() if r is not None], key=_order)
    return Listing(entries, listing.as_of, listing.from_watcher, listing.every, _hanging(entries))


def stored(cluster: str) -> Listing | None:
    """The watcher's last listing with the console's own changes since, or None when there is none
    (no watcher, an expired entry, Redis away: the caller asks Kafka)."""
    try:
        pipe = snapshots.redis_client().pipeline(transaction=False)
        pipe.get(key(cluster))
        pipe.hgetall(amended_key(cluster))
        raw, amendments = pipe.execute()
        if not raw:
            return None
        data = orjson.loads(raw)
    except Exception:  # noqa: BLE001 - Redis away or a damaged entry: the caller asks Kafka
        log.warning("could not read the stored transactions of %s", cluster, exc_info=True)
        return None
    entries: list[Entry] = data["entries"]
    listing = Listing(entries, float(data["as_of"]), True, float(data.get("every", settings.TRANSACTION_POLL_INTERVAL)), _hanging(entries))
    return amended(listing, amendments) if amendments else listing
