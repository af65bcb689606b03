"""console.listing.ordered: a list page's filtered and sorted rows, built once per snapshot version
and parameters in each process."""

from __future__ import annotations

from typing import Any

from console import listing


def test_the_same_rows_and_parameters_are_built_once_and_a_new_version_builds_again() -> None:
    built: list[tuple[Any, ...]] = []

    def builder(rows: list[dict[str, Any]], params: tuple[Any, ...]) -> Any:
        def build() -> list[dict[str, Any]]:
            built.append(params)
            return sorted(rows, key=lambda r: r["n"], reverse=params[0])
        return build

    v1 = [{"n": 2}, {"n": 1}, {"n": 3}]
    first = listing.ordered("t", "c", v1, (False,), builder(v1, (False,)))
    assert [r["n"] for r in first] == [1, 2, 3]
    assert listing.ordered("t", "c", v1, (False,), builder(v1, (False,))) is first
    assert [r["n"] for r in listing.ordered("t", "c", v1, (True,), builder(v1, (True,)))] == [3, 2, 1]
    assert len(built) == 2
    # Another cluster's list is kept apart.
    assert listing.ordered("t", "other", v1, (False,), builder(v1, (False,))) is not first
    # A new version (a new rows object, even equal) is sorted anew.
    v2 = [dict(r) for r in v1] + [{"n": 0}]
    assert [r["n"] for r in listing.ordered("t", "c", v2, (False,), builder(v2, (False,)))] == [0, 1, 2, 3]
    assert len(built) == 4


def test_the_lists_kept_are_bounded() -> None:
    rows = [{"n": i} for i in range(3)]
    for i in range(listing.ORDERED_CACHE * 3):
        listing.ordered("b", "c", rows, (i,), lambda: list(rows))
    assert len(listing._ORDERED[("b", "c")][1]) <= listing.ORDERED_CACHE
