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
