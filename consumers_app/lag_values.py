"""The per-partition lag values a judged group carries (GroupState.lag_status, lag_seconds), kept
compact: a cluster holds one list of each per group, so their size is the groups' size."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from typing import Any, cast

import numpy as np

from consumers_app.lag_windows import STATUS_NAMES

_UNIFORM: dict[tuple[Any, int], list[Any]] = {}


class LagSeconds(array):  # type: ignore[type-arg]
    """A judged group's time lag per partition (GroupState.lag_seconds) when not all 0, in whole
    milliseconds (what the evaluation rounds them to): 4 bytes a partition while every lag is
    under 24 days (8 after), -1 where unknown (None when read, and in its JSON): a cluster whose
    groups fall behind holds one for most of them, and a list of floats costs several times as
    much."""

    __slots__ = ()

    def __new__(cls, seconds: Iterable[float | None]) -> LagSeconds:
        ms = [-1 if s is None or s < 0 else round(s * 1000) for s in seconds]
        return cast(LagSeconds, super().__new__(cls, "i" if not ms or max(ms) <= _MS_MAX else "q", ms))

    def __getitem__(self, i: Any) -> Any:
        found = array.__getitem__(self, i)
        if isinstance(i, slice):
            return [None if v < 0 else v / 1000 for v in found]
        return None if found < 0 else found / 1000

    def __iter__(self) -> Iterator[float | None]:
        return (None if v < 0 else v / 1000 for v in array.__iter__(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (LagSeconds, (list(self),))

    def json_value(self) -> list[float | None]:
        return [None if v < 0 else v / 1000 for v in self.tolist()]


_MS_MAX = int(np.iinfo(np.int32).max)


class LagStatuses(bytes):
    """A judged group's lag status per partition (GroupState.lag_status) when not all OK: a byte a
    partition (its code: lag_windows.STATUS_NAMES), read as the names, and written so in its JSON."""

    __slots__ = ()

    def __new__(cls, codes: Iterable[int]) -> LagStatuses:
        return super().__new__(cls, bytes(codes))

    def __getitem__(self, i: Any) -> Any:  # type: ignore[override]
        found = bytes.__getitem__(self, i)
        return [STATUS_NAMES[c] for c in found] if isinstance(i, slice) else STATUS_NAMES[found]

    def __iter__(self) -> Iterator[str]:  # type: ignore[override]
        return (STATUS_NAMES[c] for c in bytes.__iter__(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (LagStatuses, (bytes(self),))

    def json_value(self) -> list[str]:
        return [STATUS_NAMES[c] for c in bytes.__iter__(self)]


def uniform(value: Any, n: int) -> list[Any]:
    """One list of `n` times `value`, shared by every group whose partitions all have that status or
    time lag (all OK, all 0 s: most groups, which then hold no list of their own). Safe to share:
    a group's lag lists are replaced when it is judged again, never changed in place."""
    found = _UNIFORM.get((value, n))
    if found is None:
        found = _UNIFORM[(value, n)] = [value] * n
        if len(_UNIFORM) > 10_000:  # (as many as there are partition counts: bounded all the same)
            _UNIFORM.clear()
            _UNIFORM[(value, n)] = found
    return found

