"""What the console knows of a Connect cluster's connectors: its own frozen structs, not Connect's JSON."""

from __future__ import annotations

from dataclasses import dataclass, field

# Connect's states, in the order a list sorts by what needs attention first.
STATES = ("FAILED", "UNASSIGNED", "RESTARTING", "PAUSED", "STOPPED", "RUNNING")


@dataclass(frozen=True)
class TaskState:
    id: int
    state: str
    worker_id: str = ""
    trace: str = ""


@dataclass(frozen=True)
class ConnectorState:
    name: str
    type: str
    state: str
    worker_id: str = ""
    trace: str = ""
    tasks: tuple[TaskState, ...] = ()
    plugin: str = ""  # connector.class, where the answer carried the config

    @property
    def failed_tasks(self) -> int:
        return sum(1 for t in self.tasks if t.state == "FAILED")


@dataclass(frozen=True)
class ConnectorView:
    """A connector as one answer of Connect's describes it: its type, config and state."""

    name: str
    type: str
    state: ConnectorState
    config: dict[str, str] = field(default_factory=dict)

    @property
    def plugin(self) -> str:
        return self.config.get("connector.class", "")


@dataclass(frozen=True)
class ConnectClusterState:
    """One Connect cluster as the watcher last read it: its connectors, or why it could not be read
    (then the connectors of the last good read, shown as such)."""

    cluster: str  # the Kafka cluster it belongs to
    name: str
    url: str
    reachable: bool
    error: str = ""
    checked_at: float | None = None  # the last attempt (epoch seconds)
    read_at: float | None = None  # the last good read
    version: str = ""
    connectors: tuple[ConnectorState, ...] = ()

    def counts(self) -> dict[str, int]:
        found = {state: 0 for state in STATES}
        for c in self.connectors:
            found[c.state] = found.get(c.state, 0) + 1
        return found

    @property
    def failed_tasks(self) -> int:
        return sum(c.failed_tasks for c in self.connectors)
