"""Balance watch: what is out of balance in a snapshot, and the plan or election that would fix it.

It proposes and never moves data: each finding becomes one event on the timeline (raised when it
appears, not again while it lasts), whose link opens the matching plan for the operator to review.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from console.snapshots import Snapshot

PREFERRED_IMBALANCE = 0.10  # Kafka's own leader.imbalance.per.broker.percentage default


@dataclass(frozen=True)
class Finding:
    problem: str  # new_broker, replica_skew, leader_skew, preferred_leaders
    message: str
    brokers: tuple[int, ...] = ()
    offer: dict[str, Any] = field(default_factory=dict)  # a plan request, or {"election": "preferred"}

    @property
    def signature(self) -> str:
        return f"{self.problem}:{','.join(map(str, self.brokers))}"

    def offer_query(self) -> str:
        """The query string of the page that shows the offered plan (or election)."""
        return urlencode({k: ",".join(map(str, v)) if isinstance(v, list | tuple) else v for k, v in self.offer.items()})


def _spread_too_big(counts: dict[int, int], threshold: float) -> bool:
    values = list(counts.values())
    mean = sum(values) / len(values)
    return max(values) - min(values) >= 2 and (max(values) - min(values)) > threshold * mean


def findings(snap: Snapshot, threshold: float) -> list[Finding]:
    brokers = sorted(b.id for b in snap.brokers.values() if b.up)
    if len(brokers) < 2:
        return []
    replicas: Counter[int] = Counter(dict.fromkeys(brokers, 0))
    preferred: Counter[int] = Counter(dict.fromkeys(brokers, 0))
    preferred_not_leading: Counter[int] = Counter()
    for t in snap.topics.values():
        for p in t.partitions:
            for r in p.replicas:
                if r in replicas:
                    replicas[r] += 1
            if p.replicas and p.replicas[0] in preferred:
                first = p.replicas[0]
                preferred[first] += 1
                if p.leader != first and first in p.isr:
                    preferred_not_leading[first] += 1
    out: list[Finding] = []
    total = sum(replicas.values())
    mean = total / len(brokers)
    empty = tuple(b for b in brokers if mean >= 1 and replicas[b] < (1 - threshold) * mean / 2)
    if empty:
        names = ", ".join(f"{b} ({replicas[b]} replicas)" for b in empty)
        out.append(Finding("new_broker", f"Broker{'s' if len(empty) > 1 else ''} {names} hold{'s' if len(empty) == 1 else ''} "
                                         f"far fewer replicas than the mean of {mean:.0f}: a new broker? Plan to spread replicas onto it.",
                           empty, {"kind": "add_brokers", "brokers": list(empty)}))
    elif _spread_too_big(dict(replicas), threshold):
        hi, lo = max(replicas, key=lambda b: replicas[b]), min(replicas, key=lambda b: replicas[b])
        out.append(Finding("replica_skew", f"Replica counts are skewed: broker {hi} holds {replicas[hi]}, broker {lo} holds "
                                           f"{replicas[lo]} (mean {mean:.0f}). Plan a rebalance.",
                           (hi, lo), {"kind": "rebalance"}))
    if not empty and _spread_too_big(dict(preferred), threshold):
        hi, lo = max(preferred, key=lambda b: preferred[b]), min(preferred, key=lambda b: preferred[b])
        out.append(Finding("leader_skew", f"Preferred leaders are skewed: broker {hi} is first replica of {preferred[hi]} "
                                          f"partitions, broker {lo} of {preferred[lo]}. Plan a rebalance.",
                           (hi, lo), {"kind": "rebalance"}))
    imbalanced = tuple(b for b in brokers if preferred[b] and preferred_not_leading[b] / preferred[b] > PREFERRED_IMBALANCE)
    if imbalanced:
        n = sum(preferred_not_leading[b] for b in imbalanced)
        out.append(Finding("preferred_leaders", f"{n} partition{'s are' if n != 1 else ' is'} not led by {'their' if n != 1 else 'its'} "
                                                f"preferred replica on broker{'s' if len(imbalanced) > 1 else ''} "
                                                f"{', '.join(map(str, imbalanced))}. Run a preferred leader election.",
                           imbalanced, {"election": "preferred"}))
    return out
