"""The lag a read_committed consumer can read, beside the lag against the high watermark.

A read_committed consumer reads up to the last stable offset (LSO) only: records of an open
transaction, and any written behind it, wait until the transaction ends. So per partition
`lag_readable` = max(0, LSO - committed), and a group whose committed offset sits at the LSO a
transaction holds (with records behind it) is blocked by that transaction. Kafka does not say which
isolation level a group's consumers use, so both lags are shown and the flag says "would be blocked
if read_committed"; a read_uncommitted group at that offset is simply behind.
"""

from __future__ import annotations

from typing import Any

from transactions_app import stable


def add_stable_offsets(cluster: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Adds `last_stable_offset`, `lag_readable` and `blocked_by` (a transactional id or None) to a
    group's partition rows (group_rows.partition_rows); returns the blocked partitions."""
    held = stable.held(cluster)
    blocked: list[dict[str, Any]] = []
    for r in rows:
        h = held.get((r["topic"], r["partition"]))
        lso = stable.stable_offset(h, r["end_offset"])
        committed = r["committed"]
        r["last_stable_offset"] = lso
        r["lag_readable"] = None if lso is None or committed is None else max(0, lso - committed)
        stopped = (h is not None and h.transactional_id is not None and lso is not None and committed == lso
                   and r["end_offset"] is not None and lso < r["end_offset"])
        r["blocked_by"] = h.transactional_id if stopped and h is not None else None
        if r["blocked_by"] is not None:
            blocked.append({"topic": r["topic"], "partition": r["partition"], "transactional_id": r["blocked_by"],
                            "hanging": bool(h and h.hanging), "last_stable_offset": lso, "high_watermark": r["end_offset"]})
    return blocked
