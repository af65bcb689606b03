"""What the apps add to the watcher, registered from their AppConfig.ready(): console/ imports no app.

- brokers_app: where events are kept (`register_events`): the watcher hands it event rows and
  broadcasts what it returns;
- consumers_app: the evaluation of consumer groups (`register_group_evaluation`): lag status, time
  lag, lag history, rebalances, from each offsets sample;
- analytics: what is written for the Spark jobs at each sample (`register_samples`);
- alerts_app: the evaluation of alert rules (`register_alert_evaluation`): after each metadata cycle
  (in the events thread) and after each sampling pass that read the groups;
- connect_app: loops that watch what sits beside a cluster (`register_side_watch`): its Kafka
  Connect clusters, each in a thread of its own while this watcher holds the cluster's lease.

A part nobody registered is a no-op (a test settings module without that app, say).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from console.snapshots.model import GroupState, Snapshot


@dataclass(frozen=True)
class EventRow:
    """An event as the watcher finds it; the registered store keeps it and says how it is shown."""

    cluster: str
    at: datetime
    kind: str
    severity: str
    message: str
    topic: str | None = None
    partition: int | None = None
    broker: int | None = None
    details: dict[str, Any] = field(default_factory=dict)


class EventStore(Protocol):
    def save(self, rows: list[EventRow]) -> list[dict[str, Any]]:
        """Keep these events; their dicts as the API and the live pages show them (ids included)."""


EmitEvents = Callable[[list[EventRow]], None]


class GroupEvaluator(Protocol):
    """One cluster's consumer groups across samples (the windows and trackers live in it)."""

    changed: bool  # the last evaluation changed a status, time lag or lag, or the set of groups
    stats: dict[str, float | int]

    def evaluate(self, groups: dict[str, GroupState], before: Mapping[str, GroupState] | None,
                 ends: Mapping[tuple[str, int], int], now: float, partitions: Mapping[str, tuple[str, int]] | None = None,
                 ends_at: float | None = None) -> None:
        """Set status, time lag and lag on `groups` from this sample (`before`: the last sample's
        states, some of which may be the same objects, carried over; `partitions`: the (topic,
        partition) tuple each offsets key names, to be shared, where the caller keeps them;
        `ends_at`: when `ends` were read, `now` when the groups' offsets were, by default the same)."""


class SampleWriter(Protocol):
    records: int  # written so far
    seconds: float  # spent writing so far
    refused: str | None  # why the cluster refuses the samples, while it does

    def write(self, time_s: float, ends: Mapping[tuple[str, int], int], sizes: Mapping[tuple[str, int], Mapping[str, int]] | None,
              groups: Mapping[str, GroupState] | None, brokers: int) -> str | None:
        """Write this sample; a sentence when the cluster refused it (raised once as an event)."""


class AlertEvaluator(Protocol):
    """One cluster's alert rules, on one part of what the watcher reads ("metadata" or "groups")."""

    def snapshot(self, snap: Snapshot) -> None:
        """After a metadata cycle, with its snapshot (reachable or not)."""

    def groups(self, groups: Mapping[str, GroupState] | None, ends: Mapping[tuple[str, int], int], now: float | None = None,
               moved: AbstractSet[str] | None = None) -> None:
        """After a sampling pass, with its evaluated groups (None: not read), end offsets and the
        topics whose offsets moved since the last pass (None: not known)."""


AlertEvaluatorFactory = Callable[[str, str], AlertEvaluator]  # (cluster, part)
# (cluster, stop, active): runs until `stop` is set, working only while `active` is (the lease is held).
SideWatch = Callable[[str, threading.Event, threading.Event], None]
GroupEvaluatorFactory = Callable[[str, bool, EmitEvents], GroupEvaluator]  # (cluster, incremental, emit)
SampleWriterFactory = Callable[[str, Any], SampleWriter]  # (cluster, gateway)


class _NoEvents:
    def save(self, rows: list[EventRow]) -> list[dict[str, Any]]:
        return [{"cluster": r.cluster, "at": r.at.isoformat(), "kind": r.kind, "severity": r.severity, "message": r.message,
                 "topic": r.topic, "partition": r.partition, "broker": r.broker, "details": r.details} for r in rows]


class _NoEvaluation:
    def __init__(self) -> None:
        self.changed = True
        self.stats: dict[str, float | int] = {}

    def evaluate(self, groups: dict[str, GroupState], before: Mapping[str, GroupState] | None,
                 ends: Mapping[tuple[str, int], int], now: float, partitions: Mapping[str, tuple[str, int]] | None = None,
                 ends_at: float | None = None) -> None:
        return None


class _NoSamples:
    def __init__(self) -> None:
        self.records, self.seconds = 0, 0.0
        self.refused: str | None = None

    def write(self, time_s: float, ends: Mapping[tuple[str, int], int], sizes: Mapping[tuple[str, int], Mapping[str, int]] | None,
              groups: Mapping[str, GroupState] | None, brokers: int) -> str | None:
        return None


class _NoAlerts:
    def snapshot(self, snap: Snapshot) -> None:
        return None

    def groups(self, groups: Mapping[str, GroupState] | None, ends: Mapping[tuple[str, int], int], now: float | None = None,
               moved: AbstractSet[str] | None = None) -> None:
        return None


_events: EventStore = _NoEvents()
_group_evaluation: GroupEvaluatorFactory = lambda cluster, incremental, emit: _NoEvaluation()  # noqa: E731
_samples: SampleWriterFactory = lambda cluster, gw: _NoSamples()  # noqa: E731
_alerts: AlertEvaluatorFactory = lambda cluster, part: _NoAlerts()  # noqa: E731
_side_watches: dict[str, SideWatch] = {}


def register_events(store: EventStore) -> None:
    global _events
    _events = store


def register_group_evaluation(factory: GroupEvaluatorFactory) -> None:
    global _group_evaluation
    _group_evaluation = factory


def register_samples(factory: SampleWriterFactory) -> None:
    global _samples
    _samples = factory


def register_alert_evaluation(factory: AlertEvaluatorFactory) -> None:
    global _alerts
    _alerts = factory


def register_side_watch(name: str, loop: SideWatch) -> None:
    """A loop the watcher runs per cluster in a thread named after it (registering a name again replaces it)."""
    _side_watches[name] = loop


def side_watches() -> dict[str, SideWatch]:
    return dict(_side_watches)


def events() -> EventStore:
    return _events


def group_evaluator(cluster: str, incremental: bool, emit: EmitEvents) -> GroupEvaluator:
    return _group_evaluation(cluster, incremental, emit)


def sample_writer(cluster: str, gw: Any) -> SampleWriter:
    return _samples(cluster, gw)


def alert_evaluator(cluster: str, part: str) -> AlertEvaluator:
    return _alerts(cluster, part)
