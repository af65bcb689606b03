"""The `transaction_hanging` condition: transactions the watcher's last listing found hanging
(transactions_app/watch.py `hanging`): open longer than their timeout, or holding a partition's last
stable offset with records behind it past TRANSACTION_HANGING_SECONDS. A state, not an event: it
resolves once the transaction ends or is aborted. A rule's target names topics; a match per stuck
partition, naming the read_committed groups it blocks."""

from __future__ import annotations

from alerts_app.conditions import Match
from transactions_app.watch import hanging


def transaction_matches(cluster: str) -> dict[str, list[Match]]:
    """Subject (the topic) -> a match per partition a hanging transaction holds."""
    found: dict[str, list[Match]] = {}
    for t in hanging(cluster):
        tid, groups = t["transactional_id"], t["blocked_groups"]
        blocked = f"; it blocks read_committed group(s) {', '.join(groups)}" if groups else ""
        for p in [p for p in t["partitions"] if p.get("stuck")] or t["partitions"]:
            found.setdefault(p["topic"], []).append(Match(
                f"transaction:{tid}:{p['topic']}:{p['partition']}", p["topic"], t["age_seconds"],
                f"Transaction of '{tid}' hangs on {p['topic']}-{p['partition']} ({t['hanging_reason']}){blocked}.",
                {"transactional_id": tid, "producer_id": t["producer_id"], "topic": p["topic"], "partition": p["partition"],
                 "lso": p.get("lso"), "high_watermark": p.get("high_watermark"), "blocked_groups": groups}))
    for matches in found.values():
        matches.sort(key=lambda m: m.key)
    return found
