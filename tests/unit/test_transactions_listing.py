"""The stored listing of transactions (transactions_app/listing.py): closed ids kept as five values and
made whole only when drawn, and the console's own changes put in over an older look."""

from __future__ import annotations

from typing import Any

import orjson

from transactions_app.listing import Listing, amended, compact, entry_id, expand


def row(tid: str, hanging: bool = False, open_: bool = False) -> dict[str, Any]:
    return {"transactional_id": tid, "state": "Ongoing" if open_ else "CompleteCommit", "producer_id": 5, "producer_epoch": 1,
            "timeout_ms": 60_000, "start_ms": 1_000 if open_ else None, "age_seconds": 3.0 if open_ else None, "coordinator": 2,
            "partitions": [{"topic": "t", "partition": 0}] if open_ else [], "hanging": hanging,
            "hanging_reason": "open too long" if hanging else None, "blocked_groups": []}


def test_a_closed_id_is_kept_as_five_values_and_comes_back_whole() -> None:
    kept = compact(row("a"))
    assert kept == ["a", "CompleteCommit", 5, 1, 60_000]
    assert expand(kept) == {**row("a"), "coordinator": None}  # (the coordinator of a closed id is not kept)
    assert compact(row("b", open_=True)) == row("b", open_=True) and entry_id(compact(row("b", open_=True))) == "b"


def test_the_listing_counts_hanging_ids_and_filters_by_id() -> None:
    listing = Listing.of([row("h", hanging=True, open_=True), row("app-1"), row("app-2", open_=True)], 100.0, True)
    assert listing.hanging == 1 and [entry_id(e) for e in listing.matching("app")] == ["app-1", "app-2"]
    assert listing.matching("") is listing.entries and [r["transactional_id"] for r in listing.rows()] == ["h", "app-1", "app-2"]


def note(at: float, r: dict[str, Any] | None) -> bytes:
    return orjson.dumps({"at": at, "row": r})


def test_a_change_newer_than_the_look_replaces_its_row_and_is_sorted_in() -> None:
    listing = Listing.of([row("h", hanging=True, open_=True), row("k", hanging=True, open_=True), row("a")], 100.0, True)
    after = amended(listing, {b"h": note(101.0, row("h", open_=True)), b"gone": note(101.0, None), b"a": note(101.0, None)})
    assert [entry_id(e) for e in after.entries] == ["k", "h"] and after.hanging == 1  # (a: no longer known)


def test_a_change_older_than_the_look_is_what_the_look_already_shows() -> None:
    listing = Listing.of([row("h", hanging=True, open_=True)], 100.0, True)
    assert amended(listing, {b"h": note(99.0, row("h", open_=True))}) is listing
