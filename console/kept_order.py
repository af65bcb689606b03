"""A list's sort order kept across snapshot versions (`KeptOrder`): a new version moves the keys of
the rows it changed, instead of sorting the whole list again."""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

Key = tuple[Any, ...]


class KeptOrder:
    """The keys of a list's rows in ascending order. Each key is a tuple that ends with its row's
    name: names are unique, so no two keys are equal and the descending order is the exact reverse
    (what `sorted(..., reverse=True)` gives). A version that changed few rows takes their keys out
    and puts them back in by bisection; one that changed many drops theirs in one pass and merges
    theirs, sorted, into the rest (two sorted runs, which the sort merges in one pass)."""

    __slots__ = ("_keys", "_of")

    # A move of more than this share of the keys is merged rather than bisected in one at a time.
    BISECT_SHARE = 8

    def __init__(self, keys: Iterable[Key]) -> None:
        self._keys: list[Key] = sorted(keys)
        self._of: dict[Any, Key] = {k[-1]: k for k in self._keys}

    def __len__(self) -> int:
        return len(self._keys)

    def move(self, changed: Mapping[Any, Key], removed: Iterable[Any] = ()) -> None:
        """`changed`: name -> its row's key now (a row made again, or a new one); `removed`: names
        whose rows are gone."""
        of, keys = self._of, self._keys
        out = [of.pop(name) for name in removed if name in of]
        moved = {name: key for name, key in changed.items() if of.get(name) != key}
        out.extend(of[name] for name in moved if name in of)
        if not out and not moved:
            return
        if (len(out) + len(moved)) * self.BISECT_SHARE <= len(keys):
            for key in out:
                del keys[bisect_left(keys, key)]
            for key in moved.values():
                insort(keys, key)
        else:
            gone = {key[-1] for key in out}
            kept = [key for key in keys if key[-1] not in gone] if gone else keys
            kept.extend(sorted(moved.values()))
            kept.sort()
            self._keys = kept
        of.update(moved)

    def names(self, descending: bool = False, start: int = 0, stop: int | None = None) -> list[Any]:
        """The names in order (`descending`: the reverse), from the `start`th to before the `stop`th."""
        keys = self._keys
        if not descending:
            return [key[-1] for key in keys[start:stop]]
        n = len(keys)
        stop = n if stop is None else min(stop, n)
        return [key[-1] for key in reversed(keys[max(0, n - stop):max(0, n - start)])]

    def __iter__(self) -> Iterator[Any]:
        return (key[-1] for key in self._keys)

    def keys(self) -> list[Key]:
        """The keys in ascending order (a copy)."""
        return list(self._keys)
