"""A cluster's gateway that records the changes asked of it, for tests of what reaches Kafka and what not.

It answers like a small healthy cluster: every partition holds offsets `start` to `end`, records are
`age_ms` old, and configs are the ones given. Each change is appended to `calls` as (method, args).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import pytest

from console import gateway
from console.gateway.types import ConfigValue
from console.snapshots import store
from console.snapshots.model import GroupState, Snapshot

GROUP = "billing/settle"
DEFAULTS = {"retention.ms": "604800000", "retention.bytes": "-1", "cleanup.policy": "delete",
            "max.message.bytes": "1048588", "segment.bytes": "1073741824"}


class KafkaDouble:
    def __init__(self, overrides: dict[str, str] | None = None, *, start: int = 0, end: int = 100,
                 age_ms: int = 24 * 3600 * 1000) -> None:
        self.overrides = dict(overrides or {})
        self.start, self.end, self.age_ms = start, end, age_ms
        self.calls: list[tuple[str, Any]] = []

    def changes(self, name: str) -> list[Any]:
        return [args for method, args in self.calls if method == name]

    def describe_topic_configs(self, topic: str) -> list[ConfigValue]:
        values = {**DEFAULTS, **self.overrides}
        return [ConfigValue(k, v, "dynamic topic" if k in self.overrides else "default", k not in self.overrides, False,
                            False) for k, v in sorted(values.items())]

    def alter_topic_configs(self, topic: str, set_values: dict[str, str], delete: list[str], validate_only: bool) -> None:
        self.calls.append(("alter_topic_configs", (dict(set_values), list(delete), validate_only)))

    def list_offsets(self, partitions: Iterable[tuple[str, int]], which: str) -> dict[tuple[str, int], int]:
        return {tp: self.start if which == "earliest" else self.end for tp in partitions}

    def offsets_for_time(self, partitions: Iterable[tuple[str, int]], timestamp_ms: int) -> dict[tuple[str, int], int]:
        """Every record was written `age_ms` ago: a cutoff after that finds none (the end offset)."""
        written = time.time() * 1000 - self.age_ms
        return {tp: self.start if timestamp_ms <= written else self.end for tp in partitions}

    def delete_records(self, topic: str, before: dict[int, int]) -> dict[int, int]:
        self.calls.append(("delete_records", dict(before)))
        return {p: self.end if o == -1 else o for p, o in before.items()}

    def delete_topic(self, topic: str) -> None:
        self.calls.append(("delete_topic", topic))

    def group_state(self, group_id: str) -> tuple[str, int, str]:
        return "Empty", 0, "consumer"

    def alter_group_offsets(self, group_id: str, offsets: dict[tuple[str, int], int]) -> None:
        self.calls.append(("alter_group_offsets", (group_id, dict(offsets))))

    def delete_group(self, group_id: str) -> None:
        self.calls.append(("delete_group", group_id))

    def delete_group_offsets(self, group_id: str, partitions: list[tuple[str, int]]) -> None:
        self.calls.append(("delete_group_offsets", (group_id, list(partitions))))

    def elect_leaders(self, unclean: bool, partitions: list[tuple[str, int]] | None) -> dict[tuple[str, int], str | None]:
        self.calls.append(("elect_leaders", (unclean, partitions)))
        return dict.fromkeys(partitions or [], None)


def replace_gateway(monkeypatch: pytest.MonkeyPatch) -> KafkaDouble:
    """Every cluster's gateway becomes one double (an unknown cluster is still a 404)."""
    double = KafkaDouble()
    monkeypatch.setattr(gateway, "for_cluster", lambda name: (gateway.cluster_config(name), double)[1])
    return double


def add_empty_group(snapshot: Snapshot) -> str:
    """An empty group with a committed offset on orders-0, saved with the snapshot."""
    snapshot.groups = {**snapshot.groups, GROUP: GroupState(GROUP, "Empty", "consumer", "classic", "", [], {"orders:0": 5})}
    snapshot.topic_groups["orders"] = [GROUP]
    snapshot.version += 1
    store.save(snapshot, snapshot.content_bytes())
    return GROUP
