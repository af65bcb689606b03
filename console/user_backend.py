"""Local accounts' sign-in (Django's ModelBackend), with the signed-in user read on every request
in one prepared SQL statement.

Every page, API call and socket opening reads its user: through the ORM, building the query took
longer than the database took to answer it. The row is still read on every request, so a user
deactivated or removed on any web process is refused on the next request everywhere.
"""

from __future__ import annotations

import functools
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend as DjangoModelBackend
from django.core.exceptions import ValidationError
from django.db import connection

__all__ = ["ModelBackend"]


@functools.cache
def _select_sql() -> str:
    meta = get_user_model()._meta
    qn = connection.ops.quote_name
    columns = ", ".join(qn(str(f.column)) for f in meta.concrete_fields)
    return f"SELECT {columns} FROM {qn(meta.db_table)} WHERE {qn(str(meta.pk.column))} = %s"  # type: ignore[union-attr]  # noqa: S608 - names from the model


class ModelBackend(DjangoModelBackend):
    def get_user(self, user_id: Any) -> Any:
        model = get_user_model()
        try:
            pk = model._meta.pk.to_python(user_id)  # type: ignore[union-attr]
        except ValidationError:
            return None
        found = list(model._default_manager.raw(_select_sql(), [pk]))
        if not found:
            return None
        return found[0] if self.user_can_authenticate(found[0]) else None
