"""Names and payloads from Kafka made inert where the reader of a file or chart would run them.

Anyone who can produce a record or start a consumer chooses the text: a group id `=HYPERLINK(...)` becomes a
live formula when a CSV is opened in a spreadsheet, and `<a href=...>` becomes a link in a Plotly legend.
Every CSV the console writes goes through `csv_writer`, and every Kafka name put into figure text through
`chart_text`, so neither depends on each caller remembering.
"""

from __future__ import annotations

import csv
import html
from collections.abc import Iterable
from typing import Any, Protocol

# OWASP's list of the characters that make a spreadsheet read a cell as a formula (or split it into one).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


class _Writable(Protocol):
    def write(self, text: str, /) -> Any: ...


def csv_cell(value: Any) -> Any:
    """A text cell that a spreadsheet would run is prefixed with a single quote; numbers and None pass as they are."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


class CsvWriter:
    """csv.writer whose rows have every text cell neutralised (see csv_cell)."""

    def __init__(self, stream: _Writable) -> None:
        self._writer = csv.writer(stream)

    def writerow(self, row: Iterable[Any]) -> None:
        self._writer.writerow([csv_cell(value) for value in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


def csv_writer(stream: _Writable) -> CsvWriter:
    """The one way the console writes CSV: a writer that neutralises formulas in every text cell."""
    return CsvWriter(stream)


def chart_text(name: str) -> str:
    """A Kafka name as Plotly text: Plotly renders a subset of HTML in legends, hover labels, axes and annotations,
    and decodes entities, so `<`, `>` and `&` as entities show the name exactly as it is and never as markup."""
    return html.escape(name, quote=False)
