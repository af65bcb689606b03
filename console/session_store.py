"""Django's database sessions, read on every request in one prepared SQL statement.

Every page, API call and socket opening reads its session: through the ORM, building the query took
several times longer than the database took to answer it. The row is still read from the database
on every request (a logout or an expiry on any web process counts on the next request everywhere);
only the statement is written once, and a session's stored text, once its signature is checked, is
decoded once per process (the same text always decodes to the same data).
"""

from __future__ import annotations

import copy
import functools
from collections import OrderedDict
from typing import Any, cast

from django.contrib.sessions.backends import db
from django.contrib.sessions.models import Session
from django.db import connection
from django.db.models import Field
from django.utils import timezone

__all__ = ["SessionStore"]

DECODED_KEPT = 4096  # decoded session texts kept per process (one per signed-in browser)
_decoded: OrderedDict[str, dict[str, Any]] = OrderedDict()


@functools.cache
def _select_sql() -> str:
    qn = connection.ops.quote_name
    meta = Session._meta
    column = {name: qn(str(cast(Field, meta.get_field(name)).column)) for name in ("session_key", "session_data", "expire_date")}
    return (f"SELECT {column['session_data']} FROM {qn(meta.db_table)} "  # noqa: S608 - names from the model
            f"WHERE {column['session_key']} = %s AND {column['expire_date']} > %s")


class _Row:
    __slots__ = ("session_data",)

    def __init__(self, session_data: str) -> None:
        self.session_data = session_data


class SessionStore(db.SessionStore):
    def _get_session_from_db(self) -> Any:
        key = self.session_key
        if not key:  # (no cookie, or one Django refused as malformed)
            self._session_key = None
            return None
        expire_date = cast(Field, Session._meta.get_field("expire_date"))
        with connection.cursor() as cursor:
            cursor.execute(_select_sql(), [key, expire_date.get_db_prep_value(timezone.now(), connection)])
            row = cursor.fetchone()
        if row is None:
            self._session_key = None
            return None
        return _Row(row[0])

    def decode(self, session_data: bytes | str) -> dict[str, Any]:
        if not isinstance(session_data, str):
            return super().decode(session_data)
        known = _decoded.get(session_data)
        if known is None:
            known = super().decode(session_data)
            if not known:  # (a text that failed its signature check decodes to nothing: never kept)
                return known
            _decoded[session_data] = known
            if len(_decoded) > DECODED_KEPT:
                _decoded.popitem(last=False)
        # A copy: the request changes its session, never the kept decoding.
        return copy.deepcopy(known)
