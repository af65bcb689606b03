"""When Kafka throttles the console's own clients: a quota on the console's principal or client id.

A broker that holds a client back by a quota says so in its answer (throttle_time_ms); librdkafka
hands each such answer to `throttle_cb`. Each cluster's gateway keeps the recent ones, so an answer
that was throttled can say so (a produce through the console) and the quotas page can show how
often and how long the console itself was held back, by client and broker.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

KEEP = 500  # events kept per cluster
RECENT = 600.0  # seconds the quotas page looks back


@dataclass(frozen=True)
class Throttled:
    at: float  # time.time()
    client: str  # "producer", "message browser", "admin"
    broker_id: int
    throttle_ms: int


class ThrottleLog:
    def __init__(self) -> None:
        self._events: deque[Throttled] = deque(maxlen=KEEP)
        self._lock = threading.Lock()

    def callback(self, client: str) -> Callable[[Any], None]:
        """A librdkafka `throttle_cb` for one of the console's clients."""

        def on_throttle(event: Any) -> None:
            ms = int(getattr(event, "throttle_time", 0) * 1000)
            if ms > 0:
                with self._lock:
                    self._events.append(Throttled(time.time(), client, int(getattr(event, "broker_id", -1)), ms))

        return on_throttle

    def since(self, started: float, client: str | None = None) -> list[Throttled]:
        with self._lock:
            return [e for e in self._events if e.at >= started and (client is None or e.client == client)]

    def summary(self, within: float = RECENT) -> list[dict[str, Any]]:
        """Per client and broker over the last `within` seconds: how many answers were throttled,
        the longest and the total throttle time, and when last."""
        rows: dict[tuple[str, int], dict[str, Any]] = {}
        for e in self.since(time.time() - within):
            row = rows.setdefault((e.client, e.broker_id), {"client": e.client, "broker": e.broker_id, "times": 0,
                                                            "max_ms": 0, "total_ms": 0, "last_at": 0.0})
            row["times"] += 1
            row["max_ms"] = max(row["max_ms"], e.throttle_ms)
            row["total_ms"] += e.throttle_ms
            row["last_at"] = max(row["last_at"], e.at)
        return sorted(rows.values(), key=lambda r: (r["client"], r["broker"]))


_logs: dict[str, ThrottleLog] = {}
_logs_lock = threading.Lock()


def log_for(cluster: str) -> ThrottleLog:
    """The cluster's log in this process, shared by its gateways (a renewed one keeps the history) and
    read by pages without touching a gateway."""
    with _logs_lock:
        return _logs.setdefault(cluster, ThrottleLog())
