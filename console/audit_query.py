"""Reading the audit log: filters, search and pages, shared by the audit page and `GET /api/v1/audit/`.

Query parameters: `user` (exact user name), `action`, `outcome` (ok, refused, failed), `cluster`,
`since` and `until` (ISO 8601 date or time, UTC unless it names its zone), `q` (text in the target
or the details), `page` and `per_page`. A value the console cannot use is a BadParameter (400) that
names the parameter.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, time
from typing import Any

from django.db.models import Q, QuerySet
from django.utils.dateparse import parse_date, parse_datetime

from console.errors import BadParameter
from console.models import AuditEntry
from console.params import int_param

OUTCOMES = ("ok", "refused", "failed")
PER_PAGE = 50
MAX_PER_PAGE = 500
_NAME = re.compile(r"^[\w.@+\-:~]{1,150}$")  # user names, actions and cluster names as the console makes them
_TEXT_LIMIT = 200


@dataclass
class AuditQuery:
    user: str = ""
    action: str = ""
    outcome: str = ""
    cluster: str = ""
    since: datetime | None = None
    until: datetime | None = None
    q: str = ""
    page: int = 1
    per_page: int = PER_PAGE

    def filters(self) -> dict[str, str]:
        """The filters as query parameters (for links to other pages), empty ones left out."""
        values = {"user": self.user, "action": self.action, "outcome": self.outcome, "cluster": self.cluster,
                  "since": self.since.isoformat() if self.since else "", "until": self.until.isoformat() if self.until else "",
                  "q": self.q}
        if self.per_page != PER_PAGE:
            values["per_page"] = str(self.per_page)
        return {k: v for k, v in values.items() if v}


@dataclass
class AuditPage:
    entries: list[AuditEntry]
    total: int
    page: int
    pages: int
    query: AuditQuery


def parse(params: Mapping[str, str]) -> AuditQuery:
    query = AuditQuery(
        user=_name(params, "user"),
        action=_name(params, "action"),
        outcome=_outcome(params),
        cluster=_name(params, "cluster"),
        since=_when(params, "since", end_of_day=False),
        until=_when(params, "until", end_of_day=True),
        q=_text(params, "q"),
        page=int_param(params, "page", 1, minimum=1) or 1,
        per_page=int_param(params, "per_page", PER_PAGE, minimum=1, maximum=MAX_PER_PAGE) or PER_PAGE,
    )
    if query.since and query.until and query.since > query.until:
        raise BadParameter("'since' must not be later than 'until'.")
    return query


def search(query: AuditQuery) -> AuditPage:
    rows = _filtered(query)
    total = rows.count()
    pages = max(1, math.ceil(total / query.per_page))
    page = min(query.page, pages)  # past the end: the last page, as the other list pages do
    start = (page - 1) * query.per_page
    return AuditPage(list(rows[start : start + query.per_page]), total, page, pages, query)


def known_actions() -> list[str]:
    return sorted(AuditEntry.objects.values_list("action", flat=True).distinct())


def as_dict(entry: AuditEntry) -> dict[str, Any]:
    return {"id": entry.id, "at": entry.at.isoformat(), "user": entry.username, "cluster": entry.cluster,
            "action": entry.action, "target": entry.target, "details": entry.details, "outcome": entry.outcome,
            "client_ip": entry.client_ip, "user_agent": entry.user_agent}


def _filtered(query: AuditQuery) -> QuerySet[AuditEntry]:
    rows = AuditEntry.objects.all()
    if query.user:
        rows = rows.filter(username=query.user)
    if query.action:
        rows = rows.filter(action=query.action)
    if query.outcome:
        rows = rows.filter(outcome=query.outcome)
    if query.cluster:
        rows = rows.filter(cluster=query.cluster)
    if query.since:
        rows = rows.filter(at__gte=query.since)
    if query.until:
        rows = rows.filter(at__lte=query.until)
    if query.q:
        rows = rows.filter(Q(target__icontains=query.q) | Q(details__icontains=query.q))
    return rows


def _name(params: Mapping[str, str], name: str) -> str:
    raw = params.get(name, "").strip()
    if raw and not _NAME.fullmatch(raw):
        raise BadParameter(f"'{name}' must be a name of at most 150 letters, digits or . _ - @ + : ~, not '{raw[:50]}'.")
    return raw


def _outcome(params: Mapping[str, str]) -> str:
    raw = params.get("outcome", "").strip()
    if raw and raw not in OUTCOMES:
        raise BadParameter(f"'outcome' must be one of {', '.join(OUTCOMES)}, not '{raw[:50]}'.")
    return raw


def _text(params: Mapping[str, str], name: str) -> str:
    raw = params.get(name, "").strip()
    if len(raw) > _TEXT_LIMIT:
        raise BadParameter(f"'{name}' is too long (at most {_TEXT_LIMIT} characters).")
    return raw


def _when(params: Mapping[str, str], name: str, *, end_of_day: bool) -> datetime | None:
    """An ISO 8601 time (UTC unless it says otherwise) or a date: `until` a date means to its end."""
    raw = params.get(name, "").strip()
    if not raw:
        return None
    moment: datetime | None
    try:
        # (a date first: Python reads "2026-01-31" as a time too, its midnight)
        day = parse_date(raw) if len(raw) == 10 else None
        if day is not None:
            moment = datetime.combine(day, time.max if end_of_day else time.min)
        else:
            moment = parse_datetime(raw.replace(" ", "T"))
    except ValueError:
        moment = None
    if moment is None:
        raise BadParameter(f"'{name}' must be a date or time such as 2026-01-31 or 2026-01-31T14:00:00Z, not '{raw[:50]}'.")
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
