"""console.inert: CSV cells a spreadsheet would run, and Kafka names Plotly would render, kept as text."""

from __future__ import annotations

import csv
import io

import pytest

from console.inert import chart_text, csv_cell, csv_writer

FORMULA = '=HYPERLINK("http://x","y")'


@pytest.mark.parametrize("text", [FORMULA, "+1+2", "-2+3", "@SUM(A1)", "\tcmd", "\rcmd"])
def test_a_cell_that_starts_like_a_formula_gets_a_leading_quote(text: str) -> None:
    assert csv_cell(text) == "'" + text


@pytest.mark.parametrize("value", ["orders", "a=b", "", None, 42, -5, 2.5])
def test_plain_text_and_numbers_pass_unchanged(value: object) -> None:
    assert csv_cell(value) == value


def test_the_writer_neutralises_every_text_cell_and_keeps_quoting_correct() -> None:
    buf = io.StringIO()
    writer = csv_writer(buf)
    writer.writerows([["name", "lag"], [FORMULA, -3], ["-x,\"y\"\nz", None]])
    assert list(csv.reader(io.StringIO(buf.getvalue()))) == [["name", "lag"], ["'" + FORMULA, "-3"], ["'-x,\"y\"\nz", ""]]


def test_a_name_for_a_chart_has_its_markup_as_entities() -> None:
    assert chart_text("<b>x</b><img src=x onerror=alert(1)>") == "&lt;b&gt;x&lt;/b&gt;&lt;img src=x onerror=alert(1)&gt;"
    assert chart_text("a&b \"q\" 'q'") == "a&amp;b \"q\" 'q'"
