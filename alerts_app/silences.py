"""Whether a silence holds an alert back: pure, no database. A silence is active from `starts_at` until
`ends_at` (or until someone ended it early), on its cluster or every one ("*"); it matches an alert
when every matcher does ({"field": "rule"|"condition"|"key"|"severity"|"target", "value", "regex"}:
equal, or a regex searched with console.patterns' time limit). No matchers: every alert of the cluster."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

from console.errors import BadParameter
from console.patterns import compile_checked, limited_search

REGEX_SECONDS = 0.05
FIELDS = ("rule", "condition", "key", "severity", "target")


class SilenceLike(Protocol):
    cluster: str
    matchers: Any
    starts_at: datetime
    ends_at: datetime
    expired_early_by: str


S = TypeVar("S", bound=SilenceLike)


@dataclass(frozen=True)
class Labels:
    """What a silence's matchers look at of an alert (`rule`: the rule's name; its id matches too)."""

    cluster: str
    rule: str
    rule_id: int | None
    condition: str
    key: str
    severity: str
    target: str

    def value(self, name: str) -> list[str]:
        if name == "rule":
            return [self.rule] + ([str(self.rule_id)] if self.rule_id is not None else [])
        return [str(getattr(self, name, ""))]


def active(silence: SilenceLike, now: datetime) -> bool:
    return silence.starts_at <= now < silence.ends_at and not silence.expired_early_by


@functools.lru_cache(maxsize=1024)
def _regex(pattern: str) -> Callable[[str], bool]:
    _, runner = compile_checked(pattern, False, "matcher")
    return limited_search(runner, "matcher", REGEX_SECONDS)


def matcher_holds(matcher: Mapping[str, Any], labels: Labels) -> bool:
    name = matcher.get("field")
    if name not in FIELDS:
        return False
    wanted = str(matcher.get("value", ""))
    values = labels.value(str(name))
    if matcher.get("regex"):
        try:
            search = _regex(wanted)
            return any(search(v) for v in values)
        except BadParameter:  # (an invalid or too slow pattern matches nothing)
            return False
    return wanted in values


def matches(silence: SilenceLike, labels: Labels, now: datetime) -> bool:
    if not active(silence, now) or silence.cluster not in ("*", labels.cluster):
        return False
    matchers = silence.matchers if isinstance(silence.matchers, list) else []
    return all(isinstance(m, Mapping) and matcher_holds(m, labels) for m in matchers)


def silencing(silences: Iterable[S], labels: Labels, now: datetime) -> S | None:
    """The first of `silences` that holds the alert back now, else None."""
    for s in silences:
        if matches(s, labels, now):
            return s
    return None
