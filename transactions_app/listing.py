"""The watcher's last listing of a cluster's transactions, kept in Redis for the page and the API.

Pages read what the watcher stored and ask Kafka nothing (kafka-ui's rule: lists read a cache
refreshed in the background); listing 10,000 transactional ids takes a DescribeTransactions of each.
The order is hanging ids first, then open ones, then closed ones, each by id. Most ids of a busy
cluster are closed and hold nothing: they are kept as one block of JSON lines, one row a line, which
a request counts, filters and sends as bytes, decoding only the rows a page draws. Decoding 10,000
rows per request would keep them alive together, and Python's collector would then walk the whole
process every few requests (100-200 ms each time at 10,000 ids).

A change made through the console (an abort) is kept beside the listing as an amendment: a row read
afresh from Kafka, newer than the look, which replaces the listed one until a look that started after
it is stored (an amended closed row is shown after the open ones, ahead of the other closed ones).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson
from django.conf import settings

from console import snapshots

log = logging.getLogger(__name__)


def key(cluster: str) -> str:
    return f"transactions:list:{cluster}"


def amended_key(cluster: str) -> str:
    return f"transactions:amended:{cluster}"


def keep_seconds() -> int:
    """Stored listings expire when the watcher stops looking: the pages then ask Kafka again."""
    return int(settings.TRANSACTION_POLL_INTERVAL * 3 + 30)


def closed(row: dict[str, Any]) -> bool:
    """A transactional id with no open transaction: it holds nothing."""
    return row["start_ms"] is None and not row["partitions"] and not row["hanging"]


def order_key(row: dict[str, Any]) -> tuple[bool, bool, str]:
    """Hanging first, then open, then closed; each by id."""
    return not row["hanging"], closed(row), row["transactional_id"]


def _line_prefix(transactional_id: str) -> bytes:
    return b'{"transactional_id":' + orjson.dumps(transactional_id) + b","


@dataclass
class Listing:
    """Transactional ids as of `as_of` (epoch seconds): `rows` the hanging and open ones, in order;
    `closed` the closed ones, one JSON row a line, by id. `from_watcher` False when Kafka was asked for
    this request; `every`: the watcher's seconds between looks."""

    rows: list[dict[str, Any]]
    closed: bytes
    as_of: float
    from_watcher: bool
    every: float

    @classmethod
    def of(cls, rows: Iterable[dict[str, Any]], as_of: float, from_watcher: bool, every: float | None = None) -> Listing:
        ordered = sorted(rows, key=order_key)
        # (each closed line begins with its id, where `amended` looks for it)
        lines = b"\n".join(orjson.dumps({"transactional_id": r["transactional_id"], **r}) for r in ordered if closed(r))
        return cls([r for r in ordered if not closed(r)], lines, as_of, from_watcher,
                   settings.TRANSACTION_POLL_INTERVAL if every is None else every)

    @property
    def hanging(self) -> int:
        return sum(1 for r in self.rows if r["hanging"])

    @property
    def total(self) -> int:
        return len(self.rows) + (self.closed.count(b"\n") + 1 if self.closed else 0)

    def page(self, q: str, limit: int) -> tuple[int, list[dict[str, Any]]]:
        """How many ids contain `q` (all when empty), and the first `limit` of them as rows."""
        rows = [r for r in self.rows if q in r["transactional_id"]] if q else self.rows
        if not self.closed:
            return len(rows), rows[:limit]
        if not q:
            wanted = max(0, limit - len(rows))
            return self.total, rows[:limit] + [orjson.loads(line) for line in self.closed.split(b"\n", wanted)[:wanted]]
        needle = orjson.dumps(q)[1:-1]  # (the id as it is written in a line: a line without it cannot match)
        lines = [line for line in self.closed.split(b"\n") if needle in line]
        found = [r for r in map(orjson.loads, lines) if q in r["transactional_id"]]
        return len(rows) + len(found), (rows + found)[:limit]

    def json_rows(self) -> bytes:
        """Every row as one JSON array, the closed ones as stored."""
        parts = [orjson.dumps(r) for r in self.rows]
        if self.closed:
            parts.append(self.closed.replace(b"\n", b","))
        return b"[" + b",".join(parts) + b"]"


def save(cluster: str, rows: Iterable[dict[str, Any]], as_of: float) -> None:
    """Keep a look's rows, read by the pages until the next one."""
    found = Listing.of(rows, as_of, True)
    head = orjson.dumps({"as_of": as_of, "every": found.every, "rows": found.rows})
    pipe = snapshots.redis_client().pipeline(transaction=True)  # (a reader sees the old listing or the new one)
    pipe.delete(key(cluster))
    pipe.hset(key(cluster), mapping={"head": head, "closed": found.closed})
    pipe.expire(key(cluster), keep_seconds())
    pipe.execute()


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
    newer: dict[str, dict[str, Any] | None] = {}
    for tid, raw in amendments.items():
        note = orjson.loads(raw)
        if note["at"] > listing.as_of:
            newer[tid.decode()] = note["row"]
    if not newer:
        return listing
    rows = sorted([r for r in listing.rows if r["transactional_id"] not in newer] + [r for r in newer.values() if r is not None],
                  key=order_key)
    prefixes = tuple(_line_prefix(tid) for tid in newer)
    kept = b"\n".join(line for line in listing.closed.split(b"\n") if not line.startswith(prefixes)) if listing.closed else b""
    return Listing(rows, kept, listing.as_of, listing.from_watcher, listing.every)


def stored(cluster: str) -> Listing | None:
    """The watcher's last listing with the console's own changes since, or None when there is none
    (no watcher, an expired entry, Redis away: the caller asks Kafka)."""
    try:
        pipe = snapshots.redis_client().pipeline(transaction=False)
        pipe.hgetall(key(cluster))
        pipe.hgetall(amended_key(cluster))
        parts, amendments = pipe.execute()
        if not parts:
            return None
        head = orjson.loads(parts[b"head"])
        listing = Listing(head["rows"], parts.get(b"closed", b""), float(head["as_of"]), True, float(head["every"]))
        return amended(listing, amendments) if amendments else listing
    except Exception:  # noqa: BLE001 - Redis away or a damaged entry: the caller asks Kafka
        log.warning("could not read the stored transactions of %s", cluster, exc_info=True)
        return None
