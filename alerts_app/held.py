"""What an evaluator holds of each enabled rule (RuleState) and of each open alert (Held), and what
one evaluation changed (Changes): plain state, written by evaluator.py."""

from __future__ import annotations

from typing import Any

from alerts_app.conditions import WHOLE_CLUSTER, Match, Spec
from alerts_app.models import Alert, AlertRule
from alerts_app.targets import Target


class Held:
    """An open alert (pending or firing) as this evaluator holds it: its row and latest match."""

    __slots__ = ("loaded", "match", "row", "since")

    def __init__(self, row: Alert, match: Match | None, loaded: bool = False) -> None:
        self.row = row
        self.match = match
        self.since = row.since.timestamp()
        self.loaded = loaded  # read from the database when the evaluator started


class RuleState:
    """One enabled rule: what it matches now (by subject) and its open alerts (by key)."""

    __slots__ = ("channels", "current", "fresh", "open", "pending", "rule", "spec", "stamp", "target", "whole")

    def __init__(self, rule: AlertRule, channels: tuple[int, ...]) -> None:
        self.open: dict[str, Held] = {}
        self.pending: set[str] = set()
        self.set(rule, channels)

    def set(self, rule: AlertRule, channels: tuple[int, ...]) -> None:
        self.rule, self.channels = rule, channels
        self.spec = Spec(rule.condition, rule.threshold, (rule.status or "").upper())
        self.target = Target(rule.target)
        self.whole = rule.condition in WHOLE_CLUSTER or self.target.every
        self.stamp = stamp(rule)
        self.current: dict[str, dict[str, Match]] = {}
        self.fresh = True  # its matches looked at in full at the next evaluation


def stamp(rule: AlertRule) -> tuple[Any, ...]:
    return (rule.condition, rule.target, rule.threshold, rule.status, rule.for_seconds, rule.severity, rule.name,
            rule.repeat_seconds)


class Changes:
    """What one evaluation changed, written in one transaction."""

    def __init__(self) -> None:
        self.created: list[Held] = []
        self.updated: list[Held] = []
        self.dropped: list[Held] = []
        self.fired: dict[int, list[Held]] = {}
        self.resolved: dict[int, list[Held]] = {}

    def __bool__(self) -> bool:
        return bool(self.created or self.updated or self.dropped)
