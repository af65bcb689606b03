"""Config changes that delete records a topic holds now: they are deletes, so they need the delete role.

An operator may tune a topic, but lowering its retention or changing how it is cleaned can remove
records as surely as a purge or a topic delete. The rule, per key:

- `retention.ms` set to a finite value below the current one when some partition holds a record older
  than that (Kafka's offset for the cutoff time lies past the partition's start), or below one minute
  whatever the topic holds (every record written would be gone within the minute);
- `retention.bytes` set to a finite value below the current one when some partition's log is larger
  (a size the watcher has not measured yet counts as larger), or below 1 MiB whatever the topic holds;
- `cleanup.policy` gaining `delete` (retention starts removing whole records of a topic that kept each
  key's latest value) or gaining `compact` (compaction removes every older value of a key); dropping
  one of two policies deletes nothing more than before;
- removing the topic's override of any of these three keys: the value then comes from the broker,
  which the topic's own description does not show, so the console cannot tell it keeps the data.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from console.gateway.types import ConfigValue

DELETING_KEYS = ("retention.ms", "retention.bytes", "cleanup.policy")
TINY_RETENTION_MS = 60_000
TINY_RETENTION_BYTES = 1 << 20


def _limit(value: str | None) -> float | None:
    """A retention limit as a number (-1: none, so infinite); None when it is not a whole number
    (Kafka refuses such a value itself, with its own sentence)."""
    try:
        number = int(str(value).strip())
    except ValueError:
        return None
    return math.inf if number < 0 else float(number)


def _policies(value: str | None) -> set[str]:
    return {p.strip() for p in (value or "").split(",") if p.strip()}


def deleting_changes(current: list[ConfigValue], set_values: Mapping[str, str], delete: list[str], *,
                     holds_older_than: Callable[[int], bool], holds_more_than: Callable[[int], bool]) -> list[str]:
    """One sentence per change that deletes records the topic holds now (empty: none does).

    `holds_older_than(ms)`: some partition holds a record older than `ms` milliseconds;
    `holds_more_than(n)`: some partition's log is larger than `n` bytes."""
    by_name = {c.name: c for c in current}
    reasons = []
    for key in DELETING_KEYS:
        old = by_name.get(key)
        if key in delete and old is not None and old.overridden:
            reasons.append(f"removing the override {key}={old.value} returns it to the broker's value, which may keep less")
        if key not in set_values:
            continue
        new_value = set_values[key]
        if key == "cleanup.policy":
            gained = sorted(_policies(new_value) - _policies(old.value if old else None))
            if gained:
                reasons.append(f"cleanup.policy={new_value} adds {' and '.join(gained)}, which removes records the topic keeps now")
            continue
        new, before = _limit(new_value), _limit(old.value if old else None)
        if new is None or new == math.inf or (before is not None and new >= before):
            continue
        unit = "ms" if key == "retention.ms" else "bytes"
        tiny = TINY_RETENTION_MS if key == "retention.ms" else TINY_RETENTION_BYTES
        if new < tiny:
            reasons.append(f"{key}={new_value} is below {tiny} {unit}: records would be gone almost as soon as written")
        elif (holds_older_than if key == "retention.ms" else holds_more_than)(int(new)):
            held = "records older than that" if key == "retention.ms" else "a partition larger than that"
            reasons.append(f"{key}={new_value} is lower than the current {old.value if old else 'value'} and the topic holds {held}")
    return reasons
