"""Kafka's rules for topic names and the console's checks of topic forms; pure, no I/O."""

from __future__ import annotations

import re
from collections.abc import Iterable

from console.errors import BadParameter

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


def check_topic_name(name: str, existing: Iterable[str] = ()) -> str:
    """The same rules as Kafka's own Topic.validate, plus its collision check, as sentences."""
    if name == "":
        raise BadParameter("The topic name is empty.")
    if name in {".", ".."}:
        raise BadParameter(f"A topic cannot be named '{name}'.")
    if len(name) > MAX_NAME_LENGTH:
        raise BadParameter(f"The topic name is {len(name)} characters long; Kafka allows at most {MAX_NAME_LENGTH}.")
    if not _LEGAL.fullmatch(name):
        bad = sorted({c for c in name if not _LEGAL.fullmatch(c)})
        shown = ", ".join(repr(c) for c in bad)
        raise BadParameter(f"The topic name contains {shown}; use only ASCII letters, digits, '.', '_' and '-'.")
    existing = set(existing)
    if name in existing:
        raise BadParameter(f"Topic '{name}' already exists.")
    folded = name.replace(".", "_")
    for other in existing:
        if other.replace(".", "_") == folded:
            raise BadParameter(
                f"Topic '{name}' would collide with existing topic '{other}': Kafka treats '.' and '_' alike in metric names."
            )
    return name


def parse_configs(text: str) -> dict[str, str]:
    """`key=value` lines (blank lines and # comments ignored) into a dict."""
    configs: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not key:
            raise BadParameter(f"Config line {number} must look like key=value, not '{line[:80]}'.")
        if key in configs:
            raise BadParameter(f"Config '{key}' is given twice.")
        configs[key] = value.strip()
    return configs


def check_counts(partitions: int, replication_factor: int, live_brokers: int) -> None:
    if partitions < 1:
        raise BadParameter(f"A topic needs at least 1 partition, not {partitions}.")
    if replication_factor < 1:
        raise BadParameter(f"The replication factor must be at least 1, not {replication_factor}.")
    if replication_factor > live_brokers:
        raise BadParameter(
            f"Replication factor {replication_factor} is more than the {live_brokers} live broker"
            f"{'s' if live_brokers != 1 else ''}: each replica needs its own broker."
        )
