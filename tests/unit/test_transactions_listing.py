"""The stored listing of transactions (transactions_app/listing.py): hanging, then open, then closed ids;
closed ones kept as JSON lines, counted, filtered and sent without decoding all of them; the console's
own changes put in over an older look."""

from __future__ import annotations

from typing import Any

import orjson

from transactions_app.listing import Listing, amended


def row(tid: str, hanging: bool = False, open_: bool = False) -> dict[str, Any]:
    return {"transactional_id": tid, "state": "Ongoing" if open_ else "CompleteCommit", "producer_id": 5, "producer_epoch": 1,
            "timeout_ms": 60_000, "start_ms": 1_000 if open_ else None, "age_seconds": 3.0 if open_ else None, "coordinator": 2,
            "partitions": [{"topic": "t", "partition": 0}] if open_ else [], "hanging": hanging,
            "hanging_reason": "open too long" if hanging else None, "blocked_groups": []}


def ids(rows: list[dict[str, Any]]) -> list[str]:
    return [r["transactional_id"] for r in rows]


ODD = 'odd "quoted" \\ \n 数据'


def sample() -> Listing:
    return Listing.of([row("c"), row("a"), row("open-b", open_=True), row("h", hanging=True, open_=True), row(ODD)], 100.0, True)


def test_hanging_then_open_then_closed_ids_each_by_id() -> None:
    listing = sample()
    assert ids(listing.rows) == ["h", "open-b"] and listing.closed.count(b"\n") == 2  # (three closed lines)
    assert (listing.total, listing.hanging) == (5, 1)
    assert listing.page("", 100) == (5, [row("h", True, True), row("open-b", open_=True), row("a"), row("c"), row(ODD)])
    assert orjson.loads(listing.json_rows()) == listing.page("", 100)[1]


def test_a_page_decodes_only_what_it_draws_and_a_filter_matches_ids_only() -> None:
    listing = sample()
    assert listing.page("", 3) == (5, [row("h", True, True), row("open-b", open_=True), row("a")])
    assert listing.page("Commit", 10) == (0, [])  # (in a closed line's state, not in its id)
    assert listing.page('"quoted" \\', 10) == (1, [row(ODD)])
    assert listing.page("-", 10) == (1, [row("open-b", open_=True)])
    empty = Listing.of([], 1.0, True)
    assert (empty.total, empty.page("", 10), orjson.loads(empty.json_rows())) == (0, (0, []), [])


def note(at: float, r: dict[str, Any] | None) -> bytes:
    return orjson.dumps({"at": at, "row": r})


def test_a_change_newer_than_the_look_replaces_its_row_and_is_sorted_in() -> None:
    listing = sample()
    after = amended(listing, {b"h": note(101.0, row("h", open_=True)), b"gone": note(101.0, None), b"a": note(101.0, None),
                              ODD.encode(): note(101.0, row(ODD, hanging=True, open_=True))})
    assert ids(after.rows) == [ODD, "h", "open-b"] and after.hanging == 1
    assert after.page("", 10)[1][3:] == [row("c")]  # (a: no longer known; ODD's closed line gone)


def test_a_change_older_than_the_look_is_what_the_look_already_shows() -> None:
    listing = sample()
    assert amended(listing, {b"h": note(99.0, row("h", open_=True))}) is listing
