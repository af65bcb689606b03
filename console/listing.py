"""What every list page does to its rows: search by name (substring or regex) and cut a page."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from console import patterns
from console.errors import BadParameter
from console.params import bool_param, int_param

SEARCH_BUDGET = 1.0  # seconds for a regex search over a whole list


def search(rows: list[dict[str, Any]], field: str, query: str, regex: bool) -> list[dict[str, Any]]:
    if not query:
        return rows
    if regex:
        _, runner = patterns.compile_checked(query, False, "q")
        # One budget for the whole list (10,000 names), not per name: a slow pattern is a 400, not a hang.
        deadline = time.monotonic() + SEARCH_BUDGET
        found = []
        for r in rows:
            left = deadline - time.monotonic()
            try:
                if left <= 0 or runner.search(r[field], timeout=left) is not None:
                    if left <= 0:
                        raise TimeoutError
                    found.append(r)
            except TimeoutError:
                raise patterns.too_slow("q", SEARCH_BUDGET) from None
        return found
    needle = query.lower()
    return [r for r in rows if needle in r[field].lower()]


def paginate(rows: list[dict[str, Any]], page: int, per_page: int) -> tuple[list[dict[str, Any]], int, int]:
    """(rows of the page, the page actually shown, number of pages); out-of-range pages are clamped."""
    pages = max(1, math.ceil(len(rows) / per_page))
    page = min(max(1, page), pages)
    return rows[(page - 1) * per_page : page * per_page], page, pages


def list_params(params: Mapping[str, str], sorts: Mapping[str, str], default_sort: str) -> dict[str, Any]:
    """The query string of a list page: q, regex, sort, desc, page, per_page."""
    query = params.get("q", "").strip()
    if len(query) > 500:
        raise BadParameter("'q' is too long (at most 500 characters).")
    sort = params.get("sort", default_sort) or default_sort
    if sort not in sorts:
        raise BadParameter(f"'sort' must be one of {', '.join(sorts)}, not '{sort[:50]}'.")
    return {
        "query": query,
        "regex": bool_param(params, "regex"),
        "sort": sort,
        "descending": bool_param(params, "desc"),
        "page": int_param(params, "page", 1, minimum=1),
        "per_page": int_param(params, "per_page", 50, minimum=1, maximum=500),
    }


_ORDERED: dict[tuple[str, str], tuple[list[dict[str, Any]], dict[tuple[Any, ...], list[dict[str, Any]]]]] = {}
ORDERED_CACHE = 64  # filtered and sorted lists kept per list and cluster (one per query, sort and filter)


def ordered(kind: str, cluster: str, rows: list[dict[str, Any]], params: tuple[Any, ...],
            build: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """`build()`'s filtered and sorted list of `rows` (one snapshot version's, the same object while
    that version lasts) for these parameters, built once per process: sorting a large list on every
    request would cost far more than drawing the page of it that is shown. A new version of `rows`
    drops the lists of the old one."""
    held = _ORDERED.get((kind, cluster))
    if held is None or held[0] is not rows or len(held[1]) >= ORDERED_CACHE:
        held = _ORDERED[(kind, cluster)] = (rows, {})
    found = held[1].get(params)
    if found is None:
        found = held[1][params] = build()
    return found


_ROW_HTML: dict[tuple[Any, ...], str] = {}
_ROW_HTML_OF: dict[int, tuple[dict[str, Any], str, str, str]] = {}  # id(row) -> (row, template, cluster, html)
ROW_HTML_CACHE = 20_000  # rendered rows kept per process (a page shows 50; live fragments re-render them)


def rendered_rows(template: str, cluster: str, name: str, rows: list[dict[str, Any]], kept: bool = True) -> list[str]:
    """Each row rendered by `template` (context: `cluster`, and the row as `name`), from a per-process
    cache keyed by the row's content: a row that did not change since it was last shown costs a
    dict lookup instead of the template engine (most of a list page's time)."""
    from django.template.loader import render_to_string

    out = []
    for row in rows:
        # The same row object (rows are built once per snapshot version and never changed): no key to build.
        seen = _ROW_HTML_OF.get(id(row))
        if seen is not None and seen[0] is row and seen[1] == template and seen[2] == cluster:
            out.append(seen[3])
            continue
        key = (template, cluster, _frozen(row))
        html = _ROW_HTML.get(key)
        if html is None:
            if len(_ROW_HTML) >= ROW_HTML_CACHE:
                _ROW_HTML.clear()
            html = _ROW_HTML[key] = render_to_string(template, {"cluster": cluster, name: row})
        if kept:  # (`kept=False`: a row made for this request only, never seen again by identity)
            if len(_ROW_HTML_OF) >= ROW_HTML_CACHE:
                _ROW_HTML_OF.clear()
            _ROW_HTML_OF[id(row)] = (row, template, cluster, html)
        out.append(html)
    return out


def _frozen(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value
