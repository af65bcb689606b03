"""One websocket per page: the watcher's updates, turned into the page's own fragments.

The consumer never asks Kafka: it re-renders from the snapshot in Redis, which the process
parses once per change, so fifty open tabs cost Kafka nothing.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qsl

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from console import gateway, live
from console.errors import ConsoleError
from console.realtime import cluster_group

log = logging.getLogger(__name__)


class LiveConsumer(AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    cluster: str
    view: str
    params: dict[str, str]

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        self.cluster = self.scope["url_route"]["kwargs"]["cluster"]
        self.params = dict(parse_qsl(self.scope.get("query_string", b"").decode()))
        self.view = self.params.pop("view", "overview")
        try:
            gateway.cluster_config(self.cluster)
            if self.view not in live.VIEWS:
                raise ConsoleError(f"unknown view '{self.view}'")
            events = live.events_view()
            self.filters = events.filters(self.params) if self.view == "events" and events is not None else {}
        except ConsoleError:
            await self.close(code=4404)
            return
        await self.channel_layer.group_add(cluster_group(self.cluster), self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "cluster"):
            await self.channel_layer.group_discard(cluster_group(self.cluster), self.channel_name)

    async def cluster_update(self, message: dict[str, Any]) -> None:
        """Sent by the watcher after every cycle; `changed` says whether the content moved."""
        await self.send_json(
            {
                "type": "status",
                "reachable": message["reachable"],
                "error": message["error"],
                "cause": message.get("cause"),
                "taken_at": message["taken_at"],
                "checked_at": message["checked_at"],
                "version": message["version"],
            }
        )
        if self.view == "events":
            await self._prepend_events(message["events"])
        elif self.view in live.FRAGMENTS and (message["changed"] or (self.view == "overview" and message.get("quorum_changed"))):
            await self._send_fragments(live.FRAGMENTS[self.view])

    async def reassignment_progress(self, message: dict[str, Any]) -> None:
        """Sent by a reassignment job after every step: the job page redraws its progress."""
        await self._on_message("reassignment.progress", message)

    async def analytics_progress(self, message: dict[str, Any]) -> None:
        """Sent by an analytics run at each stage: the analytics page redraws its list of runs."""
        await self._on_message("analytics.progress", message)

    async def events_added(self, message: dict[str, Any]) -> None:
        """Events raised outside the watcher (the balance watch): the events page prepends them."""
        if self.view == "events":
            await self._prepend_events(message["events"])

    async def _on_message(self, message_type: str, message: dict[str, Any]) -> None:
        handler = live.ON_MESSAGE.get(message_type)
        if handler is not None and self.view == handler.view and handler.wants(self.params, message):
            await self._send_fragments(handler.fragment)

    async def _prepend_events(self, events: list[dict[str, Any]]) -> None:
        view = live.events_view()
        if view is None:
            return
        matching = [e for e in events if view.matches(e, **self.filters)]
        if matching:
            html = await sync_to_async(view.rows)(matching)
            await self.send_json({"type": "prepend", "target": "event-rows", "html": html, "count": len(matching)})

    async def _send_fragments(self, fragment: live.Fragment) -> None:
        try:
            fragments = await sync_to_async(lambda: fragment(live.live_state(self.cluster), self.params))()
        except ConsoleError as exc:
            await self.send_json({"type": "notice", "message": exc.message})
            return
        for target, html in fragments.items():
            await self.send_json({"type": "fragment", "target": target, "html": html})
