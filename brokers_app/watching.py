"""Where the watcher's events are kept (registered with console.watcher.registry): the Event table."""

from __future__ import annotations

from typing import Any, cast

from django.db import close_old_connections, connection, transaction
from django.db.models import Field

from console.watcher.registry import EventRow

_COLUMNS = ("cluster", "at", "kind", "severity", "message", "topic", "partition", "broker", "details")
_BATCH = 500


class EventTable:
    def save(self, rows: list[EventRow]) -> list[dict[str, Any]]:
        """Insert the rows and return them as the page's timeline shows them (with their ids).

        One multi-row INSERT ... RETURNING per 500 rows, the values prepared by the fields
        themselves: what bulk_create does without building a model instance per row, whose cost
        would take most of a cycle that brings thousands of events on a large cluster.
        All batches are one transaction: the rows are saved all or none (the publisher saves a refused
        cycle's rows again with the next cycle's, which must not find some saved already), and one
        commit costs less than one per batch."""
        from brokers_app.models import Event

        if not rows:
            return []
        close_old_connections()
        fields = [cast(Field, Event._meta.get_field(name)) for name in _COLUMNS]
        at_field, details_field = fields[1], fields[-1]
        qn = connection.ops.quote_name
        head = f"INSERT INTO {qn(Event._meta.db_table)} ({', '.join(qn(str(f.column)) for f in fields)}) VALUES "
        one = "(" + ", ".join(["%s"] * len(fields)) + ")"
        out: list[dict[str, Any]] = []
        # A cycle's events share one time: prepared once.
        at_db = {at: at_field.get_db_prep_save(at, connection) for at in {r.at for r in rows}}
        at_text = {at: at.isoformat() for at in at_db}
        encoder = cast(Any, details_field).encoder
        adapt_json = connection.ops.adapt_json_value  # (what the field's own preparation comes to)
        with transaction.atomic(), connection.cursor() as cursor:
            for start in range(0, len(rows), _BATCH):
                batch = rows[start:start + _BATCH]
                params: list[Any] = []
                for r in batch:
                    params += (r.cluster, at_db[r.at], r.kind, r.severity, r.message,
                               r.topic, r.partition, r.broker, adapt_json(r.details, encoder))
                cursor.execute(head + ", ".join([one] * len(batch)) + f" RETURNING {qn('id')}", params)
                ids = [row[0] for row in cursor.fetchall()]
                out += [{"id": pk, "cluster": r.cluster, "at": at_text[r.at], "kind": r.kind, "severity": r.severity,
                         "message": r.message, "topic": r.topic, "partition": r.partition, "broker": r.broker,
                         "details": r.details} for pk, r in zip(ids, batch, strict=True)]
        return out
