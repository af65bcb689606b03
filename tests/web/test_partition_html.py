"""A group's partition rows written in Python (consumers_app/partition_html.py) draw what the
template drew: every name escaped, unknown lag and unassigned partitions marked, time lag rounded
as the template's floatformat rounds."""

from __future__ import annotations

import random
from typing import Any

from django.template import engines
from django.template.defaultfilters import floatformat

from consumers_app import partition_html

# The template's loop the rows replaced, as the oracle.
LOOP = """{% for p in group.partitions %}
      <tr data-tp="{{ p.topic }}-{{ p.partition }}">
        <td class="mono">{{ p.topic }}</td><td class="num mono">{{ p.partition }}</td>
        <td class="num mono">{{ p.committed|default_if_none:"–" }}</td><td class="num mono">{{ p.last_stable_offset|default_if_none:"–" }}</td><td class="num mono">{{ p.end_offset|default_if_none:"–" }}</td>
        <td class="num mono {% if p.lag %}text-warn{% endif %}">{% if p.lag is None %}<span class="muted">unknown</span>{% else %}{{ p.lag }}{% endif %}</td><td class="num mono {% if p.lag_readable %}text-warn{% endif %}">{% if p.lag_readable is None %}<span class="muted">unknown</span>{% else %}{{ p.lag_readable }}{% endif %}{% if p.blocked_by is not None %} <span class="tag sev-tag-warning" title="Stopped at the LSO the open transaction of &#x27;{{ p.blocked_by }}&#x27; holds">blocked</span>{% endif %}</td>
        <td class="num mono">{% if p.time_lag is not None %}{{ p.time_lag|floatformat:1 }} s{% else %}–{% endif %}</td>
        <td>{% if p.status %}<span class="tag status-{{ p.status }}">{{ p.status }}</span>{% endif %}</td>
        <td class="small">{% if p.client_id %}{{ p.client_id }} <span class="muted">@ {{ p.host }}</span>{% else %}<span class="muted">unassigned</span>{% endif %}</td>
      </tr>
    {% empty %}<tr><td colspan="10" class="empty">No committed offsets or assignments.</td></tr>{% endfor %}"""


def _row(**values: Any) -> dict[str, Any]:
    row = {"topic": "t", "partition": 0, "committed": 5, "end_offset": 9, "last_stable_offset": 9, "lag": 4, "lag_readable": 4,
           "blocked_by": None, "time_lag": 1.0, "status": "ok", "member_id": "m", "client_id": "c", "host": "/h"}
    return {**row, **values}


ROWS = [
    _row(topic="a<b>&'\"", committed=None, end_offset=None, lag=None, time_lag=None, status=None, client_id=None, host=None),
    _row(partition=3, committed=0, end_offset=0, lag=0, time_lag=0.25, client_id="c<1>", host="/h&"),
    _row(partition=12345678, committed=12345678901, lag=-1, time_lag=1.05, status="stalled<x>", client_id=""),
    _row(time_lag=12345.678, status="", host=None),
    _row(time_lag=-0.04),
    _row(time_lag=3),
    _row(committed=5, last_stable_offset=5, lag_readable=0, blocked_by="txn/<b>'\"", lag=4),
    _row(last_stable_offset=None, lag_readable=None),
]


def test_partition_rows_draw_what_the_template_drew() -> None:
    template = engines["django"].from_string(LOOP)
    for rows in ([], ROWS, ROWS[:1], ROWS[1:]):
        assert str(partition_html.partition_rows(rows)) == template.render({"group": {"partitions": rows}})


def test_partition_rows_escape_names_and_mark_what_is_unknown() -> None:
    html = str(partition_html.partition_rows(ROWS[:2]))

    assert "a&lt;b&gt;&amp;&#x27;&quot;" in html and "<b>" not in html and "c&lt;1&gt;" in html
    assert '<span class="muted">unknown</span>' in html and '<span class="muted">unassigned</span>' in html
    assert "0.3 s" in html  # (rounded half up, as floatformat rounds)


def test_time_lags_are_rounded_as_the_templates_floatformat_rounds() -> None:
    rng = random.Random(54)
    values = [0.05, 0.15, 0.25, -0.05, -0.04, 2.675, 1.005, 0, 3, -0.0, 1e16, 1e30, 1e-9, 5e-324, 1e250, 123456789.95]
    values += [rng.uniform(-100, 1000) for _ in range(3000)] + [rng.randrange(10**6) / 100 for _ in range(3000)]
    for value in values:
        assert partition_html.tenths(value) == str(floatformat(value, 1)), value
