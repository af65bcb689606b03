"""A group's partition table rows as HTML, written in Python: the group's page and its live fragment
draw them on every view, and the template engine took most of the page's time on them (a dozen
cells a row). The markup is the one the template drew, cell for cell."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

EMPTY = '<tr><td colspan="10" class="empty">No committed offsets or assignments.</td></tr>'


TENTH = Decimal("0.1")
_WIDE = Context(prec=250)  # (exact for every number the filter rounds: 200 digits at most)


def _number(value: int | None) -> str:
    return "–" if value is None else str(value)


def tenths(value: float) -> str:
    """The template's `floatformat:1` of a number: its decimal text rounded half up to one place
    (0.25 is 0.3), a negative zero shown as 0.0, a number of over 200 digits as it is (the filter's
    Django code was most of a row's time)."""
    text = str(value)
    number = Decimal(text)
    _, digits, exponent = number.as_tuple()
    if len(digits) + abs(int(exponent)) > 200:
        return text
    rounded = number.quantize(TENTH, ROUND_HALF_UP, _WIDE)
    return str(rounded) if rounded else "0.0"


def _row(p: Mapping[str, Any]) -> str:
    topic = escape(p["topic"])
    lag, time_lag, status = p["lag"], p["time_lag"], p["status"]
    lag_cell = '<span class="muted">unknown</span>' if lag is None else str(lag)
    lso, readable, blocked_by = p.get("last_stable_offset"), p.get("lag_readable"), p.get("blocked_by")
    readable_cell = '<span class="muted">unknown</span>' if readable is None else str(readable)
    if blocked_by is not None:
        readable_cell += (' <span class="tag sev-tag-warning" title="Stopped at the LSO the open transaction of '
                          f'&#x27;{escape(blocked_by)}&#x27; holds">blocked</span>')
    time_cell = "–" if time_lag is None else f"{tenths(time_lag)} s"
    status_cell = f'<span class="tag status-{escape(status)}">{escape(status)}</span>' if status else ""
    owner = (f'{escape(p["client_id"])} <span class="muted">@ {escape(p["host"])}</span>' if p["client_id"]
             else '<span class="muted">unassigned</span>')
    return (f'\n      <tr data-tp="{topic}-{p["partition"]}">\n'
            f'        <td class="mono">{topic}</td><td class="num mono">{p["partition"]}</td>\n'
            f'        <td class="num mono">{_number(p["committed"])}</td><td class="num mono">{_number(lso)}</td>'
            f'<td class="num mono">{_number(p["end_offset"])}</td>\n'
            f'        <td class="num mono {"text-warn" if lag else ""}">{lag_cell}</td>'
            f'<td class="num mono {"text-warn" if readable else ""}">{readable_cell}</td>\n'
            f'        <td class="num mono">{time_cell}</td>\n'
            f'        <td>{status_cell}</td>\n'
            f'        <td class="small">{owner}</td>\n'
            '      </tr>\n    ')


def partition_rows(rows: Iterable[Mapping[str, Any]]) -> SafeString:
    """The `<tbody>` content of a group's partitions (`group_rows.partition_rows`)."""
    html = "".join(_row(p) for p in rows)
    return mark_safe(html or EMPTY)  # noqa: S308 - every value in it is escaped above
