"""Where the watcher's events are kept (registered with console.watcher.registry): the Event table."""

from __future__ import annotations

from typing import Any

from django.db import close_old_connections

from console.watcher.registry import EventRow


class EventTable:
    def save(self, rows: list[EventRow]) -> list[dict[str, Any]]:
        from brokers_app.models import Event

        if not rows:
            return []
        close_old_connections()
        events = [Event(cluster=r.cluster, at=r.at, kind=r.kind, severity=r.severity, message=r.message,
                        topic=r.topic, partition=r.partition, broker=r.broker, details=r.details) for r in rows]
        Event.objects.bulk_create(events, batch_size=500)
        return [e.as_dict() for e in events]
